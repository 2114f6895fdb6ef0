package compact

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestScanTerms(t *testing.T) {
	tests := []struct {
		in            string
		paths, idents []string
	}{
		{"Edit /home/u/p/main.go:12:4 and ./cmd/x.go, then ../a/b.", []string{"/home/u/p/main.go", "./cmd/x.go", "../a/b"}, nil},
		{"see lib/spotter/session.ex and README.md; go.sum", []string{"lib/spotter/session.ex", "README.md", "go.sum"}, nil},
		{"https://example.com/a/b.go is a URL, and/or is prose, 1/2 too", nil, nil},
		{"</output> <returncode>1</returncode> /tmp", []string{"/tmp"}, nil},
		{"sync_session_by_id handleInfo SessionLive HTTPServer __init__", nil, []string{"sync_session_by_id", "handleInfo", "SessionLive", "HTTPServer", "__init__"}},
		{"os.path.join Spotter.Transcripts crate::foo::bar", nil, []string{"os.path.join", "Spotter.Transcripts", "crate::foo::bar"}},
		{"bead spotter-a0y.4 and ABC-123 but not pre-commit or v1.2.3 or e.g. this", nil, []string{"spotter-a0y.4", "ABC-123"}},
		{"call parse_args() and render(x) but not make(x) or print(y)", nil, []string{"parse_args", "render"}},
		{"The Quick brown FOX README t.Sum", nil, nil},
	}
	for _, tc := range tests {
		var paths, idents []string
		scanTerms(tc.in, func(term string, kind int) {
			if kind == termPath {
				paths = append(paths, term)
			} else {
				idents = append(idents, term)
			}
		})
		if !slices.Equal(paths, tc.paths) || !slices.Equal(idents, tc.idents) {
			t.Errorf("scanTerms(%q):\n paths %q, want %q\n idents %q, want %q", tc.in, paths, tc.paths, idents, tc.idents)
		}
	}
}

func TestCommandHead(t *testing.T) {
	for in, want := range map[string]string{
		"go test ./...":                  "go test",
		"cd /repo && npm run build":      "npm run",
		"python -c 'x'":                  "",
		"ls src":                         "ls src",
		"make":                           "",
		"cd /testbed && sed -n '1,2p' a": "",
	} {
		if got := commandHead(in); got != want {
			t.Errorf("commandHead(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestInputStrings(t *testing.T) {
	var got []string
	inputStrings([]byte(`{"command":"ls -la","n":3,"nested":{"k":"a\nb"},"list":["x","y"]}`), nil, func(s string) { got = append(got, strings.Clone(s)) })
	if want := []string{"ls -la", "a\nb", "x", "y"}; !slices.Equal(got, want) {
		t.Errorf("inputStrings = %q, want %q", got, want)
	}
	got = nil
	inputStrings([]byte(`not json`), nil, func(s string) { got = append(got, strings.Clone(s)) })
	if !slices.Equal(got, []string{"not json"}) {
		t.Errorf("inputStrings of text = %q", got)
	}
}

func TestSplitShell(t *testing.T) {
	got := splitShell("cd a && make || echo x; ls | wc -l\ncat b & sleep 1")
	want := []string{"cd a ", " make ", " echo x", " ls ", " wc -l", "cat b & sleep 1"}
	if !slices.Equal(got, want) {
		t.Errorf("splitShell = %q, want %q", got, want)
	}
}

// TestLowerBufFindsWhatToLowerFinds: every word the summary looks for is
// found in lowerBuf's form of a string exactly where strings.ToLower's
// form has it, on random strings of words in every case and of letters
// whose lower case changes their length or is ASCII; and lowering reuses
// its buffer (a string per sentence of a long history made 13 MB of
// garbage; issue 24 item 7).
func TestLowerBufFindsWhatToLowerFinds(t *testing.T) {
	words := slices.Concat(decisionWords, planWords, nextWords)
	for _, w := range words {
		if w != strings.ToLower(w) {
			t.Fatalf("word %q is not lower case", w)
		}
	}
	rng := rand.New(rand.NewPCG(4, 4))
	parts := slices.Concat(words, []string{"BECAUSE", "Instead", "NeXt", "I'LL", " ", ".", "\u212a", "\u0130NSTEAD", "\u0130", "É", "Σ", "ſhould ", "MUST ", "ẞ", "x", "\xc4", "\xe2\x84", "ta\u212a", "k"})
	var lower lowerBuf
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(8) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		s := b.String()
		got, want := lower.of(s), strings.ToLower(s)
		for _, w := range words {
			if strings.Contains(got, w) != strings.Contains(want, w) {
				t.Fatalf("%q: %q found %v in %q, %v in %q", s, w, strings.Contains(got, w), got, strings.Contains(want, w), want)
			}
		}
	}
	s := "The Root Cause Is That The Session Closes Before The Write, So We Need To Wait."
	lower.of(s)
	if n := testing.AllocsPerRun(100, func() { lower.of(s) }); n > 0 {
		t.Errorf("lowerBuf allocates %.0f times", n)
	}
}
