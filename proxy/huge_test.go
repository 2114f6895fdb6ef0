package proxy_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
)

// TestHugeResultAllocatesAFewCopies sends a request with one 8 MB tool
// result through the proxy over the pipeline engine (a directory
// workspace) and holds the bytes allocated to two copies of the body
// (issue 24): the body read and the result decoded. Its encoding is
// checked against the request's bytes in place (agentctx.EncodesAs) and
// the artifact written from the decoded string; they were two more
// copies before (4×), and earlier the encoding and the comparison of
// tokens grew copies of it by appending (17×).
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
	if ratio := float64(n) / float64(len(body)); ratio > 2.5 {
		t.Errorf("forwarding a %d-byte request allocated %d bytes (%.1f× the body), want at most 2.5×", len(body), n, ratio)
	}
}

// TestManySmallResultsWriteNoArtifacts sends a request of 1,000 small
// messages (500 tool results, none pruned or offloaded) through the
// proxy over the pipeline engine with StoreOnReplace (what `agentctx
// proxy` runs): no artifact file is written for results that stay in the
// request (issue 24: the 10 MB request of 100,000 messages wrote 100,000
// files, 9 of its 12 s of CPU). Storing every result when first seen
// writes two files per result.
func TestManySmallResultsWriteNoArtifacts(t *testing.T) {
	body := manyMessagesRequest(128<<10, 1_000)
	for _, tc := range []struct {
		onReplace bool
		want      int
	}{{true, 0}, {false, 2 * 500}} {
		dir := filepath.Join(t.TempDir(), "ws")
		e, err := proxy.NewPipelineEngine(proxy.PipelineOptions{Pipeline: pipeline.Options{WorkspaceDir: dir, NoCompact: true, StoreOnReplace: tc.onReplace}})
		if err != nil {
			t.Fatal(err)
		}
		srv, err := proxy.New(proxy.Options{Engine: e, Transport: nopTransport{}})
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodPost, "/v1/messages", bytes.NewReader(body))
		req.Header.Set(proxy.HeaderSession, "many")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		e.Close()
		if w.Code != http.StatusOK {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
		if st := srv.Stats(); len(st) != 1 || st[0].Errors != 0 || st[0].Requests != 1 {
			t.Fatalf("stats %+v", st)
		}
		files := 0
		filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.Contains(filepath.Base(path), "tool_result_") {
				files++
			}
			return nil
		})
		if files != tc.want {
			t.Errorf("StoreOnReplace %v: %d artifact files written for 500 small results, want %d", tc.onReplace, files, tc.want)
		}
	}
}

// TestManySmallMessagesAllocations holds the allocations of a first
// request of 4,000 small messages (2,000 tool results) through the proxy
// over the pipeline engine with StoreOnReplace to a bound per message
// (issue 24): decoding, counting, the steps and the session state. It was
// 51 per message with StoreOnReplace before the decoding changes (a copy
// of every member key and member slice, a map of every call id on each
// pass over the results), 122 when every result was stored when first
// seen; now about 20. The bytes allocated are bound too: 42–43 per byte
// of the body before the members of each message were split on the stack
// and the prune, offload and path passes stopped copying the list when
// they change nothing; now 31–32 (33.6 under -race).
func TestManySmallMessagesAllocations(t *testing.T) {
	const n = 4_000
	body := manyMessagesRequest(n*100, n)
	e, err := proxy.NewPipelineEngine(proxy.PipelineOptions{Pipeline: pipeline.Options{WorkspaceDir: filepath.Join(t.TempDir(), "ws"), NoCompact: true, StoreOnReplace: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	srv, err := proxy.New(proxy.Options{Engine: e, Transport: nopTransport{}})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/v1/messages", bytes.NewReader(body))
	req.Header.Set(proxy.HeaderSession, "allocs")
	w := httptest.NewRecorder()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	srv.ServeHTTP(w, req)
	runtime.ReadMemStats(&after)
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	per := float64(after.Mallocs-before.Mallocs) / n
	bytesPer := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(body))
	t.Logf("%d allocations: %.1f per message; %d bytes allocated: %.1f per byte of the body", after.Mallocs-before.Mallocs, per, after.TotalAlloc-before.TotalAlloc, bytesPer)
	if per > 32 {
		t.Errorf("a first request of %d small messages made %.1f allocations per message, want at most 32", n, per)
	}
	if bytesPer > 37 {
		t.Errorf("a first request of %d small messages allocated %.1f bytes per byte of its body, want at most 37", n, bytesPer)
	}
}
