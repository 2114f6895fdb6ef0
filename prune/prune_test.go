package prune_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/prune"
)

// Contents used by the seed's examples.
const (
	okOut   = `{"stdout":"Building project...\nDone in 3.2s","stderr":"","exitCode":0}`
	errOut  = `{"stdout":"","stderr":"Error: Cannot find module 'xxx'","exitCode":1}`
	fileOut = "File content: package main\n\nfunc main() {}\n" // filesystem-read: no command output features
)

const (
	terminal = "terminal-execute"
	fsRead   = "filesystem-read"
)

// at parses a time of the seed's examples, "2026-01-31 01:00:00[.000]", as UTC.
func at(t testing.TB, s string) time.Time {
	t.Helper()
	if !strings.Contains(s, "-") {
		s = "2026-01-31 " + s
	}
	ts, err := time.Parse("2006-01-02 15:04:05", s)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// res is one tool call and its result in a test history.
type res struct {
	label   string // the result's id is "id-<label>"
	at      string // timestamp; "" means none
	tool    string
	content string
	status  string // messageStatus
	isError bool   // is_error (Anthropic shape only)
}

type shape int

const (
	openAI shape = iota
	anthropic
)

func (s shape) String() string { return [...]string{"openai", "anthropic"}[s] }

// history builds the messages for rs, oldest first: per result an assistant
// message with the call and a message with the result.
func history(t testing.TB, sh shape, rs []res) []agentctx.Message {
	t.Helper()
	var raw []any
	for _, r := range rs {
		id := "id-" + r.label
		input := map[string]any{"command": "npm run build #" + r.label}
		var call, result map[string]any
		switch sh {
		case openAI:
			args, _ := json.Marshal(input)
			call = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
				map[string]any{"id": id, "type": "function", "function": map[string]any{"name": r.tool, "arguments": string(args)}},
			}}
			result = map[string]any{"role": "tool", "tool_call_id": id, "content": r.content}
		case anthropic:
			call = map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "text", "text": "running " + r.label},
				map[string]any{"type": "tool_use", "id": id, "name": r.tool, "input": input},
			}}
			block := map[string]any{"type": "tool_result", "tool_use_id": id, "content": r.content}
			if r.isError {
				block["is_error"] = true
			}
			result = map[string]any{"role": "user", "content": []any{block}}
		}
		if r.at != "" {
			result["timestamp"] = at(t, r.at).UnixMilli()
		}
		if r.status != "" {
			result["messageStatus"] = r.status
		}
		raw = append(raw, call, result)
	}
	return decode(t, raw)
}

