package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestRun runs the example loop and checks that the middleware did its
// work on the requests (the large log offloaded, the conversation compacted
// and the summary reused) and that the read-back tools returned the
// original log.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	reads, err := run(t.Context(), &out, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"offloaded 1", "compacted", "reused the summary", "assistant: Fixed:"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if len(reads) != 2 || reads[0].Name != "grep_knowledge" || reads[1].Name != "get_knowledge_by_lines" {
		t.Fatalf("read-back calls: %+v", reads)
	}
	for _, r := range reads {
		if strings.HasPrefix(r.Result, "Error:") {
			t.Fatalf("%s(%s): %s", r.Name, r.Input, r.Result)
		}
	}
	lines := strings.Split(strings.TrimSuffix(journal(), "\n"), "\n")
	matches := 0
	for i, l := range lines {
		if regexp.MustCompile(`ERROR|panic`).MatchString(l) {
			matches++
			if want := fmt.Sprintf("%d:%s", i+1, l); !strings.Contains(reads[0].Result, want) {
				t.Errorf("grep_knowledge lacks %q:\n%s", want, reads[0].Result)
			}
		}
	}
	if matches != 2 {
		t.Fatalf("%d ERROR lines in the journal", matches)
	}
	want := fmt.Sprintf("Lines 600-%d of %d\n", len(lines), len(lines)) + strings.Join(lines[599:], "\n")
	if reads[1].Result != want {
		t.Errorf("get_knowledge_by_lines returned\n%.300q\nwant the original lines\n%.300q", reads[1].Result, want)
	}
}
