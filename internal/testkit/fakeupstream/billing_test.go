package fakeupstream_test

import (
	"bufio"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/tokens"
)

// words returns a text of exactly n o200k_base tokens.
func words(n int) string { return "hello" + strings.Repeat(" hello", n-1) }

// clock is a settable clock for Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func newClock() *clock { return &clock{t: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)} }

func post(t *testing.T, url, path string, header map[string]string, body any) (int, []byte) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, url+path, strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sb strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		sb.WriteString(sc.Text() + "\n")
	}
	return resp.StatusCode, []byte(sb.String())
}

// usageOf returns the usage of a non-streamed answer, or of the
// message_start (merged with the message_delta) of an Anthropic stream.
func usageOf(t *testing.T, body []byte) map[string]any {
	t.Helper()
	if !strings.HasPrefix(string(body), "event:") {
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		u, _ := m["usage"].(map[string]any)
		return u
	}
	u := map[string]any{}
	for _, line := range strings.Split(string(body), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev map[string]any
		json.Unmarshal([]byte(data), &ev)
		switch ev["type"] {
		case "message_start":
			for k, v := range ev["message"].(map[string]any)["usage"].(map[string]any) {
				u[k] = v
			}
		case "message_delta":
			for k, v := range ev["usage"].(map[string]any) {
				u[k] = v
			}
		}
	}
	return u
}

func num(u map[string]any, path ...string) int {
	var v any = u
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	f, _ := v.(float64)
	return int(f)
}

var ephemeral = map[string]any{"type": "ephemeral"}

func text(s string, bp bool) map[string]any {
	b := map[string]any{"type": "text", "text": s}
	if bp {
		b["cache_control"] = ephemeral
	}
	return b
}

// A conversation of three requests as Claude Code sends them: a tool, two
// system blocks with a breakpoint on the last, and a breakpoint on the
// last block of the last message, which moves as the conversation grows.
//
// Token counts (o200k_base): the tool's JSON 29, "You are Claude Code." 5,
// the tool_use (name "Bash" 2, input {"command":"ls"} 5) 7, each words(n)
// n, each reply "ok" 1. Sonnet 4.5: a minimum of 1,024 tokens.
//
//	request 1: tool 29, system 5 + 1500 (bp), user 200 (bp) = 1,734:
//	           nothing cached, 1,734 written.
//	request 2: + tool_use 7, tool_result 300 (bp) = 2,041: the lookback
//	           from the tool_result finds the user block's entry: 1,734 read,
//	           307 written.
//	request 3: + assistant 50, user 100 (bp) = 2,191: 2,041 read, 150
//	           written.
//
// Cost at $3.75 per million written, $0.30 read, $15 out:
// (1734×3.75 + 15) + (1734×0.3 + 307×3.75 + 15) + (2041×0.3 + 150×3.75 + 15)
// = 6517.5 + 1686.45 + 1189.8 = 9393.75 per million = $0.00939375.
func TestUsageOfAConversation(t *testing.T) {
	for _, c := range []struct {
		s string
		n int
	}{
		{`{"description":"Run a command","input_schema":{"properties":{"command":{"type":"string"}},"type":"object"},"name":"Bash"}`, 29},
		{"You are Claude Code.", 5}, {"Bash", 2}, {`{"command":"ls"}`, 5}, {"ok", 1}, {words(300), 300},
	} {
		if got := tokens.O200kBase().Count(c.s); got != c.n {
			t.Fatalf("the hand computation assumes %q is %d tokens, not %d", c.s, c.n, got)
		}
	}
	clk := newClock()
	fake := fakeupstream.New(fakeupstream.Options{Now: clk.now})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	hdr := map[string]string{"X-Api-Key": "k1", "X-Claude-Code-Session-Id": "s1"}
	tool := map[string]any{"name": "Bash", "description": "Run a command", "input_schema": map[string]any{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}}}}
	system := []any{text("You are Claude Code.", false), text(words(1500), true)}
	u1 := map[string]any{"role": "user", "content": []any{text(words(200), false)}}
	a1 := map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": map[string]any{"command": "ls"}}}}
	r1 := func(bp bool) map[string]any {
		b := map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": words(300)}
		if bp {
			b["cache_control"] = ephemeral
		}
		return map[string]any{"role": "user", "content": []any{b}}
	}
	a2 := map[string]any{"role": "assistant", "content": []any{text(words(50), false)}}
	u3 := map[string]any{"role": "user", "content": []any{text(words(100), true)}}
	req := func(stream bool, msgs ...any) map[string]any {
		return map[string]any{"model": "claude-sonnet-4-5-20250929", "max_tokens": 1000, "stream": stream, "tools": []any{tool}, "system": system, "messages": msgs}
	}
	u1bp := map[string]any{"role": "user", "content": []any{text(words(200), true)}}

	type want struct{ in, read, write, out int }
	for i, step := range []struct {
		body  map[string]any
		after time.Duration
		want  want
	}{
		{req(false, u1bp), 0, want{0, 0, 1734, 1}},
		{req(true, u1, a1, r1(true)), time.Minute, want{0, 1734, 307, 1}},
		{req(false, u1, a1, r1(false), a2, u3), time.Minute, want{0, 2041, 150, 1}},
	} {
		clk.advance(step.after)
		status, body := post(t, srv.URL, "/v1/messages", hdr, step.body)
		if status != 200 {
			t.Fatalf("request %d: %d %s", i+1, status, body)
		}
		u := usageOf(t, body)
		got := want{num(u, "input_tokens"), num(u, "cache_read_input_tokens"), num(u, "cache_creation_input_tokens"), num(u, "output_tokens")}
		if got != step.want || num(u, "cache_creation", "ephemeral_5m_input_tokens") != step.want.write {
			t.Errorf("request %d: usage %v, want %+v", i+1, u, step.want)
		}
	}
	// a rejected request (an orphan tool result) is counted, not billed
	if status, _ := post(t, srv.URL, "/v1/messages", hdr, req(false, r1(true))); status != 400 {
		t.Fatalf("orphan tool_result: %d", status)
	}

	b := fake.Bill()
	wantBill := fakeupstream.Totals{Requests: 3, CacheRead: 3775, CacheWrite: 2191, Output: 3, USD: b.USD, LargestRequest: 2191, Rejections: 1}
	if b.Totals != wantBill || math.Abs(b.USD-0.00939375) > 1e-12 {
		t.Errorf("bill %+v, want %+v and $0.00939375", b.Totals, wantBill)
	}
	if s := b.Sessions["s1"]; s != b.Totals || len(b.Sessions) != 1 {
		t.Errorf("sessions %+v, want s1 with all", b.Sessions)
	}

	// the same bill as JSON, for a harness in another process
	resp, err := http.Get(srv.URL + fakeupstream.BillPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got fakeupstream.Bill
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Totals != b.Totals || got.Sessions["s1"] != b.Totals {
		t.Errorf("GET %s: %+v, want %+v", fakeupstream.BillPath, got, b)
	}
}