func decode(t testing.TB, v any) []agentctx.Message {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := agentctx.UnmarshalMessages(data)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func encode(t testing.TB, msgs []agentctx.Message) string {
	t.Helper()
	data, err := agentctx.MarshalMessages(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// prunedLabels returns the labels of the pruned results, oldest first.
func prunedLabels(r prune.Result) []string {
	labels := []string{}
	for _, p := range r.Pruned {
		labels = append(labels, strings.TrimPrefix(p.ID, "id-"))
	}
	return labels
}

func clock(t time.Time) func() time.Time { return func() time.Time { return t } }

// newer returns n successful terminal results at the given times.
func newer(times ...string) []res {
	var rs []res
	for i, ts := range times {
		rs = append(rs, res{label: fmt.Sprintf("n%d", i+1), at: ts, tool: terminal, content: okOut})
	}
	return rs
}

func cat(parts ...[]res) []res { return slices.Concat(parts...) }

// seedExamples are the worked examples 1–9 of seed 004 §3.
var seedExamples = []struct {
	name string
	now  string
	rs   []res
	opts prune.Options
	want []string // labels pruned, oldest first
}{
	{
		name: "1 stale success outside the 5 most recent is pruned",
		now:  "01:20:00",
		rs:   cat([]res{{label: "x", at: "01:00:00", tool: terminal, content: okOut}}, newer("01:01:00", "01:02:00", "01:03:00", "01:04:00", "01:05:00")),
		want: []string{"x"},
	},
	{
		name: "2 stale success among the 5 most recent is kept",
		now:  "01:20:00",
		rs:   cat([]res{{label: "x", at: "01:00:00", tool: terminal, content: okOut}}, newer("01:01:00", "01:02:00", "01:03:00", "01:04:00")),
		want: []string{},
	},
	{
		name: "3 stale error is kept",
		now:  "01:20:00",
		rs:   cat([]res{{label: "x", at: "01:00:00", tool: terminal, content: errOut}}, newer("01:01:00", "01:02:00", "01:03:00", "01:04:00", "01:05:00")),
		want: []string{},
	},
	{
		name: "4 success within 15 minutes is kept",
		now:  "01:35:00",
		rs:   cat(newer("01:10:00", "01:11:00", "01:12:00", "01:13:00"), []res{{label: "x", at: "01:30:00", tool: terminal, content: okOut}}),
		want: []string{},
	},
	{
		name: "4 success within 15 minutes is kept even outside the 5 most recent",
		now:  "01:35:00",
		rs:   cat([]res{{label: "x", at: "01:30:00", tool: terminal, content: okOut}}, newer("01:31:00", "01:32:00", "01:33:00", "01:34:00", "01:34:30")),
		want: []string{},
	},
	{
		name: "5 mixed history prunes items 7 and 8",
		now:  "02:00:00",
		rs: []res{ // the seed lists them newest first; a history is oldest first
			{label: "10", at: "00:30:00", tool: terminal, content: errOut},
			{label: "9", at: "00:40:00", tool: fsRead, content: fileOut},
			{label: "8", at: "00:50:00", tool: terminal, content: okOut},
			{label: "7", at: "01:20:00", tool: terminal, content: okOut},
			{label: "6", at: "01:30:00", tool: terminal, content: okOut},
			{label: "5", at: "01:35:00", tool: terminal, content: okOut},
			{label: "4", at: "01:40:00", tool: terminal, content: errOut},
			{label: "3", at: "01:45:00", tool: terminal, content: okOut},
			{label: "2", at: "01:50:00", tool: terminal, content: okOut},
			{label: "1", at: "01:55:00", tool: fsRead, content: fileOut},
		},
		want: []string{"8", "7"},
	},
	{
		name: "6 other tools are not pruned",
		now:  "01:00:00",
		rs:   cat([]res{{label: "x", at: "00:30:00", tool: fsRead, content: strings.Repeat("line of a large file\n", 500)}}, newer("00:31:00", "00:32:00", "00:33:00", "00:34:00", "00:35:00")),
		want: []string{},
	},
	{
		name: "7 15:00.001 old is pruned",
		now:  "01:00:00.000",
		rs:   cat([]res{{label: "x", at: "00:44:59.999", tool: terminal, content: okOut}}, newer("00:50:00", "00:51:00", "00:52:00", "00:53:00", "00:54:00")),
		want: []string{"x"},
	},
	{
		name: "8 exactly 15:00.000 old is kept",
		now:  "01:00:00.000",
		rs:   cat([]res{{label: "x", at: "00:45:00.000", tool: terminal, content: okOut}}, newer("00:50:00", "00:51:00", "00:52:00", "00:53:00", "00:54:00")),
		want: []string{},
	},
	{
		name: "9 stale success is pruned in the view (storage: TestExample9Persistence)",
		now:  "01:20:00",
		rs:   cat([]res{{label: "x", at: "01:00:00", tool: terminal, content: okOut}}, newer("01:01:00", "01:02:00", "01:03:00", "01:04:00", "01:05:00")),
		want: []string{"x"},
	},
}

func TestSeedExamples(t *testing.T) {
	for _, sh := range []shape{openAI, anthropic} {
		for _, tc := range seedExamples {
			t.Run(sh.String()+"/"+tc.name, func(t *testing.T) {
				msgs := history(t, sh, tc.rs)
				before := encode(t, msgs)
				opts := tc.opts
				opts.Now = clock(at(t, tc.now))
				got := prune.Prune(msgs, opts)

				if labels := prunedLabels(got); !slices.Equal(labels, tc.want) {
					t.Fatalf("pruned %v, want %v", labels, tc.want)
				}
				if got.PrunedCount != len(tc.want) {
					t.Errorf("PrunedCount = %d, want %d", got.PrunedCount, len(tc.want))
				}
				checkView(t, msgs, got)
				if after := encode(t, msgs); after != before {
					t.Errorf("input modified:\nbefore %s\nafter  %s", before, after)
				}
			})
		}
	}
}

// checkView checks that the view differs from the input exactly in the
// content of the pruned results, which hold the default placeholder.
func checkView(t *testing.T, in []agentctx.Message, got prune.Result) {
	t.Helper()
	if len(got.Messages) != len(in) {
		t.Fatalf("view has %d messages, input %d", len(got.Messages), len(in))
	}
	pruned := map[[2]int]bool{}
	for _, p := range got.Pruned {
		pruned[[2]int{p.MessageIndex, p.BlockIndex}] = true
	}
	orig := map[[2]int]agentctx.ToolResult{}
	for r := range agentctx.ToolResults(in) {
		orig[[2]int{r.Message, r.Block}] = r
	}
	n := 0
	for r := range agentctx.ToolResults(got.Messages) {
		n++
		key := [2]int{r.Message, r.Block}
		want := orig[key].Content
		if pruned[key] {
			want = agentctx.Text(prune.DefaultPlaceholder)
		}
		if !r.Content.Equal(want) {
			t.Errorf("result %v: content %q, want %q", key, r.Content.AsText(), want.AsText())
		}
	}
	if n != len(orig) {
		t.Errorf("view has %d tool results, input %d", n, len(orig))
	}
	// Everything but the content of pruned results is unchanged.
	restored := agentctx.MapToolResults(got.Messages, func(r agentctx.ToolResult) (agentctx.Content, bool) {
		return orig[[2]int{r.Message, r.Block}].Content, pruned[[2]int{r.Message, r.Block}]
	})
	if a, b := encode(t, restored), encode(t, in); a != b {
		t.Errorf("view differs from the input beyond the pruned contents:\nview  %s\ninput %s", a, b)
	}
}

// TestExample9Persistence is seed 004's example 9 with its exact records:
// the view sent to the API holds the placeholder, the stored record keeps
// the original content, and a restored session is pruned again.
func TestExample9Persistence(t *testing.T) {
	const stored = `{"content":"{\"stdout\":\"Building project...\\nDone in 3.2s\",\"stderr\":\"\",\"exitCode\":0}","timestamp":1738287600000,"role":"tool"}`
	const sent = `{"content":"此命令返回内容已过时","timestamp":1738287600000,"role":"tool"}`
	// The seed's record has no tool_call_id; five newer results follow it.
	doc := "[" + stored
	for i := 1; i <= 5; i++ {
		doc += fmt.Sprintf(`,{"content":"{\"stdout\":\"ok %d\"}","timestamp":%d,"role":"tool"}`, i, 1738287600000+int64(i)*60000)
	}
	doc += "]"
	now := time.UnixMilli(1738287600000).Add(20 * time.Minute)

	for session := 1; session <= 2; session++ { // 2: the session restored from storage
		msgs, err := agentctx.UnmarshalMessages([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		got := prune.Prune(msgs, prune.Options{Now: clock(now)})
		if got.PrunedCount != 1 {
			t.Fatalf("session %d: pruned %d results, want 1", session, got.PrunedCount)
		}
		view, err := got.Messages[0].MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if string(view) != sent {
			t.Errorf("session %d: sent %s\nwant %s", session, view, sent)
		}
		persisted := encode(t, msgs)
		if persisted != doc {
			t.Errorf("session %d: storage changed:\n%s\nwant\n%s", session, persisted, doc)
		}
		doc = persisted
	}
}

// TestNoSharedMemory guards against the seed implementation's bug: it
// copied the message list shallowly and then assigned the placeholder to
// the shared message objects, which corrupted the stored history. Here a
// caller that even writes to the view's changed messages cannot reach the
// input.
func TestNoSharedMemory(t *testing.T) {
	for _, sh := range []shape{openAI, anthropic} {
		t.Run(sh.String(), func(t *testing.T) {
			rs := cat([]res{{label: "x", at: "01:00:00", tool: terminal, content: okOut}}, newer("01:01:00", "01:02:00", "01:03:00", "01:04:00", "01:05:00"))
			msgs := history(t, sh, rs)
			before := encode(t, msgs)
			snapshot := slices.Clone(msgs)

			got := prune.Prune(msgs, prune.Options{Now: clock(at(t, "01:20:00"))})
			if got.PrunedCount != 1 {
				t.Fatalf("pruned %d, want 1", got.PrunedCount)
			}
			p := got.Pruned[0]

			// The input list and its message values are untouched.
			for i := range msgs {
				if !msgs[i].Content.Equal(snapshot[i].Content) {
					t.Errorf("message %d content changed", i)
				}
			}
			if r := msgs[p.MessageIndex]; sh == anthropic && r.Content.Blocks()[p.BlockIndex].Content.Text() != okOut {
				t.Errorf("stored tool_result now holds %q", r.Content.Blocks()[p.BlockIndex].Content.Text())
			}
			if sh == openAI && msgs[p.MessageIndex].Content.Text() != okOut {
				t.Errorf("stored tool message now holds %q", msgs[p.MessageIndex].Content.Text())
			}

			// Writing through the view's changed message does not reach the input.
			view := got.Messages[p.MessageIndex]
			if bs := view.Content.Blocks(); len(bs) > 0 {
				bs[0].Content = agentctx.Text("scribbled")
				bs[0].ToolUseID = "scribbled"
			}
			got.Messages[p.MessageIndex] = agentctx.Message{Role: "scribbled"}
			if after := encode(t, msgs); after != before {
				t.Errorf("input modified through the view:\nbefore %s\nafter  %s", before, after)
			}

			// The view is a new list: appending to it cannot write into msgs.
			if len(msgs) > 0 && &got.Messages[0] == &msgs[0] {
				t.Error("view shares the input's backing array")
			}
		})
	}
}

// TestNoSharedMemoryNested checks that the parts of a changed message that
// were not pruned are copies too: writing into a kept result's nested blocks
// in the view does not reach the input.
func TestNoSharedMemoryNested(t *testing.T) {
	msgs := decode(t, []any{
		map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "tool_use", "id": "a", "name": terminal, "input": map[string]any{}},
			map[string]any{"type": "tool_use", "id": "b", "name": terminal, "input": map[string]any{}},
		}},
		map[string]any{"role": "user", "timestamp": at(t, "00:00:00").UnixMilli(), "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": "a", "content": okOut},
			map[string]any{"type": "tool_result", "tool_use_id": "b", "content": []any{map[string]any{"type": "text", "text": okOut}}},
		}},
	})
	before := encode(t, msgs)
	got := prune.Prune(msgs, prune.Options{KeepRecent: 1, Now: clock(at(t, "01:00:00"))})
	if labels := prunedLabels(got); !slices.Equal(labels, []string{"a"}) {
		t.Fatalf("pruned %v, want [a]", labels)
	}
	kept := got.Messages[1].Content.Blocks()[1]
	kept.Content.Blocks()[0].Text = "scribbled"
	if after := encode(t, msgs); after != before {
		t.Errorf("input modified through a kept block of a changed message:\nbefore %s\nafter  %s", before, after)
	}
}

