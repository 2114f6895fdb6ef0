package proxy

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/testkit/memtest"
	"github.com/agentctx/agentctx/workspace"
)

// sessionMemBodies are conversations whose sessions keep different
// things: a realistic one (the example session: results stored, some
// offloaded and named by path), many small tool calls (counts and keys of
// thousands of results), and offloaded results (the messages AddPaths
// changed, and their new encodings).
func sessionMemBodies(t *testing.T) map[string][]byte {
	t.Helper()
	example, err := os.ReadFile(filepath.Join("..", "examples", "session.json"))
	if err != nil {
		t.Fatal(err)
	}
	small := make([]string, 2500)
	for i := range small {
		small[i] = smallPair(i)
	}
	offloaded := make([]string, 200)
	for i := range offloaded {
		offloaded[i] = fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_%06d","name":"Bash","input":{"command":"cat log%d"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%06d","content":%q}]}`,
			i, i, i, strings.Repeat(fmt.Sprintf("line of log %d\n", i), 200))
	}
	var responses strings.Builder // Codex's: calls, outputs (some offloaded) and reasoning
	responses.WriteString(`{"model":"gpt-5","store":false,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"start"}]}`)
	for i := range 600 {
		fmt.Fprintf(&responses, `,{"type":"reasoning","id":"rs_%d","summary":[],"encrypted_content":"e%d"},{"type":"function_call","id":"fc_%d","call_id":"c%d","name":"shell","arguments":"{\"command\":\"cat log%d\"}","status":"completed"},{"type":"function_call_output","call_id":"c%d","output":%q}`,
			i, i, i, i, i, i, strings.Repeat(fmt.Sprintf("line of log %d\n", i), 1+(i%4)*60))
	}
	responses.WriteString(`]}`)
	return map[string][]byte{
		"example":   example,
		"small":     anthropicBody(`[{"role":"user","content":"start"},` + strings.Join(small, ",") + `]`),
		"offloaded": anthropicBody(`[{"role":"user","content":"start"},` + strings.Join(offloaded, ",") + `]`),
		"responses": []byte(responses.String()),
	}
}

// sessionServer is a Server over a PipelineEngine (results over 2,000
// characters offloaded) that keeps no decoded messages of its own (decode
// cache off, dashboard views of a byte), so that what a session keeps is
// the engine's alone.
func sessionServer(t *testing.T, o PipelineOptions, rt http.RoundTripper) (*Server, *PipelineEngine) {
	t.Helper()
	o.Pipeline.WorkspaceDir = filepath.Join(t.TempDir(), "ws")
	o.Pipeline.NoCompact = true
	o.Pipeline.Workspace = workspace.Options{InlineLimit: 2000}
	e, err := NewPipelineEngine(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	s, err := New(Options{Engine: e, Transport: rt, DecodeCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	s.stats.views = newViewTable(1)
	return s, e
}

func sendSession(t *testing.T, s *Server, key string, body []byte) {
	t.Helper()
	path := "/v1/messages"
	if bytes.Contains(body[:min(len(body), 64)], []byte(`"store":false`)) {
		path = "/v1/responses"
	}
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set(HeaderSession, key)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		t.Errorf("session %s: status %d: %s", key, w.Code, w.Body.String()) // not Fatal: goroutines send too
	}
}

// TestSessionMemoryIsHonest holds the engine's estimate of what a session
// keeps between requests (what PipelineOptions.MaxBytes bounds) to the
// heap it really keeps, within a third either way, after two requests of
// each kind of conversation.
func TestSessionMemoryIsHonest(t *testing.T) {
	for name, body := range sessionMemBodies(t) {
		s, e := sessionServer(t, PipelineOptions{}, discardTransport{})
		for range 2 {
			sendSession(t, s, name, body)
		}
		est := e.MemoryBytes()
		held := memtest.HeldBy(func() {
			e.mu.Lock()
			for _, ps := range e.sessions {
				e.drop(ps)
			}
			e.mu.Unlock()
		})
		runtime.KeepAlive(s)
		memtest.CheckEstimate(t, fmt.Sprintf("a session of %s (%d bytes)", name, len(body)), est, held)
		if e.MemoryBytes() != 0 {
			t.Errorf("%s: %d bytes counted after every session was dropped", name, e.MemoryBytes())
		}
	}
}

// TestSessionsAreBoundedByBytes sends the first request of ten sessions
// through an engine whose sessions may keep what three of them keep: it
// drops the least recently used to stay within that, a dropped session
// comes back with its decisions (the same bytes go upstream), and with
// no bound but the count all ten stay.
func TestSessionsAreBoundedByBytes(t *testing.T) {
	body := sessionMemBodies(t)["example"]
	probe, pe := sessionServer(t, PipelineOptions{}, discardTransport{})
	sendSession(t, probe, "probe", body)
	one := pe.MemoryBytes()
	if one <= 0 {
		t.Fatalf("a session keeps %d bytes by estimate", one)
	}
	for _, tc := range []struct {
		max  int64
		kept int
	}{{3*one + one/2, 3}, {-1, 10}} {
		rec := &recordingTransport{}
		s, e := sessionServer(t, PipelineOptions{MaxBytes: tc.max}, rec)
		for i := range 10 {
			sendSession(t, s, fmt.Sprint("s", i), body)
		}
		if n := e.Sessions(); n != tc.kept {
			t.Errorf("MaxBytes %d: %d sessions kept, want %d", tc.max, n, tc.kept)
		}
		if tc.max > 0 && e.MemoryBytes() > tc.max {
			t.Errorf("MaxBytes %d: the sessions keep %d", tc.max, e.MemoryBytes())
		}
		if got := s.ProcessStats().EngineBytes; got != e.MemoryBytes() || got <= 0 {
			t.Errorf("MaxBytes %d: the statistics say the engine keeps %d, it says %d", tc.max, got, e.MemoryBytes())
		}
		sendSession(t, s, "s0", body) // dropped when bounded: back from the session store
		bodies := rec.bodies
		if first, again := bodies[0], bodies[len(bodies)-1]; !bytes.Equal(first, again) {
			t.Errorf("MaxBytes %d: session s0 sent %d bytes, then %d after it was dropped", tc.max, len(first), len(again))
		}
	}
}

// TestSessionsBoundedByBytesConcurrently sends requests of four sessions
// from eight goroutines through an engine whose sessions may keep a byte:
// every request is answered, a session is dropped only when no request of
// it is being prepared, and the engine's count stays the sum of what its
// sessions keep (go test -race).
func TestSessionsBoundedByBytesConcurrently(t *testing.T) {
	body := sessionMemBodies(t)["example"]
	s, e := sessionServer(t, PipelineOptions{MaxBytes: 1}, discardTransport{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 5 {
				sendSession(t, s, fmt.Sprint("s", (g+i)%4), body)
			}
		})
	}
	wg.Wait()
	e.mu.Lock()
	defer e.mu.Unlock()
	var sum int64
	for _, ps := range e.sessions {
		sum += ps.held
	}
	if sum != e.held || len(e.sessions) > 4 {
		t.Errorf("%d sessions keep %d bytes; the engine counts %d", len(e.sessions), sum, e.held)
	}
}

// TestForwardedBodyKeptOnlyForASummary: a session near its compaction
// trigger keeps the body it last forwarded only when its compaction
// would send it (a Summarizer, compaction on); otherwise nothing reads
// it, and a 10 MB request's body was held as long as its session (issue
// 24, item 7).
func TestForwardedBodyKeptOnlyForASummary(t *testing.T) {
	body := sessionMemBodies(t)["small"]
	summ := func(*Request) compact.Summarizer {
		return compact.SummarizerFunc(func(context.Context, compact.Request) (string, error) { return "summary", nil })
	}
	for _, tc := range []struct {
		name      string
		o         PipelineOptions
		noCompact bool
		keep      bool
	}{
		{"no summarizer", PipelineOptions{}, false, false},
		{"compaction off", PipelineOptions{Summarizer: summ}, true, false},
		{"summarizer", PipelineOptions{Summarizer: summ}, false, true},
	} {
		o := tc.o
		o.Pipeline.WorkspaceDir = filepath.Join(t.TempDir(), "ws")
		o.Pipeline.NoCompact = tc.noCompact
		e, err := NewPipelineEngine(o)
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(Options{Engine: e, Transport: discardTransport{}, DecodeCacheBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		sendSession(t, s, "s", body)
		e.mu.Lock()
		ps := e.sessions["s"]
		e.mu.Unlock()
		if ps == nil {
			t.Fatalf("%s: no session", tc.name)
		}
		ps.mu.Lock()
		ps.tokens = o.Pipeline.Compact.ThresholdTokens() // at the trigger
		ps.prefix = nil
		ps.mu.Unlock()
		before := e.MemoryBytes()
		e.Forwarded("s", APIAnthropic, body)
		kept, held := ps.prefix != nil, e.MemoryBytes()-before
		if kept != tc.keep || (held == int64(cap(body))) != tc.keep {
			t.Errorf("%s: the body kept %v (%d bytes more held), want %v", tc.name, kept, held, tc.keep)
		}
		e.Close()
	}
}
