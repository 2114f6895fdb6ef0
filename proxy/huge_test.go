package proxy_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
)

// TestHugeResultAllocatesAFewCopies sends a request with one 8 MB tool
// result through the proxy over the pipeline engine (a directory
// workspace) and holds the bytes allocated to a few copies of the body
// (issue 24): the body read, the result decoded, its encoding, the file
// written. Before, the encoding and the comparison of tokens grew copies
// of it by appending (17 times the body in all).
func TestHugeResultAllocatesAFewCopies(t *testing.T) {
	body := hugeResultRequest(8 << 20)
	e, err := proxy.NewPipelineEngine(proxy.PipelineOptions{Pipeline: pipeline.Options{WorkspaceDir: filepath.Join(t.TempDir(), "ws"), NoCompact: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	srv, err := proxy.New(proxy.Options{Engine: e, Transport: nopTransport{}})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/v1/messages", bytes.NewReader(body))
	req.Header.Set(proxy.HeaderSession, "huge")
	w := httptest.NewRecorder()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	srv.ServeHTTP(w, req)
	runtime.ReadMemStats(&after)
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if st := srv.Stats(); len(st) != 1 || st[0].Edited != 1 {
		t.Fatalf("the result was not offloaded: %+v", st)
	}
	n := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d bytes allocated: %.1f× the body", n, float64(n)/float64(len(body)))
	if ratio := float64(n) / float64(len(body)); ratio > 8 {
		t.Errorf("forwarding a %d-byte request allocated %d bytes (%.1f× the body), want at most 8×", len(body), n, ratio)
	}
}
