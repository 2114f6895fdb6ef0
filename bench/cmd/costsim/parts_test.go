package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
)

// The ttl1h stand-in: every cache_control of a Messages request gets
// "ttl":"1h" (a 5m one is changed, a 1h one kept), every other byte stays;
// a Responses request gets "prompt_cache_retention":"24h"; other paths
// are left alone.
func TestAskLongCache(t *testing.T) {
	for _, tc := range []struct {
		name, path, in, want string
	}{
		{"claude code's breakpoints", "/v1/messages",
			`{"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"q","cache_control": { "type":"ephemeral" }}]}]}`,
			`{"system":[{"type":"text","text":"s","cache_control":{"ttl":"1h","type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"q","cache_control": {"ttl":"1h", "type":"ephemeral" }}]}]}`},
		{"5m and 1h", "/v1/messages",
			`{"tools":[{"name":"a","cache_control":{"type":"ephemeral","ttl":"5m"}}],"cache_control":{"type":"ephemeral","ttl":"1h"},"messages":[]}`,
			`{"tools":[{"name":"a","cache_control":{"type":"ephemeral","ttl":"1h"}}],"cache_control":{"type":"ephemeral","ttl":"1h"},"messages":[]}`},
		{"an empty object", "/v1/messages", `{"cache_control":{},"messages":[]}`, `{"cache_control":{"ttl":"1h"},"messages":[]}`},
		{"cache_control inside a string is text", "/v1/messages",
			`{"messages":[{"role":"user","content":"{\"cache_control\":{\"type\":\"ephemeral\"}}"}]}`,
			`{"messages":[{"role":"user","content":"{\"cache_control\":{\"type\":\"ephemeral\"}}"}]}`},
		{"responses", "/v1/responses", `{"model":"gpt-5-codex","input":[]}`, `{"prompt_cache_retention":"24h","model":"gpt-5-codex","input":[]}`},
		{"responses, empty", "/v1/responses", `{}`, `{"prompt_cache_retention":"24h"}`},
		{"responses, asked already", "/v1/responses", `{"prompt_cache_retention":"24h","input":[]}`, `{"prompt_cache_retention":"24h","input":[]}`},
		{"responses, in memory", "/v1/responses", `{"input":[],"prompt_cache_retention":"in_memory"}`, `{"input":[],"prompt_cache_retention":"24h"}`},
		{"count_tokens", "/v1/messages/count_tokens", `{"cache_control":{"type":"ephemeral"}}`, `{"cache_control":{"type":"ephemeral"}}`},
	} {
		out, changed, err := askLongCache(tc.path, []byte(tc.in))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if string(out) != tc.want || changed != (tc.in != tc.want) {
			t.Errorf("%s:\n got %s (changed %v)\nwant %s", tc.name, out, changed, tc.want)
		}
	}
	if _, _, err := askLongCache("/v1/responses", []byte(`not json`)); err == nil {
		t.Error("a body that is not JSON: no error")
	}
}

// The front rewrites for the ttl1h regime before it records, and the
// fake bills the rewritten requests' writes as 1-hour writes.
func TestFrontLongCache(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{})
	dir := t.TempDir()
	tw, err := newTraceWriter(dir, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	f := &front{next: fake, longCache: true, trace: tw}
	srv := httptest.NewServer(f)
	defer srv.Close()
	body := `{"model":"claude-sonnet-4-5","max_tokens":10,"system":[{"type":"text","text":"` + strings.Repeat("word ", 3000) + `","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}]}`
	resp, err := http.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if b := fake.Bill(); b.CacheWrite1h == 0 || b.CacheWrite != 0 || f.rewritten.Load() != 1 {
		t.Errorf("bill %+v, %d rewritten: want 1-hour writes only", b.Totals, f.rewritten.Load())
	}
	got, err := os.ReadFile(filepath.Join(dir, "0001.json"))
	if err != nil || !bytes.Contains(got, []byte(`"cache_control":{"ttl":"1h","type":"ephemeral"}`)) {
		t.Errorf("the trace holds %.200s (%v), want the rewritten body", got, err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "requests.jsonl"))
	var line traceLine
	json.Unmarshal(b, &line)
	if n := line.Header.Get("Content-Length"); n != fmt.Sprint(len(got)) {
		t.Errorf("the trace's Content-Length is %q, the body it holds %d bytes", n, len(got))
	}
}

