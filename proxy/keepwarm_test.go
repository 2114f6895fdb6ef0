package proxy_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
)

// warmClock is the clock of a keep-warm test: the fake upstream's cache,
// the proxy and its timers run on it, and the test fires the timers.
type warmClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*warmTimer
}

type warmTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func (c *warmClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *warmClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &warmTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

// advance moves the clock to d from now, running the timers due on the
// way, in order, each at its own time.
func (c *warmClock) advance(d time.Duration) (fired int) {
	end := c.Now().Add(d)
	for {
		c.mu.Lock()
		var next *warmTimer
		for _, t := range c.timers {
			if !t.stopped && !t.at.After(end) && (next == nil || t.at.Before(next.at)) {
				next = t
			}
		}
		if next == nil {
			c.now = end
			c.mu.Unlock()
			return fired
		}
		next.stopped = true
		c.now = next.at
		c.mu.Unlock()
		next.f()
		fired++
	}
}

// refreshCounter is a PipelineEngine that counts the refreshes it is told
// of.
type refreshCounter struct {
	*proxy.PipelineEngine
	mu sync.Mutex
	n  int
}

func (r *refreshCounter) CacheRefreshed(ctx context.Context, key string, at time.Time) {
	r.mu.Lock()
	r.n++
	r.mu.Unlock()
	r.PipelineEngine.CacheRefreshed(ctx, key, at)
}

// warmSession is a client of one conversation through a proxy with
// keep-warm requests at keepWarm, on the clock c.
type warmSession struct {
	t       *testing.T
	c       *warmClock
	fake    *fakeupstream.Server
	srv     *proxy.Server
	url     string
	engine  *refreshCounter
	history []string
	header  map[string]string
	extra   string // body members added to every request
	final   bool   // the model's next answer ends the turn
}

func newWarmSession(t *testing.T, keepWarm int) *warmSession {
	c := &warmClock{now: time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)}
	ws := &warmSession{t: t, c: c, header: map[string]string{"X-Api-Key": "sk-test", "X-Claude-Code-Session-Id": "s1"},
		history: []string{`{"role":"user","content":[{"type":"text","text":"run the steps"}]}`}}
	step := 0
	ws.fake = fakeupstream.New(fakeupstream.Options{Now: c.Now, Script: func(*fakeupstream.Call) fakeupstream.Reply {
		if ws.final {
			return fakeupstream.Reply{Text: "FINAL"}
		}
		step++
		return fakeupstream.Reply{Text: "running", ToolCalls: []fakeupstream.ToolCall{{Name: "Bash", Input: map[string]any{"command": "make " + strings.Repeat("x", step)}}}}
	}})
	us := httptest.NewServer(ws.fake)
	t.Cleanup(us.Close)
	pe, err := proxy.NewPipelineEngine(proxy.PipelineOptions{Pipeline: pipeline.Options{WorkspaceDir: t.TempDir(), NoCompact: true, Now: c.Now}})
	if err != nil {
		t.Fatal(err)
	}
	ws.engine = &refreshCounter{PipelineEngine: pe}
	ws.srv, err = proxy.New(proxy.Options{Engine: ws.engine, AnthropicURL: us.URL, Logger: testLogger(t), Now: c.Now,
		AfterFunc: c.AfterFunc, KeepWarm: keepWarm})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.srv.Close() })
	ps := httptest.NewServer(ws.srv)
	t.Cleanup(ps.Close)
	ws.url = ps.URL
	return ws
}

