package proxy_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/agentctx/agentctx/internal/testkit/memtest"
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

// TestEditedBodyIsNotCopied sends a session's request twice through the
// proxy over the pipeline engine: a large tool result, which the engine
// replaces with its reference on every request, then 2 MB of turns it
// keeps; and Codex's 2 MB Responses request, whose large outputs it
// replaces. The second request, warm (its messages decoded before), is
// forwarded as the parts of the body it keeps and the bytes the engine
// wrote (sendBody): it allocated a second body to be sent before, 2.76×
// the body in all for Anthropic's and 2.73× for Codex's; 1.85× and 1.63×
// now (the body read, and the lists of its messages the engine makes).
func TestEditedBodyIsNotCopied(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"model":"claude-x","max_tokens":1000,"messages":[{"role":"user","content":"list everything"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls -laR /"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"`)
	for i := 0; i < 4000; i++ {
		fmt.Fprintf(&b, `drwxr-xr-x  2 root root 4096 Nov 23 file%d.go ok\n`, i)
	}
	b.WriteString(`"}]}`)
	turn := strings.Repeat("a line of what was said in this turn; ", 25)
	for i := 0; b.Len() < 2<<20; i++ {
		fmt.Fprintf(&b, `,{"role":"assistant","content":[{"type":"text","text":"%d %s"}]},{"role":"user","content":[{"type":"text","text":"%d %s"}]}`, i, turn, i, turn)
	}
	b.WriteString(`]}`)
	for _, tc := range []struct {
		name, path string
		body       []byte
		limit      float64
	}{
		{"anthropic", "/v1/messages", b.Bytes(), 2.2},
		{"codex", "/v1/responses", codexRequest(2<<20, 0), 1.8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body
			e, err := proxy.NewPipelineEngine(proxy.PipelineOptions{Pipeline: pipeline.Options{WorkspaceDir: filepath.Join(t.TempDir(), "ws"), NoCompact: true, StoreOnReplace: true}})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			var mu sync.Mutex
			var sentLen int64
			var sentSum []byte
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				h := sha256.New() // read, not kept: the test's own copy would count
				n, _ := io.Copy(h, r.Body)
				mu.Lock()
				sentLen, sentSum = n, h.Sum(nil)
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"usage":{"input_tokens":1,"output_tokens":1}}`)
			}))
			defer up.Close()
			srv, err := proxy.New(proxy.Options{Engine: e, AnthropicURL: up.URL, OpenAIURL: up.URL})
			if err != nil {
				t.Fatal(err)
			}
			var first []byte
			for i := range 2 {
				req := httptest.NewRequest(http.MethodPost, tc.path, bytes.NewReader(body))
				req.Header.Set(proxy.HeaderSession, "warm")
				w := httptest.NewRecorder()
				n := memtest.AllocatedBy(func() { srv.ServeHTTP(w, req) })
				if w.Code != http.StatusOK {
					t.Fatalf("status %d: %s", w.Code, w.Body)
				}
				mu.Lock()
				got, sum := sentLen, sentSum
				mu.Unlock()
				if got > int64(len(body))*15/16 || got < int64(len(body))/2 {
					t.Fatalf("request %d: the results were not replaced, or the turns not kept (%d of %d bytes sent)", i, got, len(body))
				}
				if i == 0 {
					first = sum
					continue
				}
				if !bytes.Equal(sum, first) {
					t.Fatal("the warm request sent other bytes than the first")
				}
				ratio := float64(n) / float64(len(body))
				t.Logf("warm: %d bytes allocated, %.2f× the body", n, ratio)
				if ratio > tc.limit {
					t.Errorf("a warm edited request of %d bytes allocated %d (%.2f× the body), want at most %.1f×: the body copied to be sent", len(body), n, ratio, tc.limit)
				}
			}
		})
	}
}