// The cache's lifetime follows Options.Now: the same request 4 minutes
// later reads what the first wrote (and refreshes it), and again 4:59
// after that, but not 5 minutes after its last use; another API key has a cache of its own,
// and a top-level cache_control (automatic caching) caches through the
// last block.
func TestCacheFollowsTheClock(t *testing.T) {
	clk := newClock()
	fake := fakeupstream.New(fakeupstream.Options{Now: clk.now})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	body := map[string]any{"model": "claude-sonnet-4-5", "system": []any{text(words(2000), true)}, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	auto := map[string]any{"model": "claude-sonnet-4-5", "cache_control": ephemeral, "system": words(2000), "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	k1 := map[string]string{"X-Api-Key": "k1"}
	type want struct{ in, read, write int }
	for i, step := range []struct {
		after time.Duration
		key   string
		body  map[string]any
		want  want
	}{
		{0, "k1", body, want{1, 0, 2000}},
		{4 * time.Minute, "k1", body, want{1, 2000, 0}},
		{4*time.Minute + 59*time.Second, "k1", body, want{1, 2000, 0}},
		{0, "k2", body, want{1, 0, 2000}},
		{5 * time.Minute, "k1", body, want{1, 0, 2000}},
		// automatic caching: the breakpoint is on "hi", the last block;
		// the system string is the same text block as above, so its
		// entry (written just now) is found by the lookback
		{0, "k1", auto, want{0, 2000, 1}},
		{time.Second, "k1", auto, want{0, 2001, 0}},
	} {
		clk.advance(step.after)
		k1["X-Api-Key"] = step.key
		_, resp := post(t, srv.URL, "/v1/messages", k1, step.body)
		u := usageOf(t, resp)
		if got := (want{num(u, "input_tokens"), num(u, "cache_read_input_tokens"), num(u, "cache_creation_input_tokens")}); got != step.want {
			t.Errorf("request %d: %+v, want %+v", i+1, got, step.want)
		}
	}
}

// OpenAI: prefixes of 1,024 tokens and more are read from earlier
// requests in 128-token steps, reported as cached_tokens within the prompt
// tokens; a script's InputTokens is reported as it is.
func TestOpenAIUsage(t *testing.T) {
	clk := newClock()
	fake := fakeupstream.New(fakeupstream.Options{Now: clk.now, Script: func(c *fakeupstream.Call) fakeupstream.Reply {
		if strings.Contains(c.AllText, "scripted") {
			return fakeupstream.Reply{Text: "ok", InputTokens: 77}
		}
		return fakeupstream.Reply{Text: "ok"}
	}})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	hdr := map[string]string{"Authorization": "Bearer k"}
	chat := func(user string) map[string]any {
		return map[string]any{"model": "gpt-5", "messages": []any{map[string]any{"role": "system", "content": words(1500)}, map[string]any{"role": "user", "content": user}}}
	}
	// system 1,500 + "hi" 1, then + "hello hello" 2: 1,500 shared → 1,408
	_, b1 := post(t, srv.URL, "/v1/chat/completions", hdr, chat("hi"))
	_, b2 := post(t, srv.URL, "/v1/chat/completions", hdr, chat(words(2)))
	for i, c := range []struct {
		body          []byte
		prompt, cache int
	}{{b1, 1501, 0}, {b2, 1502, 1408}} {
		u := usageOf(t, c.body)
		if num(u, "prompt_tokens") != c.prompt || num(u, "prompt_tokens_details", "cached_tokens") != c.cache || num(u, "completion_tokens") != 1 {
			t.Errorf("chat %d: usage %v, want %d prompt, %d cached", i+1, u, c.prompt, c.cache)
		}
	}
	resp := func(user string) map[string]any {
		return map[string]any{"model": "gpt-5", "instructions": words(1100), "input": []any{map[string]any{"role": "user", "content": user}}}
	}
	post(t, srv.URL, "/v1/responses", hdr, resp("hi"))
	_, b3 := post(t, srv.URL, "/v1/responses", hdr, resp("bye"))
	if u := usageOf(t, b3); num(u, "input_tokens") != 1101 || num(u, "input_tokens_details", "cached_tokens") != 1024 {
		t.Errorf("responses: usage %v, want 1101 in, 1024 cached", u)
	}
	_, b4 := post(t, srv.URL, "/v1/chat/completions", hdr, chat("scripted"))
	if u := usageOf(t, b4); num(u, "prompt_tokens") != 77 || num(u, "prompt_tokens_details", "cached_tokens") != 0 || num(u, "completion_tokens") != 10 {
		t.Errorf("scripted: usage %v, want 77 prompt, nothing cached, 10 out", u)
	}
	if b := fake.Bill(); b.Requests != 5 || b.CacheRead != 1408+1024 || b.Input != 1501+94+1101-1024+1101+77 {
		t.Errorf("bill %+v", b.Totals)
	}
}

// A Responses request with "prompt_cache_retention": "24h" leaves its
// prefixes cached for a day; without it they last OpenAI's 10 minutes.
func TestOpenAIExtendedRetention(t *testing.T) {
	clk := newClock()
	srv := httptest.NewServer(fakeupstream.New(fakeupstream.Options{Now: clk.now}))
	defer srv.Close()
	hdr := map[string]string{"Authorization": "Bearer k"}
	resp := func(user, retention string) map[string]any {
		b := map[string]any{"model": "gpt-5", "instructions": words(1100), "input": []any{map[string]any{"role": "user", "content": user}}}
		if retention != "" {
			b["prompt_cache_retention"] = retention
		}
		return b
	}
	for i, step := range []struct {
		after     time.Duration
		retention string
		cached    int
	}{
		{0, "24h", 0},
		{6 * time.Hour, "24h", 1024}, // a day's retention
		{time.Hour, "", 1024},        // read without it too: the entry lives its day
	} {
		clk.advance(step.after)
		_, b := post(t, srv.URL, "/v1/responses", hdr, resp("hi", step.retention))
		if u := usageOf(t, b); num(u, "input_tokens_details", "cached_tokens") != step.cached {
			t.Errorf("request %d: usage %v, want %d cached", i+1, u, step.cached)
		}
	}
	// Without retention, 11 minutes are too long.
	hdr["Authorization"] = "Bearer other"
	post(t, srv.URL, "/v1/responses", hdr, resp("hi", ""))
	clk.advance(11 * time.Minute)
	_, b := post(t, srv.URL, "/v1/responses", hdr, resp("hi", ""))
	if u := usageOf(t, b); num(u, "input_tokens_details", "cached_tokens") != 0 {
		t.Errorf("after 11 minutes without retention: usage %v, want nothing cached", u)
	}
}