// send sends the conversation so far (its last message marked for the
// cache) and appends the answer, and a result for its tool call.
func (ws *warmSession) send() fakeupstream.Totals {
	t := ws.t
	t.Helper()
	before := ws.fake.Bill().Totals
	msgs := append([]string(nil), ws.history...)
	last := msgs[len(msgs)-1]
	msgs[len(msgs)-1] = strings.Replace(last, `}]}`, `,"cache_control":{"type":"ephemeral"}}]}`, 1)
	b := `{"model":"claude-sonnet-4-5","max_tokens":1000,"stream":true,` + ws.extra +
		`"system":[{"type":"text","text":"` + strings.Repeat("You are a careful agent. ", 400) + `","cache_control":{"type":"ephemeral"}}],` +
		`"tools":[{"name":"Bash","input_schema":{"type":"object"}}],"messages":[` + strings.Join(msgs, ",") + `]}`
	resp := post(t, ws.url+"/v1/messages", b, ws.header)
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	var id, text string
	for _, line := range strings.Split(string(data), "\n") {
		if p, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(p, `"tool_use"`) {
			var e struct {
				ContentBlock struct{ ID string } `json:"content_block"`
			}
			json.Unmarshal([]byte(p), &e)
			if e.ContentBlock.ID != "" {
				id = e.ContentBlock.ID
			}
		}
	}
	if id == "" {
		text = `{"role":"assistant","content":[{"type":"text","text":"FINAL"}]}`
		ws.history = append(ws.history, text)
	} else {
		ws.history = append(ws.history, `{"role":"assistant","content":[{"type":"text","text":"running"},{"type":"tool_use","id":"`+id+`","name":"Bash","input":{}}]}`,
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"`+id+`","content":"`+strings.Repeat("built ", 200)+`"}]}`)
	}
	after := ws.fake.Bill().Totals
	return fakeupstream.Totals{Requests: after.Requests - before.Requests, CacheRead: after.CacheRead - before.CacheRead,
		CacheWrite: after.CacheWrite - before.CacheWrite, Input: after.Input - before.Input, USD: after.USD - before.USD}
}

// A client that runs a tool for 6 minutes comes back to a warm cache: one
// keep-warm request read the prefix 4.5 minutes in. Without it the
// request after the pause writes its whole prefix again.
func TestKeepWarmDuringAToolRun(t *testing.T) {
	var cold, warm fakeupstream.Totals
	for _, keepWarm := range []int{-1, 0} {
		ws := newWarmSession(t, keepWarm)
		ws.send()
		ws.c.advance(20 * time.Second)
		ws.send()
		fired := ws.c.advance(6 * time.Minute)
		after := ws.send()
		st := ws.srv.Total()
		if keepWarm < 0 {
			if fired != 0 || st.KeepWarmRequests != 0 {
				t.Fatalf("keep-warm off: %d timers fired, %d keep-warm requests", fired, st.KeepWarmRequests)
			}
			cold = after
			continue
		}
		if fired != 1 || st.KeepWarmRequests != 1 || st.KeepWarmCostUSD <= 0 || ws.engine.n != 1 {
			t.Fatalf("keep-warm on: %d timers fired, stats %+v, %d refreshes told", fired, st.Bill, ws.engine.n)
		}
		if got, want := st.CostUSD, ws.fake.Bill().USD; got < want*0.999 || got > want*1.001 {
			t.Errorf("the proxy's bill %v is not the upstream's %v", got, want)
		}
		warm = after
	}
	if cold.CacheWrite < 2000 || warm.CacheWrite*4 > cold.CacheWrite || warm.CacheRead*4 < cold.CacheWrite*3 {
		t.Errorf("the request after the pause: kept warm %+v, left cold %+v: want the prefix read, not written", warm, cold)
	}
	if warm.USD >= cold.USD {
		t.Errorf("the request after the pause cost %v kept warm, %v cold", warm.USD, cold.USD)
	}
}

// What is not kept warm, and how the keep-warm requests end.
func TestKeepWarmOnlyWhereItPays(t *testing.T) {
	t.Run("at most KeepWarm per pause", func(t *testing.T) {
		ws := newWarmSession(t, 2)
		ws.send()
		if fired := ws.c.advance(time.Hour); fired != 2 {
			t.Fatalf("%d keep-warm requests in an hour's pause, want 2", fired)
		}
		if n := ws.srv.Total().KeepWarmRequests; n != 2 {
			t.Fatalf("%d keep-warm requests billed, want 2", n)
		}
	})
	t.Run("a request of the session ends them", func(t *testing.T) {
		ws := newWarmSession(t, 0)
		ws.send()
		ws.c.advance(4 * time.Minute)
		ws.send()
		ws.final = true
		ws.c.advance(4 * time.Minute)
		ws.send() // answers FINAL: the turn ends
		if fired := ws.c.advance(time.Hour); fired != 0 {
			t.Fatalf("%d keep-warm requests after requests 4 minutes apart and an answer that ends the turn", fired)
		}
	})
	for name, change := range map[string]func(ws *warmSession){
		"thinking without interleaving": func(ws *warmSession) { ws.extra = `"thinking":{"type":"enabled","budget_tokens":1024},` },
		"subscription": func(ws *warmSession) {
			delete(ws.header, "X-Api-Key")
			ws.header["Authorization"] = "Bearer sk-ant-oat01-test"
		},
	} {
		t.Run(name, func(t *testing.T) {
			ws := newWarmSession(t, 0)
			change(ws)
			ws.send()
			if fired := ws.c.advance(time.Hour); fired != 0 {
				t.Fatalf("%d keep-warm requests", fired)
			}
		})
	}
}

// Claude Code asks for extended thinking with interleaved thinking: its
// keep-warm requests keep the thinking parameters (a change would not
// read the cache) and stop at one token.
func TestKeepWarmInterleavedThinking(t *testing.T) {
	ws := newWarmSession(t, 1)
	ws.extra = `"thinking":{"type":"enabled","budget_tokens":31999},`
	ws.header["Anthropic-Beta"] = "claude-code-20250219,interleaved-thinking-2025-05-14"
	ws.send()
	n := len(ws.fake.Records())
	if fired := ws.c.advance(time.Hour); fired != 1 {
		t.Fatalf("%d keep-warm requests, want 1", fired)
	}
	recs := ws.fake.Records()
	if len(recs) != n+1 {
		t.Fatalf("the upstream got %d requests, want %d", len(recs), n+1)
	}
	var body map[string]any
	if err := json.Unmarshal(recs[n].Body, &body); err != nil {
		t.Fatal(err)
	}
	th, _ := json.Marshal(body["thinking"])
	if body["max_tokens"] != 1.0 || body["stream"] != false || string(th) != `{"budget_tokens":31999,"type":"enabled"}` ||
		recs[n].Header.Get(proxy.HeaderKeepWarm) != "1" || !strings.Contains(recs[n].Header.Get("Anthropic-Beta"), "interleaved-thinking-") {
		t.Fatalf("keep-warm request: max_tokens %v, stream %v, thinking %s, headers %v", body["max_tokens"], body["stream"], th, recs[n].Header)
	}
}
