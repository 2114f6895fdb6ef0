package cli_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/app/cli"
)

// A proxy given a retention prunes its namespace in the background: here a
// size of one byte with no live protection, so the session prepare stored
// goes within the first pass.
func TestProxyAppliesRetention(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	example, _ := filepath.Abs("../../../testdata/messages.jsonl")
	if code, _, errOut := runCLI(t, "", "prepare", "--workspace", ws, "--session", "s1", "--dir", dir, example); code != 0 {
		t.Fatal(errOut)
	}
	ls := func() string {
		_, out, _ := runCLI(t, "", "sessions", "ls", "--workspace", ws)
		return strings.TrimSpace(out)
	}
	if ls() == "[]" {
		t.Fatal("prepare stored no session")
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var errb bytes.Buffer
	done := make(chan int)
	go func() {
		done <- cli.Run(ctx, []string{"proxy", "--listen", "127.0.0.1:0", "--workspace", ws, "--dir", dir,
			"--retain-size", "1", "--retain-live", "0", "--retain-every", "50ms"},
			cli.Streams{In: strings.NewReader(""), Out: &lockedBuffer{b: new(bytes.Buffer)}, Err: &lockedBuffer{b: &errb}})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for ls() != "[]" {
		if time.Now().After(deadline) {
			t.Fatalf("the proxy did not prune: %s", ls())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the proxy did not stop")
	}
}
