package proxy_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pricing"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/session/memsession"
	"github.com/agentctx/agentctx/session/sqlitesession"
	"github.com/agentctx/agentctx/workspace/memstore"
	"github.com/agentctx/agentctx/workspace/sqlitestore"
)

// bigRequest is a Claude Code-like request of about size bytes: a system
// prompt, tools, and turns of Bash calls with their results (~4.7 KB each,
// every 16th 45 KB: large enough to be offloaded).
func bigRequest(size int) []byte { return growingRequest(size, 0) }

// growingRequest is bigRequest followed by extra exchanges with 1 KB
// results: the request of a session that went on extra turns.
func growingRequest(size, extra int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"claude-x","max_tokens":32000,"stream":true,"system":[{"type":"text","text":"You are an agent.","cache_control":{"type":"ephemeral"}}],"tools":[{"name":"Bash","description":"run","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"start"}`)
	line := "drwxr-xr-x  2 root root 4096 Nov 23 file.go ok\n"
	out := strings.Repeat(line, 100) // ~4.7 KB
	big := strings.Repeat(line, 960) // ~45 KB
	exchange := func(i int, result string) {
		fmt.Fprintf(&b, `,{"role":"assistant","content":[{"type":"text","text":"step %d"},{"type":"tool_use","id":"toolu_%06d","name":"Bash","input":{"command":"ls -la dir%d"}}]}`, i, i, i)
		fmt.Fprintf(&b, `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%06d","content":%q}]}`, i, result+fmt.Sprint(i))
	}
	i := 0
	for ; b.Len() < size; i++ {
		if i%16 == 15 {
			exchange(i, big)
		} else {
			exchange(i, out)
		}
	}
	for k := 0; k < extra; k++ {
		exchange(i+k, out[:1000])
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// sentTransport answers every upstream request at once and records when
// it was sent.
type sentTransport struct{ at time.Time }

func (s *sentTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, r.Body)
	s.at = time.Now()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"usage":{"input_tokens":1,"output_tokens":1}}`)), Request: r}, nil
}

// BenchmarkOverhead measures the time from a request received to the
// upstream request sent, on the 1 MB requests of a warm session that goes
// on one turn per request (a new 1 KB tool result each time): no engine
// (pure forwarding), an engine that keeps every message (parse, align,
// splice), the pipeline engine (every result stored in a directory
// workspace, the large ones offloaded: every request is edited; and with
// the options of `agentctx proxy`, which stores a small result only when
// a decision replaces it), and the
// pipeline engine on a session compacted once (the summary stands for most
// of the history in every request). It reports the median and the 99th
// percentile.
func BenchmarkOverhead(b *testing.B) {
	const turns = 64
	bodies := make([][]byte, turns)
	for k := range bodies {
		bodies[k] = growingRequest(1<<20, k)
	}
	pipe := func(o pipeline.Options) func(b *testing.B) proxy.Engine {
		return func(b *testing.B) proxy.Engine {
			o.WorkspaceDir = filepath.Join(b.TempDir(), "ws")
			e, err := proxy.NewPipelineEngine(proxy.PipelineOptions{Pipeline: o})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { e.Close() })
			return e
		}
	}
	for _, tc := range []struct {
		name      string
		engine    func(b *testing.B) proxy.Engine
		edited    bool
		compacted bool
	}{
		{"forward", func(*testing.B) proxy.Engine { return nil }, false, false},
		{"keep", func(*testing.B) proxy.Engine { return &funcEngine{} }, false, false},
		{"keep-sources", func(*testing.B) proxy.Engine { return keepEngine{} }, false, false},
		{"pipeline", pipe(pipeline.Options{NoCompact: true}), true, false},
		// The options `agentctx proxy` runs with: a small result is
		// stored when a decision replaces it (StoreOnReplace), so a turn
		// that adds a 1 KB result writes no artifact.
		{"pipeline-proxy", pipe(pipeline.Options{NoCompact: true, StoreOnReplace: true}), true, false},
		{"pipeline-compacted", pipe(pipeline.Options{Compact: compact.Options{Limit: 200_000}}), true, true},
		// The same with the workspace and session state in memory: the
		// proxy's and the pipeline's own cost, without the file system's.
		{"pipeline-memory", func(b *testing.B) proxy.Engine {
			return pipe(pipeline.Options{NoCompact: true, Store: memstore.New(), Sessions: memsession.New()})(b)
		}, true, false},
		{"pipeline-sqlite", func(b *testing.B) proxy.Engine {
			// The workspace and session state in one SQLite file
			// (agentctx proxy --workspace ws.db).
			path := filepath.Join(b.TempDir(), "ws.db")
			ws, err := sqlitestore.Open(b.Context(), path, sqlitestore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			ss, err := sqlitesession.Open(b.Context(), path)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { ws.Close(); ss.Close() })
			return pipe(pipeline.Options{NoCompact: true, Store: ws, Sessions: ss})(b)
		}, true, false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			srv, tr := benchServer(b, tc.engine(b))
			measureOverhead(b, srv, tr, "/v1/messages", bodies, func(n int) {
				if st := srv.Stats(); tc.edited && (len(st) != 1 || st[0].Edited != n || n == 1 && tc.compacted != (st[0].Compactions == 1)) {
					b.Fatalf("%d of %d requests edited, or the warm-up not as planned: %+v", st[0].Edited, n, st)
				}
			})
		})
	}
}

// keepEngine keeps every message and says so in Prepared.Sources (not
// Unchanged: the proxy aligns the lists), as an Engine that tells what it
// changed does: "keep" is the same Engine saying nothing, whose lists the
// proxy compares by encoding.
type keepEngine struct{}

func (keepEngine) Prepare(_ context.Context, req *proxy.Request) (*proxy.Prepared, error) {
	src := make([]int, len(req.Document.Messages))
	for i := range src {
		src[i] = i
	}
	return &proxy.Prepared{Messages: req.Document.Messages, Sources: src, Facts: req.Facts}, nil
}

func (keepEngine) Observe(context.Context, string, pricing.Usage, int) {}

// benchServer returns a proxy over engine whose upstream answers at once.
func benchServer(b *testing.B, engine proxy.Engine) (*proxy.Server, *sentTransport) {
	tr := &sentTransport{}
	srv, err := proxy.New(proxy.Options{Engine: engine, Transport: tr})
	if err != nil {
		b.Fatal(err)
	}
	return srv, tr
}

// measureOverhead sends one request to warm the session, then b.N more
// (bodies in turn), and reports the median and 99th percentile of the time
// from a request received to its upstream request sent. check is called
// with the number of requests sent, after the warm-up and at the end.
func measureOverhead(b *testing.B, srv *proxy.Server, tr *sentTransport, path string, bodies [][]byte, check func(n int)) {
	run := func(i int) time.Duration {
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(bodies[i%len(bodies)]))
		req.Header.Set("X-Claude-Code-Session-Id", "bench")
		w := httptest.NewRecorder()
		start := time.Now()
		srv.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("status %d: %s", w.Code, w.Body.String())
		}
		return tr.at.Sub(start)
	}
	run(0)
	check(1)
	var d []time.Duration
	b.SetBytes(int64(len(bodies[0])))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d = append(d, run(i+1))
	}
	b.StopTimer()
	check(b.N + 1)
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(d[len(d)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkSessions sends one 200 KB request for each of 50 sessions at
// once, through the pipeline engine, and reports the heap kept per session
// afterwards as a ratio of the history's size.
func BenchmarkSessions(b *testing.B) {
	const sessions = 50
	body := bigRequest(200 << 10)
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		e, err := proxy.NewPipelineEngine(proxy.PipelineOptions{Pipeline: pipeline.Options{WorkspaceDir: filepath.Join(dir, "ws"), NoCompact: true}})
		if err != nil {
			b.Fatal(err)
		}
		srv, _ := proxy.New(proxy.Options{Engine: e, Transport: &nopTransport{}})
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var wg sync.WaitGroup
		var failed atomic.Int32
		for s := 0; s < sessions; s++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := httptest.NewRequest(http.MethodPost, "/v1/messages", bytes.NewReader(body))
				req.Header.Set(proxy.HeaderSession, fmt.Sprint("s", s))
				w := httptest.NewRecorder()
				srv.ServeHTTP(w, req)
				if w.Code != 200 {
					failed.Add(1)
				}
			}()
		}
		wg.Wait()
		runtime.GC()
		runtime.ReadMemStats(&after)
		if failed.Load() > 0 {
			b.Fatalf("%d requests failed", failed.Load())
		}
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/sessions/float64(len(body)), "heap/history")
		runtime.KeepAlive(srv)
		e.Close()
	}
}

type nopTransport struct{}

func (nopTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, r.Body)
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("{}")), Request: r}, nil
}

// codexRequest is a Codex-like Responses request (store false, the whole
// history as input items: reasoning, a shell call and its output per turn)
// of about size bytes, followed by extra turns with 1 KB outputs.
func codexRequest(size, extra int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"gpt-5-codex","instructions":"You are Codex.","store":false,"stream":true,"prompt_cache_key":"bench","tools":[{"type":"function","name":"shell","parameters":{"type":"object"}}],"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"start"}]}`)
	line := "drwxr-xr-x  2 root root 4096 Nov 23 file.go ok\\n"
	turn := func(i int, out string) {
		fmt.Fprintf(&b, `,{"type":"reasoning","id":"rs_%06d","summary":[],"encrypted_content":"gAAAAB%06d"}`, i, i)
		fmt.Fprintf(&b, `,{"type":"function_call","call_id":"call_%06d","name":"shell","arguments":"{\"command\":[\"ls\",\"dir%d\"]}"}`, i, i)
		fmt.Fprintf(&b, `,{"type":"function_call_output","call_id":"call_%06d","output":%q}`, i, out+fmt.Sprint(i))
	}
	i := 0
	for ; b.Len() < size; i++ {
		if i%16 == 15 {
			turn(i, strings.Repeat(line, 960))
		} else {
			turn(i, strings.Repeat(line, 100))
		}
	}
	for k := 0; k < extra; k++ {
		turn(i+k, strings.Repeat(line, 20))
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// BenchmarkOverheadResponses is BenchmarkOverhead for Codex: 1 MB
// Responses requests of a warm session, one turn more each time.
func BenchmarkOverheadResponses(b *testing.B) {
	const turns = 64
	bodies := make([][]byte, turns)
	for k := range bodies {
		bodies[k] = codexRequest(1<<20, k)
	}
	for _, tc := range []struct {
		name   string
		engine func(b *testing.B) proxy.Engine
	}{
		{"keep", func(*testing.B) proxy.Engine { return &funcEngine{} }},
		{"keep-sources", func(*testing.B) proxy.Engine { return keepEngine{} }},
		{"pipeline", func(b *testing.B) proxy.Engine {
			e, err := proxy.NewPipelineEngine(proxy.PipelineOptions{Pipeline: pipeline.Options{WorkspaceDir: filepath.Join(b.TempDir(), "ws"), NoCompact: true}})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { e.Close() })
			return e
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			srv, tr := benchServer(b, tc.engine(b))
			measureOverhead(b, srv, tr, "/v1/responses", bodies, func(int) {})
		})
	}
}
