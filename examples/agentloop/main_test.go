package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRun runs the example loop and checks that every step of the pipeline
// shows up: the large log offloaded (and never pruned: its reference stays
// so the model can read it back), the conversation compacted once, and the
// summary reused on the next request.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(t.Context(), &out, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"offloaded 1", "compacted", "reused the summary", "assistant: Fixed:"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if n := strings.Count(s, "compacted"); n != 1 {
		t.Errorf("compacted %d times, want once:\n%s", n, s)
	}
}