// The trace's format, as bench/internal/tracereplay reads it: one line
// per request with exactly n, at (the session's clock), method, path,
// header (without credentials) and body (the body's file), in order.
func TestTraceWriter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "claude-proxy")
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 123456789, time.FixedZone("X", 3600))
	at := t0
	tw, err := newTraceWriter(dir, func() time.Time { return at })
	if err != nil {
		t.Fatal(err)
	}
	post := httptest.NewRequest(http.MethodPost, "/v1/messages?beta=true", nil)
	post.Header = http.Header{"X-Api-Key": {"sk-secret"}, "Authorization": {"Bearer sk"}, "Anthropic-Beta": {"a,b"},
		"Anthropic-Version": {"2023-06-01"}, "Cookie": {"c"}, "X-Claude-Code-Session-Id": {"s1"}, "X-Goog-Api-Key": {"k"}}
	tw.record(post, []byte(`{"model":"m"}`))
	at = t0.Add(90 * time.Second)
	tw.record(httptest.NewRequest(http.MethodGet, "/v1/models", nil), nil)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []map[string]json.RawMessage
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range lines[0] {
			if !yield(k) {
				return
			}
		}
	})
	if want := []string{"at", "body", "header", "method", "n", "path"}; !reflect.DeepEqual(keys, want) {
		t.Errorf("fields %v, want %v", keys, want)
	}
	want := []traceLine{
		{N: 1, At: "2026-11-30T09:00:00.123456789Z", Method: "POST", Path: "/v1/messages", Body: "0001.json",
			Header: http.Header{"Anthropic-Beta": {"a,b"}, "Anthropic-Version": {"2023-06-01"}, "X-Claude-Code-Session-Id": {"s1"}}},
		{N: 2, At: "2026-11-30T09:01:30.123456789Z", Method: "GET", Path: "/v1/models", Header: http.Header{}, Body: "0002.json"},
	}
	for i, m := range lines {
		b, _ := json.Marshal(m)
		var got traceLine
		json.Unmarshal(b, &got)
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("line %d: %+v\nwant %+v", i+1, got, want[i])
		}
		if at, err := time.Parse(time.RFC3339Nano, got.At); err != nil || !at.Equal(t0.Add(time.Duration(i)*90*time.Second)) {
			t.Errorf("line %d: at %q (%v)", i+1, got.At, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "0001.json")); err != nil || string(b) != `{"model":"m"}` {
		t.Errorf("0001.json: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "0002.json")); err != nil || len(b) != 0 {
		t.Errorf("0002.json (a GET): %q, %v, want an empty file", b, err)
	}
}

