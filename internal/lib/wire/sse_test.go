package wire

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// events reads a stream fed in the given chunks, End included.
func events(chunks ...string) []string {
	var out []string
	var s SSE
	emit := func(e Event) { out = append(out, fmt.Sprintf("%s|%s", e.Name, e.Data)) }
	for _, c := range chunks {
		s.Feed([]byte(c), emit)
	}
	s.End(emit)
	return out
}

func TestSSE(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream string
		want   []string
	}{
		{"lf", "event: a\ndata: {\"x\":1}\n\ndata: 2\n\n", []string{`a|{"x":1}`, `|2`}},
		{"crlf", "event: a\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n", []string{"a|1", "|2"}},
		{"cr", "event: a\rdata: 1\r\rdata: 2\r\r", []string{"a|1", "|2"}},
		{"comments and unknown fields", ": ping\nid: 7\nretry: 10\nfoo: bar\ndata: 1\n\n:\n\n", []string{"|1"}},
		{"multi-line data", "data: a\ndata:b\ndata:  c\ndata\n\n", []string{"|a\nb\n c\n"}},
		{"no space after colon", "data:{}\n\n", []string{"|{}"}},
		{"event without data", "event: ping\n\ndata: x\n\n", []string{"|x"}},
		{"name reset after dispatch", "event: a\ndata: 1\n\ndata: 2\n\n", []string{"a|1", "|2"}},
		{"empty data line", "data:\n\n", []string{"|"}},
		{"byte order mark", "\xef\xbb\xbfdata: 1\n\n", []string{"|1"}},
		{"unterminated last event", "data: 1\n\ndata: 2\n", []string{"|1", "|2"}},
		{"unterminated last line", "data: 1\n\ndata: 2", []string{"|1", "|2"}},
		{"blank lines only", "\n\n\r\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := strings.Join(tc.want, ";")
			if got := strings.Join(events(tc.stream), ";"); got != want {
				t.Fatalf("whole: got %q, want %q", got, want)
			}
			// Every split into two and three chunks gives the same events.
			for i := 0; i <= len(tc.stream); i++ {
				if got := strings.Join(events(tc.stream[:i], tc.stream[i:]), ";"); got != want {
					t.Fatalf("split at %d: got %q, want %q", i, got, want)
				}
				for j := i; j <= len(tc.stream); j++ {
					if got := strings.Join(events(tc.stream[:i], tc.stream[i:j], tc.stream[j:]), ";"); got != want {
						t.Fatalf("split at %d, %d: got %q, want %q", i, j, got, want)
					}
				}
			}
		})
	}
}

// TestSSEBytewise: a stream fed a byte at a time reads as fed whole.
func TestSSEBytewise(t *testing.T) {
	s := "event: message_start\r\ndata: {\"a\":1}\r\n\r\n: c\r\ndata: x\rdata: y\n\n"
	var chunks []string
	for i := range len(s) {
		chunks = append(chunks, s[i:i+1])
	}
	if got, want := events(chunks...), events(s); strings.Join(got, ";") != strings.Join(want, ";") || len(want) != 2 {
		t.Fatalf("bytewise %q, whole %q", got, want)
	}
}

// TestSSETooLarge: an event over MaxEventSize is passed over, the next one
// read.
func TestSSETooLarge(t *testing.T) {
	big := bytes.Repeat([]byte("x"), MaxEventSize/2+1)
	for _, chunks := range [][]string{
		{"data: " + string(big) + "\ndata: " + string(big) + "\n\ndata: next\n\n"},
		{"data: " + string(big) + string(big), string(big) + "\n\ndata: next\n\n"},
	} {
		if got := events(chunks...); len(got) != 1 || got[0] != "|next" {
			t.Errorf("got %d events (%.20q), want only the next one", len(got), got)
		}
	}
}
