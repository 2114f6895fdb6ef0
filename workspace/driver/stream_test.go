package driver

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestMeasureStreamIsMeasure holds MeasureStream to Measure on random
// contents (multi-byte, cut and invalid sequences, newlines) written in
// random pieces, single bytes included: a rune cut between two writes is
// counted as the whole content counts it.
func TestMeasureStreamIsMeasure(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	parts := []string{"a", "\n", "é", "日本", "😀", "\xff", "\xe6\x97", "\x97", "\xf0\x9f", "\xf0\x9f\x98", "\xc3", "{\"k\":1}", "\r\n", "\u2028"}
	info := Info{ID: "x", Type: TypeJSON, Created: time.Date(2026, 12, 2, 1, 0, 0, 0, time.FixedZone("x", 3600)), Metadata: Metadata{"k": "v"}}
	for i := range 20000 {
		var b strings.Builder
		for range rng.IntN(16) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		content := b.String()
		want := Measure(Artifact{Info: info, Content: content}).Info
		got, err := MeasureStream(info, func(w io.Writer) error {
			for rest := content; rest != ""; {
				n := min(len(rest), 1+rng.IntN(5))
				if _, err := io.WriteString(w, rest[:n]); err != nil {
					return err
				}
				rest = rest[n:]
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got.Chars != want.Chars || got.Lines != want.Lines || got.Bytes != want.Bytes || got.SHA256 != want.SHA256 ||
			got.Type != want.Type || !got.Created.Equal(want.Created) || got.Created.Location() != time.UTC || got.Metadata["k"] != "v" {
			t.Fatalf("case %d, %q: measured %+v, want %+v", i, content, got, want)
		}
	}
}

// TestCheckedStream: a Stream that writes other bytes than it was
// measured on fails once written, with ErrStreamChanged; one that writes
// them passes them through; Materialize makes the content whole.
func TestCheckedStream(t *testing.T) {
	calls := 0
	write := func(w io.Writer) error {
		calls++
		_, err := io.WriteString(w, strings.Repeat("line\n", calls))
		return err
	}
	info, err := MeasureStream(Info{ID: "a"}, write) // calls = 1
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := CheckedStream(Stream{Info: info, Write: write}).Write(&buf); !errors.Is(err, ErrStreamChanged) {
		t.Errorf("a changed stream: %v", err)
	}
	same := func(w io.Writer) error { _, err := io.WriteString(w, "line\n"); return err }
	a, err := Materialize(Stream{Info: info, Write: same})
	if err != nil || a.Content != "line\n" || a.ID != "a" || a.Lines != 1 {
		t.Errorf("Materialize = %+v, %v", a, err)
	}
	boom := errors.New("boom")
	if _, err := Materialize(Stream{Info: info, Write: func(io.Writer) error { return boom }}); !errors.Is(err, boom) {
		t.Errorf("a failing stream: %v", err)
	}
}

// TestMeasurerCopiesNothing: measuring content that is not ASCII copies
// none of it (utf8.RuneCount copies from the first non-ASCII byte: 14 MB
// for a 10 MB archive of a coding agent's turns; issue 24 item 7).
func TestMeasurerCopiesNothing(t *testing.T) {
	var m measurer
	m.reset()
	p := []byte(strings.Repeat("wörld ✓ 日本\n", 1000))
	if n := testing.AllocsPerRun(100, func() { m.Write(p) }); n > 0 {
		t.Errorf("measuring %d bytes allocates %.0f times", len(p), n)
	}
}
