package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/cli"
	"github.com/agentctx/agentctx/internal/fakeupstream"
)

func TestProxyBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"proxy", "--listen", "not-an-address:x:y"},
		{"proxy", "--upstream-anthropic", "ftp://example.com"},
		{"proxy", "--limit", "0"},
		{"proxy", "--max-sessions", "0"},
		{"proxy", "--decode-cache", "-1"},
		{"proxy", "extra-arg"},
	} {
		code, out, errs := runCLI(t, "", args...)
		if code != cli.ExitUsage || out != "" || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2, one line on stderr", args, code, out, errs)
		}
	}
}

// The proxy runs until its context is done, prints the base URL first, and
// forwards to the upstream.
func TestProxyServesUntilCancelled(t *testing.T) {
	up := httptest.NewServer(fakeupstream.New(fakeupstream.Options{}))
	defer up.Close()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	var errb bytes.Buffer
	done := make(chan int)
	go func() {
		code := cli.Run(ctx, []string{"proxy", "--listen", "127.0.0.1:0", "--upstream-anthropic", up.URL, "--upstream-openai", up.URL,
			"--workspace", dir + "/ws", "--dir", dir + "/archive"}, cli.Streams{In: strings.NewReader(""), Out: pw, Err: &lockedBuffer{b: &errb}})
		pw.Close()
		done <- code
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no first line: %v", err)
	}
	base, ok := strings.CutPrefix(strings.TrimSpace(line), "ANTHROPIC_BASE_URL=")
	if !ok || !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("first line %q", line)
	}
	go io.Copy(io.Discard, pr)
	resp, err := http.Post(base+"/v1/messages", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"ok"`) {
		t.Errorf("through the proxy: %d %s", resp.StatusCode, b)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after cancel", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the proxy did not stop after its context was cancelled")
	}
}

// lockedBuffer is a buffer safe for the proxy's concurrent log writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