func TestBlockResultsShareTimestamp(t *testing.T) {
	// One Anthropic user message answering six calls at once: they share a
	// timestamp and rank by position, later first, so only the first one
	// is outside the 5 most recent.
	var calls, results []any
	for i := range 6 {
		id := fmt.Sprintf("t%d", i)
		calls = append(calls, map[string]any{"type": "tool_use", "id": id, "name": terminal, "input": map[string]any{"command": "ls"}})
		results = append(results, map[string]any{"type": "tool_result", "tool_use_id": id, "content": "listing " + id})
	}
	msgs := decode(t, []any{
		map[string]any{"role": "assistant", "content": calls},
		map[string]any{"role": "user", "content": results, "timestamp": "2026-01-31T01:00:00Z", "extra": "kept"},
	})
	got := prune.Prune(msgs, prune.Options{Now: clock(at(t, "02:00:00"))})
	if len(got.Pruned) != 1 {
		t.Fatalf("pruned %+v, want t0 only", got.Pruned)
	}
	if want := []prune.Pruned{{
		MessageIndex: 1, BlockIndex: 0, ID: "t0", ToolName: terminal, Timestamp: at(t, "01:00:00"),
		Chars: 10, Tokens: got.Pruned[0].Tokens, FreedChars: 0, FreedTokens: got.Pruned[0].FreedTokens,
	}}; !slices.Equal(got.Pruned, want) {
		t.Fatalf("pruned %+v\nwant %+v", got.Pruned, want)
	}
	s := encode(t, got.Messages[1:])
	for _, want := range []string{
		`{"content":"此命令返回内容已过时","tool_use_id":"t0","type":"tool_result"}`,
		`{"content":"listing t1","tool_use_id":"t1","type":"tool_result"}`,
		`"extra":"kept"`, `"timestamp":"2026-01-31T01:00:00Z"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("view message lacks %s: %s", want, s)
		}
	}
}

func TestErrorDetection(t *testing.T) {
	// Each case is one stale result (00:00) followed by five newer successes,
	// so it is pruned unless it is an error or not terminal output.
	cases := []struct {
		name   string
		r      res
		shapes []shape
		pruned bool
	}{
		{name: "success", r: res{content: `{"stdout":"hello","stderr":"","exitCode":0}`}, pruned: true},
		{name: "content starts with Error:", r: res{content: "Error: Command failed with exit code 1"}},
		{name: "messageStatus error", r: res{content: `{"stdout":"hello"}`, status: "error"}},
		{name: "messageStatus success", r: res{content: `{"stdout":"hello"}`, status: "success"}, pruned: true},
		{name: "stderr not empty", r: res{content: `{"stdout":"","stderr":"Connection refused","exitCode":1}`}},
		{name: "stderr not empty, exit 0", r: res{content: `{"stdout":"","stderr":"warning: x","exitCode":0}`}},
		{name: "exit code not 0", r: res{content: `{"stdout":"","stderr":"","exitCode":2}`}},
		{name: "exit code null", r: res{content: `{"stdout":"killed","exitCode":null}`}},
		{name: "exit code absent", r: res{content: `{"stdout":"Build completed"}`}, pruned: true},
		{name: "pretty printed", r: res{content: "{\n  \"stdout\": \"ok\",\n  \"stderr\": \"\",\n  \"exitCode\": 0\n}"}, pruned: true},
		{name: "pretty printed failure", r: res{content: "{\n  \"stdout\": \"\",\n  \"stderr\": \"boom\",\n  \"exitCode\": 1\n}"}},
		{name: "is_error", r: res{content: "Exit code 1\nFAIL", tool: "Bash", isError: true}, shapes: []shape{anthropic}},
		{name: "Bash success", r: res{content: "total 0\n", tool: "Bash"}, pruned: true},
		{name: "not terminal: file content", r: res{content: "File content: ...", tool: "filesystem-read"}},
		{name: "not terminal: path JSON", r: res{content: `{"path":"/path/to/file"}`, tool: "filesystem-read"}},
		{name: "features in text that is not JSON", r: res{content: `log: "stdout": redirected`, tool: "filesystem-read"}, pruned: true},
		{name: "features decide without a tool name", r: res{content: `{"stdout":"hello","stderr":"","exitCode":0}`, tool: "filesystem-read"}, pruned: true},
		{name: "features and stderr without a tool name", r: res{content: `{"stdout":"","stderr":"x"}`, tool: "filesystem-read"}},
	}
	for _, sh := range []shape{openAI, anthropic} {
		for _, tc := range cases {
			if tc.shapes != nil && !slices.Contains(tc.shapes, sh) {
				continue
			}
			t.Run(sh.String()+"/"+tc.name, func(t *testing.T) {
				r := tc.r
				r.label, r.at = "x", "00:00:00"
				if r.tool == "" {
					r.tool = terminal
				}
				msgs := history(t, sh, cat([]res{r}, newer("01:01:00", "01:02:00", "01:03:00", "01:04:00", "01:05:00")))
				got := prune.Prune(msgs, prune.Options{Now: clock(at(t, "02:00:00"))})
				if pruned := slices.Equal(prunedLabels(got), []string{"x"}); pruned != tc.pruned {
					t.Errorf("pruned = %v, want %v", pruned, tc.pruned)
				}
			})
		}
	}
}

func TestOptions(t *testing.T) {
	ex5 := seedExamples[5]
	if !strings.HasPrefix(ex5.name, "5 ") {
		t.Fatal("seedExamples[5] is not example 5")
	}
	cases := []struct {
		name string
		rs   []res
		now  string
		opts prune.Options
		want []string
	}{
		{name: "count errors in the window", rs: ex5.rs, now: ex5.now, opts: prune.Options{CountErrors: true}, want: []string{"8", "7", "6"}},
		{name: "keep 2", rs: ex5.rs, now: ex5.now, opts: prune.Options{KeepRecent: 2}, want: []string{"8", "7", "6", "5"}},
		{name: "keep none", rs: ex5.rs, now: ex5.now, opts: prune.Options{KeepRecent: -1}, want: []string{"8", "7", "6", "5"}},
		{name: "keep 10", rs: ex5.rs, now: ex5.now, opts: prune.Options{KeepRecent: 10}, want: []string{}},
		{name: "max age 1h", rs: ex5.rs, now: ex5.now, opts: prune.Options{MaxAge: time.Hour}, want: []string{"8"}},
		{name: "no age limit", rs: ex5.rs, now: ex5.now, opts: prune.Options{MaxAge: -1, KeepRecent: -1}, want: []string{"8", "7", "6", "5", "3", "2"}},
		{name: "filesystem-read named a terminal tool", rs: ex5.rs, now: ex5.now, opts: prune.Options{ToolNames: []string{terminal, fsRead}}, want: []string{"9", "8", "7"}},
		{
			name: "no tool names: only content decides", now: "02:00:00",
			rs:   cat([]res{{label: "a", at: "00:00:00", tool: terminal, content: "plain output"}, {label: "b", at: "00:00:01", tool: terminal, content: okOut}}, newer("01:01:00", "01:02:00", "01:03:00", "01:04:00", "01:05:00")),
			opts: prune.Options{ToolNames: []string{}}, want: []string{"b"},
		},
		{
			name: "default tool names, any case", now: "02:00:00",
			rs:   cat([]res{{label: "a", at: "00:00:00", tool: terminal, content: "plain output"}, {label: "b", at: "00:00:01", tool: "Bash", content: "plain"}, {label: "c", at: "00:00:02", tool: "bash", content: "plain"}, {label: "d", at: "00:00:03", tool: "Read", content: "plain"}}, newer("01:01:00", "01:02:00", "01:03:00", "01:04:00", "01:05:00")),
			want: []string{"a", "b", "c"},
		},
		{
			name: "results without timestamp are kept and take no slot", now: "02:00:00",
			rs:   cat([]res{{label: "a", at: "00:00:00", tool: terminal, content: okOut}, {label: "b", tool: terminal, content: okOut}}, newer("01:01:00", "01:02:00", "01:03:00", "01:04:00"), []res{{label: "c", tool: terminal, content: okOut}}),
			want: []string{},
		},
		{
			name: "future timestamps are not old", now: "02:00:00",
			rs:   cat([]res{{label: "a", at: "03:00:00", tool: terminal, content: okOut}}, newer("01:01:00", "01:02:00", "01:03:00", "01:04:00", "01:05:00")),
			opts: prune.Options{KeepRecent: -1}, want: []string{"n1", "n2", "n3", "n4", "n5"},
		},
	}
	for _, sh := range []shape{openAI, anthropic} {
		for _, tc := range cases {
			t.Run(sh.String()+"/"+tc.name, func(t *testing.T) {
				opts := tc.opts
				opts.Now = clock(at(t, tc.now))
				got := prune.Prune(history(t, sh, tc.rs), opts)
				if labels := prunedLabels(got); !slices.Equal(labels, tc.want) {
					t.Errorf("pruned %v, want %v", labels, tc.want)
				}
			})
		}
	}
}

func TestSkippedNoTimestamp(t *testing.T) {
	rs := cat([]res{{label: "a", tool: terminal, content: okOut}, {label: "b", tool: fsRead, content: fileOut}}, newer("01:01:00"))
	got := prune.Prune(history(t, anthropic, rs), prune.Options{Now: clock(at(t, "02:00:00"))})
	if got.SkippedNoTimestamp != 2 || got.PrunedCount != 0 {
		t.Errorf("SkippedNoTimestamp = %d, PrunedCount = %d; want 2, 0", got.SkippedNoTimestamp, got.PrunedCount)
	}
}

func TestPlaceholder(t *testing.T) {
	rs := cat([]res{{label: "x", at: "01:00:00", tool: terminal, content: okOut}, {label: "y", at: "01:00:30", tool: terminal, content: okOut}},
		newer("01:01:00", "01:02:00", "01:03:00", "01:04:00", "01:05:00"))
	now := at(t, "01:20:00")

	t.Run("fixed", func(t *testing.T) {
		got := prune.Prune(history(t, openAI, rs), prune.Options{Now: clock(now), Placeholder: "[stale]"})
		for _, p := range got.Pruned {
			if c := got.Messages[p.MessageIndex].Content.Text(); c != "[stale]" {
				t.Errorf("content %q", c)
			}
			if p.Chars != len(okOut) || p.FreedChars != p.Chars-7 {
				t.Errorf("Chars %d, FreedChars %d", p.Chars, p.FreedChars)
			}
		}
	})
	t.Run("func", func(t *testing.T) {
		var seen []prune.Stale
		got := prune.Prune(history(t, anthropic, rs), prune.Options{Now: clock(now), PlaceholderFunc: func(s prune.Stale) string {
			seen = append(seen, s)
			if s.Result.ID == "id-y" {
				return "" // falls back to Placeholder
			}
			return fmt.Sprintf("[%s output of %q pruned after %s; see artifact tool_result_%s]", s.ToolName, s.Command(), s.Age, s.Result.ID)
		}})
		if len(seen) != 2 || seen[0].Result.ID != "id-x" || seen[1].Result.ID != "id-y" {
			t.Fatalf("PlaceholderFunc saw %+v", seen)
		}
		if seen[0].Result.Content.Text() != okOut || !seen[0].Time.Equal(at(t, "01:00:00")) || seen[0].Age != 20*time.Minute {
			t.Errorf("Stale = %+v", seen[0])
		}
		want := `[terminal-execute output of "npm run build #x" pruned after 20m0s; see artifact tool_result_id-x]`
		p := got.Pruned[0]
		if c := got.Messages[p.MessageIndex].Content.Blocks()[p.BlockIndex].Content.Text(); c != want {
			t.Errorf("placeholder %q\nwant %q", c, want)
		}
		p = got.Pruned[1]
		if c := got.Messages[p.MessageIndex].Content.Blocks()[p.BlockIndex].Content.Text(); c != prune.DefaultPlaceholder {
			t.Errorf("fallback placeholder %q", c)
		}
	})
}

func TestStaleCommand(t *testing.T) {
	cases := map[string]string{
		`{"command":"go test ./..."}`:           "go test ./...",
		`{"cmd":["bash","-lc","ls -la"]}`:       "bash -lc ls -la",
		`{"cmd":"x","command":"y"}`:             "y",
		`{"command":1,"cmd":"fallback"}`:        "fallback",
		`{"path":"/tmp"}`:                       "",
		`"just a string"`:                       "",
		`{"command":`:                           "",
		``:                                      "",
		`{"command":"a","command":"last wins"}`: "last wins",
	}
	for in, want := range cases {
		if got := (prune.Stale{Input: json.RawMessage(in)}).Command(); got != want {
			t.Errorf("Command(%s) = %q, want %q", in, got, want)
		}
	}
}

// countRunes is a Counter that counts code points, to check the token report.
type countRunes struct{}

func (countRunes) Count(s string) int { return len([]rune(s)) }

func TestReport(t *testing.T) {
	rs := cat([]res{
		{label: "a", at: "00:10:00", tool: terminal, content: okOut},
		{label: "b", at: "00:20:00", tool: terminal, content: `{"stdout":"日本語"}`},
	}, newer("01:01:00", "01:02:00", "01:03:00", "01:04:00", "01:05:00"))
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	got := prune.Prune(history(t, openAI, rs), prune.Options{Now: clock(at(t, "02:00:00")), Counter: countRunes{}, Logger: logger})

	ph := len([]rune(prune.DefaultPlaceholder))
	want := []prune.Pruned{
		{MessageIndex: 1, BlockIndex: -1, ID: "id-a", ToolName: terminal, Timestamp: at(t, "00:10:00"), Chars: 71, Tokens: 71, FreedChars: 71 - ph, FreedTokens: 71 - ph},
		{MessageIndex: 3, BlockIndex: -1, ID: "id-b", ToolName: terminal, Timestamp: at(t, "00:20:00"), Chars: 16, Tokens: 16, FreedChars: 16 - ph, FreedTokens: 16 - ph},
	}
	if !slices.Equal(got.Pruned, want) {
		t.Errorf("Pruned = %+v\nwant %+v", got.Pruned, want)
	}
	if got.PrunedCount != 2 || got.FreedChars != 87-2*ph || got.FreedTokens != 87-2*ph {
		t.Errorf("PrunedCount %d FreedChars %d FreedTokens %d", got.PrunedCount, got.FreedChars, got.FreedTokens)
	}
	if n := strings.Count(logs.String(), "\n"); n != 1 || !strings.Contains(logs.String(), "pruned_count=2") {
		t.Errorf("log: %q", logs.String())
	}

	// Nothing pruned: no log line, empty (not nil) report.
	logs.Reset()
	got = prune.Prune(history(t, openAI, rs), prune.Options{Now: clock(at(t, "00:00:00")), Logger: logger})
	if got.Pruned == nil || got.PrunedCount != 0 || logs.Len() != 0 {
		t.Errorf("Pruned %v, log %q", got.Pruned, logs.String())
	}
	data, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		t.Fatal(err)
	}
	wantKeys := []string{"freed_chars", "freed_tokens", "messages", "pruned", "pruned_count", "skipped_no_timestamp"}
	if k := slices.Sorted(maps.Keys(keys)); !slices.Equal(k, wantKeys) || string(keys["pruned"]) != "[]" {
		t.Errorf("JSON keys %v, pruned %s", k, keys["pruned"])
	}
}

func TestDefaultCounter(t *testing.T) {
	rs := cat([]res{{label: "a", at: "00:10:00", tool: terminal, content: okOut}}, newer("01:01:00", "01:02:00", "01:03:00", "01:04:00", "01:05:00"))
	got := prune.Prune(history(t, openAI, rs), prune.Options{Now: clock(at(t, "02:00:00"))})
	if got.PrunedCount != 1 || got.Pruned[0].Tokens <= 0 || got.FreedTokens >= got.Pruned[0].Tokens || got.FreedTokens <= 0 {
		t.Errorf("tokens: %+v, freed %d", got.Pruned, got.FreedTokens)
	}
}

func TestEmptyAndOddInput(t *testing.T) {
	if got := prune.Prune(nil, prune.Options{}); got.Messages == nil || len(got.Messages) != 0 || got.Pruned == nil {
		t.Errorf("Prune(nil) = %+v", got)
	}
	// Results of every odd shape: no content, null, a block list, a raw
	// object, an unknown id, an unreadable timestamp.
	msgs := decode(t, []any{
		map[string]any{"role": "tool", "tool_call_id": "a", "timestamp": 0},
		map[string]any{"role": "tool", "tool_call_id": "b", "timestamp": 0, "content": nil},
		map[string]any{"role": "tool", "timestamp": 0, "content": []any{map[string]any{"type": "text", "text": okOut}}},
		map[string]any{"role": "tool", "timestamp": 0, "content": map[string]any{"stdout": "x", "exitCode": 0}},
		map[string]any{"role": "tool", "timestamp": "not a time", "content": okOut},
		map[string]any{"role": "tool", "timestamp": -9e16, "content": okOut},
		map[string]any{"role": "tool", "timestamp": 9e16, "content": okOut},
		map[string]any{"role": "user", "timestamp": 0, "content": []any{map[string]any{"type": "tool_result", "content": []any{map[string]any{"type": "text", "text": "Error: no"}}}}},
	})
	before := encode(t, msgs)
	got := prune.Prune(msgs, prune.Options{KeepRecent: -1, Now: clock(at(t, "02:00:00"))})
	if want := []int{2, 3}; !slices.Equal(prunedIndexes(got), want) {
		t.Errorf("pruned messages %v, want %v", prunedIndexes(got), want)
	}
	if got.SkippedNoTimestamp != 3 {
		t.Errorf("SkippedNoTimestamp = %d", got.SkippedNoTimestamp)
	}
	if encode(t, msgs) != before {
		t.Error("input modified")
	}
}

func prunedIndexes(r prune.Result) []int {
	var out []int
	for _, p := range r.Pruned {
		out = append(out, p.MessageIndex)
	}
	return out
}