// The regimes' pauses: warm's slow build stays under the 5-minute cache
// lifetime, cold's and ttl1h's pass it; only ttl1h asks for long caches.
// A task of the regime sleeps its slow build for that session time.
func TestRegimes(t *testing.T) {
	for name, want := range map[string]regime{
		"warm":  {slowBuild: time.Minute},
		"cold":  {slowBuild: 6 * time.Minute},
		"ttl1h": {slowBuild: 6 * time.Minute, longCache: true},
	} {
		rg := regimeOf(name)
		if rg != want {
			t.Errorf("%s: %+v, want %+v", name, rg, want)
		}
		if warm := rg.slowBuild < 5*time.Minute; warm != (name == "warm") {
			t.Errorf("%s: the slow build of %v", name, rg.slowBuild)
		}
		m := fakeupstream.NewLongTask(fakeupstream.LongTaskOptions{Steps: 30, SlowBuild: rg.slowBuild, Chained: true})
		if st := m.Step(17); st.Kind != fakeupstream.KindBuild || st.Duration != rg.slowBuild {
			t.Errorf("%s: step 17 is a %s of %v", name, st.Kind, st.Duration)
		}
	}
}

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags([]string{"-matrix"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	cells := cfg.cells()
	// Claude: 3 regimes × 3 lengths × 2 outputs × 2 thinking; Codex
	// without thinking: 18.
	if len(cells) != 36+18 || cfg.Runs != 3 || cfg.single() {
		t.Errorf("-matrix: %d cells, %d runs", len(cells), cfg.Runs)
	}
	for _, c := range cells {
		if c.Client == "codex" && c.Thinking {
			t.Errorf("cell %s: Codex runs with thinking off only", c)
		}
	}
	cfg, err = parseFlags([]string{"-matrix", "-client", "claude", "-regime", "warm,cold", "-steps", "120", "-thinking=off", "-runs", "2", "--", "--max-age", "15m"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cfg.cells() {
		names = append(names, c.String())
	}
	if want := []string{"claude/warm/120/small/off", "claude/warm/120/large/off", "claude/cold/120/small/off", "claude/cold/120/large/off"}; !reflect.DeepEqual(names, want) || cfg.Runs != 2 || !reflect.DeepEqual(cfg.ProxyArgs, []string{"--max-age", "15m"}) {
		t.Errorf("cells %v, runs %d, proxy args %q", names, cfg.Runs, cfg.ProxyArgs)
	}
	// Without -matrix: today's single run, -thinking a plain switch.
	cfg, err = parseFlags([]string{"-client", "codex", "-steps", "30", "-thinking"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c := cfg.cells(); len(c) != 1 || c[0] != (cell{"codex", "cold", 30, "large", false}) || !cfg.single() {
		t.Errorf("cells %v: want Codex's cell with thinking off", c)
	}
	cfg, _ = parseFlags([]string{"-client", "claude", "-steps", "30", "-thinking", "-outputs", "small", "-regime", "ttl1h"}, &bytes.Buffer{})
	if c := cfg.cells(); len(c) != 1 || c[0] != (cell{"claude", "ttl1h", 30, "small", true}) || !cfg.single() {
		t.Errorf("cells %v", c)
	}
	cfg, _ = parseFlags([]string{"-steps", "30"}, &bytes.Buffer{})
	if len(cfg.cells()) != 2 || !cfg.single() || cfg.runDir("/t", cfg.cells()[1], 1) != "/t" {
		t.Errorf("both clients, one run: %v, single %v", cfg.cells(), cfg.single())
	}
	cfg, err = parseFlags([]string{"-cells", "claude/warm/120/large/off, codex/ttl1h/30/small/off"}, &bytes.Buffer{})
	if err != nil || len(cfg.cells()) != 2 || cfg.cells()[1] != (cell{"codex", "ttl1h", 30, "small", false}) {
		t.Errorf("-cells: %v, %v", cfg.cells(), err)
	}
	if got := cfg.runDir("/t", cfg.cells()[1], 2); got != "/t/codex-ttl1h-30-small-off/2" {
		t.Errorf("runDir %q", got)
	}
	for _, bad := range [][]string{{"-regime", "hot"}, {"-outputs", "huge"}, {"-steps", "0"}, {"-cells", "claude/warm/120/large"}, {"-thinking=maybe"}, {"-arms", "both"}, {"-runs", "0"}} {
		if _, err := parseFlags(bad, &bytes.Buffer{}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// The per-cell table: medians of each arm, the median ratio and its
// spread, rejections, correct answers and read-backs.
func TestSummarize(t *testing.T) {
	c := cell{"claude", "warm", 30, "small", false}
	var res []result
	for i, bills := range [][2]float64{{2, 1.6}, {2, 1.0}, {4, 4.4}} {
		res = append(res,
			result{Cell: c, Run: i + 1, Arm: "direct", Bill: fakeupstream.Totals{USD: bills[0]}, OK: true},
			result{Cell: c, Run: i + 1, Arm: "proxy", Bill: fakeupstream.Totals{USD: bills[1], Rejections: i}, OK: i != 1,
				Stats: fakeupstream.LongTaskStats{ReadBacks: 2 * i}})
	}
	var w strings.Builder
	summarize(&w, []cell{c}, res)
	want := "| claude/warm/30/small/off | 3 | 2.0000 | 1.6000 | 0.80× | 0.50–1.10 | 0 / 3 | 3/3 / 2/3 | 0 / 2 |"
	if !strings.Contains(w.String(), want) {
		t.Errorf("got\n%s\nwant the row\n%s", w.String(), want)
	}
	if m := median([]float64{3, 1, 2, 10}); m != 2.5 {
		t.Errorf("median %v", m)
	}
}

// checkTrace checks the trace of one arm of the smoke: its requests in
// order, with their bodies, no credentials, and the long cache lifetimes
// asked on every model request.
func checkTrace(t *testing.T, dir, client string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	models, prev := 0, time.Time{}
	for i, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var line traceLine
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("%s line %d: %v", dir, i+1, err)
		}
		at, err := time.Parse(time.RFC3339Nano, line.At)
		if line.N != i+1 || err != nil || at.Before(prev) {
			t.Errorf("%s line %d: n %d, at %q (%v)", dir, i+1, line.N, line.At, err)
		}
		prev = at
		for k := range line.Header {
			if secretHeader(k) {
				t.Errorf("%s line %d: header %s recorded", dir, i+1, k)
			}
		}
		if line.Method != http.MethodPost || line.Path != "/v1/messages" && line.Path != "/v1/responses" {
			continue
		}
		body, err := os.ReadFile(filepath.Join(dir, line.Body))
		if err != nil {
			t.Fatal(err)
		}
		models++
		if client == "codex" && !bytes.Contains(body, []byte(`"prompt_cache_retention":"24h"`)) {
			t.Errorf("%s %s: no prompt_cache_retention 24h", dir, line.Body)
		}
		if client == "claude" && bytes.Count(body, []byte(`"cache_control"`)) != bytes.Count(body, []byte(`"ttl":"1h"`)) {
			t.Errorf("%s %s: a breakpoint without the 1-hour ttl", dir, line.Body)
		}
	}
	if models < 4 {
		t.Errorf("%s: %d model requests recorded", dir, models)
	}
}
