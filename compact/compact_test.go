package compact_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/tokens"
)

// F-001: token counting, through Check (the count Compact uses).
func TestCountTokens(t *testing.T) {
	enc := tokens.O200kBase()
	in := json.RawMessage(`{"path": "main.go"}`) // counted compact: {"path":"main.go"}
	tests := []struct {
		name string
		msgs string
		want int
	}{
		{"empty list", `[]`, 0},
		{"empty string", `[{"role":"user","content":""}]`, 0},
		{"string", `[{"role":"user","content":"hello world"}]`, enc.Count("hello world")},
		{"text blocks", `[{"role":"assistant","content":[{"type":"text","text":"hello"},{"type":"text","text":" world"}]}]`,
			enc.Count("hello") + enc.Count(" world")},
		{"tool_use name and input JSON", `[{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"read_file","input":` + string(in) + `}]}]`,
			enc.Count("read_file") + enc.Count(`{"path":"main.go"}`)},
		{"tool_result string", `[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"file body"}]}]`,
			enc.Count("file body")},
		{"tool_result blocks, recursively", `[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a b c"},{"type":"tool_result","tool_use_id":"x","content":"nested"}]}]}]`,
			enc.Count("a b c") + enc.Count("nested")},
		{"thinking", `[{"role":"assistant","content":[{"type":"thinking","thinking":"let me see","signature":"s"}]}]`,
			enc.Count("let me see")},
		{"unknown block skipped", `[{"role":"assistant","content":[{"type":"mystery","text":"not counted"},{"type":"text","text":"counted"}]}]`,
			enc.Count("counted")},
		{"image by estimate", `[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]}]`, tokens.AnthropicImageTokens},
		{"openai tool call", `[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"shell","arguments":"{\"cmd\":\"ls\"}"}}]},{"role":"tool","tool_call_id":"c1","content":"a.go"}]`,
			enc.Count("shell") + enc.Count(`{"cmd":"ls"}`) + enc.Count("a.go")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := compact.Check(parse(t, tc.msgs), compact.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Tokens != tc.want {
				t.Errorf("tokens = %d, want %d", got.Tokens, tc.want)
			}
		})
	}
}

func TestCountWarnsOnUnknownBlockOnce(t *testing.T) {
	var logs logBuffer
	msgs := parse(t, `[{"role":"assistant","content":[{"type":"mystery"},{"type":"mystery"},{"type":"other"}]}]`)
	compact.ShouldCompact(msgs, compact.Options{Logger: logs.logger()})
	if got := strings.Count(logs.String(), "unknown type not counted"); got != 2 {
		t.Errorf("%d warnings, want one per unknown type (2):\n%s", got, logs.String())
	}
}

func TestCountLargeMessage(t *testing.T) {
	// A 100K+ token message is counted normally.
	s := strings.Repeat("token ", 120_000)
	msgs := []agentctx.Message{agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(s))}
	got, err := compact.Check(msgs, compact.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := tokens.O200kBase().Count(s); got.Tokens != want || got.Tokens < 120_000 || got.ShouldCompact {
		t.Errorf("tokens = %d, should_compact %v; want %d, false", got.Tokens, got.ShouldCompact, want)
	}
}

// F-002: the trigger, ≥ limit × ratio.
func TestShouldCompact(t *testing.T) {
	tests := []struct {
		name   string
		msgs   []agentctx.Message
		opts   compact.Options
		want   bool
		thresh int
	}{
		{"empty list", nil, compact.Options{}, false, 184_000},
		{"empty list, zero threshold", []agentctx.Message{}, compact.Options{Limit: 1, Threshold: 1e-9}, false, 1},
		{"one below the default threshold", []agentctx.Message{user(183_999)}, compact.Options{}, false, 184_000},
		{"exactly the default threshold (≥)", []agentctx.Message{user(184_000)}, compact.Options{}, true, 184_000},
		{"over the default threshold", []agentctx.Message{sys(4_000), user(180_001)}, compact.Options{}, true, 184_000},
		{"custom limit and ratio, equal", []agentctx.Message{user(50), asst(40)}, compact.Options{Limit: 100, Threshold: 0.9}, true, 90},
		{"custom limit and ratio, below", []agentctx.Message{user(50), asst(39)}, compact.Options{Limit: 100, Threshold: 0.9}, false, 90},
		{"ratio with float noise (0.7 × 10)", []agentctx.Message{user(7)}, compact.Options{Limit: 10, Threshold: 0.7}, true, 7},
		{"fractional threshold rounds up", []agentctx.Message{user(2)}, compact.Options{Limit: 3, Threshold: 0.5}, true, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Counter = words{}
			if got := compact.ShouldCompact(tc.msgs, tc.opts); got != tc.want {
				t.Errorf("ShouldCompact = %v, want %v", got, tc.want)
			}
			chk, err := compact.Check(tc.msgs, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if chk.ShouldCompact != tc.want || chk.ThresholdTokens != tc.thresh {
				t.Errorf("Check = %+v, want should_compact %v, threshold_tokens %d", chk, tc.want, tc.thresh)
			}
		})
	}
}

func TestCheckRejectsInvalidOptions(t *testing.T) {
	for _, o := range []compact.Options{{Limit: -1}, {Threshold: -0.5}, {TailRatio: nan()}, {AttemptTimeout: -time.Second}} {
		if _, err := compact.Check(nil, o); !errors.Is(err, compact.ErrInvalidOption) {
			t.Errorf("Check(%+v) error = %v, want ErrInvalidOption", o, err)
		}
		if _, err := compact.Compact(context.Background(), nil, o); !errors.Is(err, compact.ErrInvalidOption) {
			t.Errorf("Compact(%+v) error = %v, want ErrInvalidOption", o, err)
		}
	}
}

func nan() float64 {
	var z float64
	return z / z
}

// F-003: head / middle / tail.
func TestSplit(t *testing.T) {
	tests := []struct {
		name       string
		msgs       []agentctx.Message
		tailTokens int // Limit 100 × TailRatio
		head, tail int // lengths; middle is the rest
	}{
		{"empty", nil, 10, 0, 0},
		{"one message is the tail", []agentctx.Message{user(50)}, 10, 0, 1},
		{"one system message is the tail", []agentctx.Message{sys(50)}, 10, 0, 1},
		{"no system: head empty", []agentctx.Message{user(5), asst(5), user(5), asst(5)}, 10, 0, 2},
		{"leading system messages are the head", []agentctx.Message{sys(5), sys(5), user(5), asst(5), user(5), asst(5)}, 10, 2, 2},
		{"a later system message is not head", []agentctx.Message{sys(5), user(5), sys(5), asst(5), user(5), asst(5)}, 10, 1, 2},
		{"tail stops once it reaches the budget (≥)", []agentctx.Message{user(5), asst(3), user(3), asst(4)}, 10, 0, 3},
		{"last message overshoots and is kept whole", []agentctx.Message{user(5), asst(5), user(5), asst(30)}, 10, 0, 1},
		{"overshoot on the second message", []agentctx.Message{user(5), asst(5), user(30), asst(4)}, 10, 0, 2},
		{"tail never reaches into the head", []agentctx.Message{sys(50), user(2), asst(2)}, 10, 1, 2},
		{"head and tail cover all: no middle", []agentctx.Message{sys(5), user(20)}, 10, 1, 1},
		{"zero budget keeps the last message", []agentctx.Message{user(5), asst(5), user(5)}, 0, 0, 1},
		{"all system messages: last is tail", []agentctx.Message{sys(5), sys(5), sys(5)}, 0, 2, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ratio := float64(tc.tailTokens) / 100
			if tc.tailTokens == 0 {
				ratio = -1
			}
			before := mustJSON(t, tc.msgs)
			p := compact.Split(tc.msgs, compact.Options{Limit: 100, TailRatio: ratio, Counter: words{}})
			if len(p.Head) != tc.head || len(p.Tail) != tc.tail || len(p.Head)+len(p.Middle)+len(p.Tail) != len(tc.msgs) {
				t.Fatalf("split = %d/%d/%d, want %d/%d/%d", len(p.Head), len(p.Middle), len(p.Tail), tc.head, len(tc.msgs)-tc.head-tc.tail, tc.tail)
			}
			if mustJSON(t, tc.msgs) != before {
				t.Error("Split modified its input")
			}
			// The parts are windows of the input; appending to one does not
			// write into the next.
			if len(p.Head) > 0 {
				_ = append(p.Head, user(1))
				if mustJSON(t, tc.msgs) != before {
					t.Error("appending to Head wrote into the input")
				}
			}
		})
	}
}

// Beyond the seed: the cut never separates a call from its result.
func TestSplitKeepsToolPairs(t *testing.T) {
	tests := []struct {
		name string
		msgs []agentctx.Message
		tail int
	}{
		{"anthropic: result would start the tail", []agentctx.Message{
			user(5), call(1, "a"), result(20, "a"), asst(1)}, 3},
		{"anthropic: parallel calls with thinking", []agentctx.Message{
			user(5), asst(5), call(1, "a", "b", "c"), result(20, "a", "b", "c"), asst(1)}, 3},
		{"openai: parallel tool messages", []agentctx.Message{
			user(5), asst(5), oaCall("x", "y"), oaResult(3, "x"), oaResult(20, "y"), asst(1)}, 4},
		{"openai: cut between two tool messages", []agentctx.Message{
			user(5), oaCall("x", "y"), oaResult(20, "x"), oaResult(3, "y")}, 3},
		{"chain of calls: only the nearest call joins", []agentctx.Message{
			user(5), call(1, "a"), result(1, "a"), call(1, "b"), result(20, "b")}, 2},
		{"the cut may not move into the head", []agentctx.Message{
			sys(3), call(1, "a"), result(20, "a")}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if rep := agentctx.ValidatePairing(tc.msgs); !rep.Valid {
				t.Fatalf("test input is not paired: %v", rep.Err())
			}
			p := compact.Split(tc.msgs, compact.Options{Limit: 100, TailRatio: 0.1, Counter: words{}})
			if len(p.Tail) != tc.tail {
				t.Errorf("tail has %d messages, want %d", len(p.Tail), tc.tail)
			}
			out := append(append(slices.Clone(p.Head), agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("summary"))), p.Tail...)
			if rep := agentctx.ValidatePairing(out); !rep.Valid {
				t.Errorf("head + summary + tail is not paired: %v", rep.Err())
			}
		})
	}
}

// F-005 and the whole flow: head + summary + tail, a new list, the input
// unchanged.
func TestCompactAssembles(t *testing.T) {
	msgs := []agentctx.Message{sys(10), user(40), asst(40), user(40), asst(40), user(5), asst(10)}
	before := mustJSON(t, msgs)
	o := baseOpts(t)
	o.Limit, o.Threshold, o.TailRatio = 200, 0.9, 0.05 // trigger 180, tail 10
	o.Summarizer = &fakeSummarizer{script: []any{"THE SUMMARY"}}
	o.MaxPointers = -1 // the summary as written (pointers: TestCompactPointers)
	res, err := compact.Compact(context.Background(), msgs, o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Compacted {
		t.Fatalf("not compacted: %+v", res)
	}
	if len(res.Messages) != 3 {
		t.Fatalf("got %d messages, want head + summary + tail = 3", len(res.Messages))
	}
	if res.Messages[0].Role != agentctx.RoleSystem || res.Messages[2].Content.Text() != text(10) {
		t.Errorf("head or tail not kept: %s", mustJSON(t, res.Messages))
	}
	sm := res.Messages[1]
	if sm.Role != agentctx.RoleUser || !sm.Content.IsText() || sm.Content.Text() != "THE SUMMARY" || res.Summary != "THE SUMMARY" {
		t.Errorf("summary message = %s, want {role: user, content: THE SUMMARY}", mustJSON(t, res.Messages[1:2]))
	}
	if got, _ := json.Marshal(sm); string(got) != `{"role":"user","content":"THE SUMMARY"}` {
		t.Errorf("summary message JSON = %s", got)
	}
	if mustJSON(t, msgs) != before {
		t.Error("Compact modified its input")
	}
	want := compact.Stats{
		OriginalTokenCount:    185,
		CompactedTokenCount:   10 + 2 + 10,
		CompactionRatio:       22.0 / 185,
		CompactedMessageCount: 5,
		RetainedMessageCount:  2,
	}
	if res.Stats != want {
		t.Errorf("stats = %+v, want %+v", res.Stats, want)
	}
	if !res.BelowThreshold || res.Reason != "" || res.Tokens != 22 || res.ThresholdTokens != 180 || res.Attempts != 1 {
		t.Errorf("progress = below %v reason %q tokens %d threshold %d attempts %d", res.BelowThreshold, res.Reason, res.Tokens, res.ThresholdTokens, res.Attempts)
	}
	// Appending to the result never touches the input.
	_ = append(res.Messages, user(1))
	if mustJSON(t, msgs) != before {
		t.Error("appending to the result modified the input")
	}
}

func TestCompactEdges(t *testing.T) {
	tests := []struct {
		name      string
		msgs      []agentctx.Message
		force     bool
		compacted bool
		reason    compact.Reason
		below     bool
		outLen    int
	}{
		{"empty list", nil, true, false, compact.ReasonEmpty, true, 0},
		{"below the threshold", []agentctx.Message{user(10), asst(10)}, false, false, compact.ReasonBelowThreshold, true, 2},
		{"forced below the threshold", []agentctx.Message{user(10), asst(10), user(10)}, true, true, "", true, 2},
		{"no middle (head + tail cover all)", []agentctx.Message{sys(10), user(500)}, false, false, compact.ReasonNothingToCompact, false, 2},
		{"single message over the threshold", []agentctx.Message{user(500)}, false, false, compact.ReasonNothingToCompact, false, 1},
		{"head empty: summary comes first", []agentctx.Message{user(100), asst(100), user(20)}, false, true, "", true, 2},
		{"tail alone over the threshold", []agentctx.Message{sys(1), user(100), asst(100), user(300)}, false, true, compact.ReasonRetainedOverThreshold, false, 3},
		{"only a previous summary in the middle", []agentctx.Message{
			agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(compact.SummaryTitle+"\n"+text(50))), user(300)},
			false, false, compact.ReasonNothingToCompact, false, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOpts(t)
			o.Limit, o.Threshold, o.TailRatio = 200, 0.9, 0.05
			o.Force = tc.force
			o.Summarizer = &fakeSummarizer{script: []any{"S"}}
			o.MaxPointers = -1
			res, err := compact.Compact(context.Background(), tc.msgs, o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Compacted != tc.compacted || res.Reason != tc.reason || res.BelowThreshold != tc.below || len(res.Messages) != tc.outLen {
				t.Errorf("compacted %v reason %q below %v len %d; want %v %q %v %d",
					res.Compacted, res.Reason, res.BelowThreshold, len(res.Messages), tc.compacted, tc.reason, tc.below, tc.outLen)
			}
			if res.Messages == nil {
				t.Error("Messages is nil")
			}
			if !tc.compacted {
				if res.Stats != (compact.Stats{}) || res.Summary != "" || res.Archive != "" {
					t.Errorf("not compacted but stats %+v summary %q archive %q", res.Stats, res.Summary, res.Archive)
				}
				if mustJSON(t, res.Messages) != mustJSON(t, tc.msgs) {
					t.Error("not compacted but the messages changed")
				}
			}
			if tc.compacted && tc.outLen > 0 && res.Messages[0].Role == agentctx.RoleUser && res.Messages[0].Content.Text() != "S" && len(tc.msgs) > 0 && tc.msgs[0].Role != agentctx.RoleSystem {
				t.Errorf("with no head the summary should come first: %s", mustJSON(t, res.Messages))
			}
		})
	}
}

// F-006: the archive is written first, named by the clock and a sequence.
func TestCompactArchive(t *testing.T) {
	msgs := []agentctx.Message{sys(1), user(100), asst(100), user(20)}
	o := baseOpts(t)
	o.Limit, o.Threshold, o.TailRatio = 200, 0.9, 0.05
	o.SessionID = "sess/../x"
	var seenArchive string
	o.Summarizer = compact.SummarizerFunc(func(_ context.Context, req compact.Request) (string, error) {
		if _, err := os.Stat(req.Archive); err != nil {
			t.Errorf("archive not written before summarizing: %v", err)
		}
		seenArchive = req.Archive
		return "S", nil
	})
	var paths []string
	for i := 1; i <= 3; i++ {
		res, err := compact.Compact(context.Background(), msgs, o)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, res.Archive)
		if res.Archive != seenArchive {
			t.Errorf("summarizer saw archive %q, result says %q", seenArchive, res.Archive)
		}
		// The same messages again reuse their archive (archived once, by
		// content).
		again, err := compact.Compact(context.Background(), msgs, o)
		if err != nil || again.Archive != res.Archive {
			t.Errorf("the same messages archived again: %v, %v", again.Archive, err)
		}
		// Other messages in the same second: the next sequence number.
		msgs = append([]agentctx.Message{msgs[0], user(100 + i)}, msgs[1:]...)
	}
	msgs = []agentctx.Message{sys(1), user(100), asst(100), user(20)}
	for i, p := range paths {
		want := filepath.Join(o.Dir, "sess%2F..%2Fx", "compact-20261122T071400Z-"+string(rune('1'+i))+".json")
		if p != want {
			t.Errorf("archive %d = %s, want %s (same second, told apart by seq)", i+1, p, want)
		}
	}
	data, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	want := "[\n  {\n    \"role\": \"user\",\n    \"content\": \"" + text(100) + "\"\n  },\n  {\n    \"role\": \"assistant\",\n    \"content\": \"" + text(100) + "\"\n  }\n]\n"
	if string(data) != want {
		t.Errorf("archive content:\n%s\nwant:\n%s", data, want)
	}
}

func TestCompactArchiveFailure(t *testing.T) {
	msgs := []agentctx.Message{user(100), asst(100), user(20)}
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	o := baseOpts(t)
	o.Limit, o.Threshold, o.TailRatio = 200, 0.9, 0.05
	o.Dir = filepath.Join(blocker, "sub") // cannot be created
	var logs logBuffer
	o.Logger = logs.logger()
	o.Summarizer = &fakeSummarizer{script: []any{"S"}}

	res, err := compact.Compact(context.Background(), msgs, o)
	if err != nil {
		t.Fatalf("archive failure stopped compaction: %v", err)
	}
	if !res.Compacted || res.Archive != "" {
		t.Errorf("compacted %v archive %q; want compacted without an archive", res.Compacted, res.Archive)
	}
	if !strings.Contains(logs.String(), "archive failed") {
		t.Errorf("archive failure not logged:\n%s", logs.String())
	}

	o.ArchiveRequired = true
	sum := &fakeSummarizer{script: []any{"S"}}
	o.Summarizer = sum
	_, err = compact.Compact(context.Background(), msgs, o)
	var ae *compact.ArchiveError
	if !errors.As(err, &ae) {
		t.Fatalf("ArchiveRequired: error = %v, want *ArchiveError", err)
	}
	if sum.calls != 0 {
		t.Error("summarizer called after a required archive failed")
	}
}

func TestCompactNoArchive(t *testing.T) {
	o := baseOpts(t)
	o.Limit, o.Threshold, o.TailRatio, o.NoArchive = 200, 0.9, 0.05, true
	res, err := compact.Compact(context.Background(), []agentctx.Message{user(100), asst(100), user(20)}, o)
	if err != nil || !res.Compacted || res.Archive != "" {
		t.Fatalf("res %+v err %v", res, err)
	}
	if entries, _ := os.ReadDir(o.Dir); len(entries) != 0 {
		t.Errorf("NoArchive wrote %d entries", len(entries))
	}
}

// F-007: retries, then the original list.
func TestCompactRetries(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name       string
		maxRetries int
		script     []any
		calls      int
		compacted  bool
	}{
		{"success first time", 0, []any{"S"}, 1, true},
		{"default: 2 retries, then success", 0, []any{boom, boom, "S"}, 3, true},
		{"default: N+1 failures", 0, []any{boom}, 3, false},
		{"empty answer is a failure", 0, []any{"", "  \n", "S"}, 3, true},
		{"empty answers only", 0, []any{""}, 3, false},
		{"no retry (negative option = 0 on the CLI)", -1, []any{boom, "S"}, 1, false},
		{"5 retries", 5, []any{boom, boom, boom, boom, boom, "S"}, 6, true},
		{"not retryable (401)", 0, []any{&compact.APIError{Provider: "p", StatusCode: http.StatusUnauthorized, Err: boom}, "S"}, 1, false},
		{"retryable (429, 500)", 0, []any{&compact.APIError{StatusCode: 429, Err: boom}, &compact.APIError{StatusCode: 500, Err: boom}, "S"}, 3, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msgs := []agentctx.Message{user(100), asst(100), user(20)}
			o := baseOpts(t)
			o.Limit, o.Threshold, o.TailRatio = 200, 0.9, 0.05
			o.MaxRetries = tc.maxRetries
			var waits []int
			o.Backoff = func(n int) time.Duration { waits = append(waits, n); return 0 }
			var logs logBuffer
			o.Logger = logs.logger()
			sum := &fakeSummarizer{script: tc.script}
			o.Summarizer = sum
			res, err := compact.Compact(context.Background(), msgs, o)
			if err != nil {
				t.Fatal(err)
			}
			if sum.calls != tc.calls || res.Attempts != tc.calls {
				t.Errorf("calls = %d, attempts = %d, want %d", sum.calls, res.Attempts, tc.calls)
			}
			if res.Compacted != tc.compacted {
				t.Fatalf("compacted = %v, want %v", res.Compacted, tc.compacted)
			}
			if failures := strings.Count(logs.String(), "summary attempt failed"); failures != tc.calls-btoi(tc.compacted) {
				t.Errorf("%d failed attempts logged, want %d:\n%s", failures, tc.calls-btoi(tc.compacted), logs.String())
			}
			if !tc.compacted {
				if res.Reason != compact.ReasonSummarizerFailed || res.Stats != (compact.Stats{}) {
					t.Errorf("reason %q stats %+v", res.Reason, res.Stats)
				}
				if mustJSON(t, res.Messages) != mustJSON(t, msgs) {
					t.Error("the original list was not returned")
				}
			}
			for i, n := range waits {
				if n != i+1 {
					t.Errorf("backoff called with %v, want 1, 2, ...", waits)
				}
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestCompactSummaryRequired(t *testing.T) {
	boom := errors.New("boom")
	o := baseOpts(t)
	o.Limit, o.Threshold, o.TailRatio, o.SummaryRequired = 200, 0.9, 0.05, true
	o.Summarizer = &fakeSummarizer{script: []any{boom}}
	_, err := compact.Compact(context.Background(), []agentctx.Message{user(100), asst(100), user(20)}, o)
	if !errors.Is(err, boom) {
		t.Errorf("error = %v, want it to wrap the last failure", err)
	}
}

func TestCompactRetryAfter(t *testing.T) {
	o := baseOpts(t)
	o.Limit, o.Threshold, o.TailRatio = 200, 0.9, 0.05
	o.Backoff = func(int) time.Duration { return time.Millisecond }
	o.Summarizer = &fakeSummarizer{script: []any{&compact.APIError{StatusCode: 429, RetryAfter: 150 * time.Millisecond, Err: errors.New("slow down")}, "S"}}
	start := time.Now()
	res, err := compact.Compact(context.Background(), []agentctx.Message{user(100), asst(100), user(20)}, o)
	if err != nil || !res.Compacted {
		t.Fatalf("res %+v err %v", res, err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("retried after %v, before the Retry-After of 150ms", d)
	}
}

func TestCompactCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	o := baseOpts(t)
	o.Limit, o.Threshold, o.TailRatio = 200, 0.9, 0.05
	o.Backoff = func(int) time.Duration { return time.Hour }
	calls := 0
	o.Summarizer = compact.SummarizerFunc(func(context.Context, compact.Request) (string, error) {
		calls++
		cancel()
		return "", errors.New("fails, then the caller gives up")
	})
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		_, err = compact.Compact(ctx, []agentctx.Message{user(100), asst(100), user(20)}, o)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Compact did not stop when its context was cancelled")
	}
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Errorf("err = %v after %d calls, want context.Canceled after 1", err, calls)
	}

	// Already cancelled: nothing happens.
	if _, err := compact.Compact(ctx, []agentctx.Message{user(1)}, o); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: err = %v", err)
	}
}

func TestCompactAttemptTimeout(t *testing.T) {
	o := baseOpts(t)
	o.Limit, o.Threshold, o.TailRatio = 200, 0.9, 0.05
	o.AttemptTimeout = 20 * time.Millisecond
	calls := 0
	o.Summarizer = compact.SummarizerFunc(func(ctx context.Context, _ compact.Request) (string, error) {
		calls++
		if calls == 1 {
			<-ctx.Done() // hangs until the attempt times out
			return "", ctx.Err()
		}
		return "S", nil
	})
	res, err := compact.Compact(context.Background(), []agentctx.Message{user(100), asst(100), user(20)}, o)
	if err != nil || !res.Compacted || calls != 2 {
		t.Fatalf("res %+v err %v calls %d; want a timed-out attempt retried", res, err, calls)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 22, 7, 14, 0, 0, time.UTC)
	tests := []struct {
		h    http.Header
		want time.Duration
	}{
		{nil, 0},
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{http.Header{"Retry-After": {"-1"}}, 0},
		{http.Header{"Retry-After": {"Sun, 22 Nov 2026 07:14:10 GMT"}}, 10 * time.Second},
		{http.Header{"Retry-After": {"Sun, 22 Nov 2026 07:13:10 GMT"}}, 0},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond},
	}
	for _, tc := range tests {
		if got := compact.ParseRetryAfter(tc.h, now); got != tc.want {
			t.Errorf("ParseRetryAfter(%v) = %v, want %v", tc.h, got, tc.want)
		}
	}
}

func TestDefaultBackoff(t *testing.T) {
	want := []time.Duration{time.Second, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for i, w := range want {
		if got := compact.DefaultBackoff(i); got != w {
			t.Errorf("DefaultBackoff(%d) = %v, want %v", i, got, w)
		}
	}
}

// A second compaction carries the first summary (rolling, UC-002).
func TestCompactTwice(t *testing.T) {
	o := baseOpts(t)
	o.Limit, o.Threshold, o.TailRatio = 2000, 0.5, 0.05
	o.Counter = nil // real tokens: the extractive summary is real text
	long := strings.Repeat("the quick brown fox jumps over the lazy dog ", 60)
	hist := []agentctx.Message{agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("Port the parser to Go. "+long))}
	for i := range 4 {
		id := "t" + string(rune('a'+i))
		in, _ := json.Marshal(map[string]string{"file_path": "/src/p" + string(rune('a'+i)) + ".go", "content": long})
		hist = append(hist,
			agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.TextBlock("Writing file."), agentctx.ToolUseBlock(id, "Write", in))),
			agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock(id, agentctx.Text("File created"), false))))
	}
	res1, err := compact.Compact(context.Background(), hist, o)
	if err != nil || !res1.Compacted {
		t.Fatalf("first compaction: %+v %v", res1, err)
	}
	hist2 := slices.Clone(res1.Messages)
	for i := range 4 {
		id := "u" + string(rune('a'+i))
		in, _ := json.Marshal(map[string]string{"file_path": "/src/q" + string(rune('a'+i)) + ".go", "content": long})
		hist2 = append(hist2,
			agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.ToolUseBlock(id, "Write", in))),
			agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock(id, agentctx.Text("File created"), false))))
	}
	res2, err := compact.Compact(context.Background(), hist2, o)
	if err != nil || !res2.Compacted {
		t.Fatalf("second compaction: %+v %v", res2, err)
	}
	for _, want := range []string{"Port the parser to Go.", "pa.go", "qa.go", "An earlier summary is merged in"} {
		if !strings.Contains(res2.Summary, want) {
			t.Errorf("second summary lacks %q:\n%s", want, res2.Summary)
		}
	}
	if !strings.HasPrefix(res2.Summary, compact.SummaryTitle) || !compact.IsSummary(res2.Messages[0]) {
		t.Error("second summary is not recognised as a summary")
	}
}

func TestMessageCounterOption(t *testing.T) {
	mc := tokens.NewMessageCounter(tokens.MessageOptions{Counter: words{}})
	msgs := []agentctx.Message{user(100), asst(100), user(20)}
	o := baseOpts(t)
	o.Counter = nil // would be o200k_base; MessageCounter wins
	o.MessageCounter = mc
	o.Limit, o.Threshold, o.TailRatio = 200, 0.9, 0.05
	chk, err := compact.Check(msgs, o)
	if err != nil || chk.Tokens != 220 {
		t.Fatalf("Check = %+v, %v; want 220 word tokens", chk, err)
	}
	res, err := compact.Compact(context.Background(), msgs, o)
	if err != nil || !res.Compacted || res.Stats.OriginalTokenCount != 220 {
		t.Fatalf("Compact = %+v, %v", res, err)
	}
}

func TestReservedTokens(t *testing.T) {
	msgs := []agentctx.Message{user(100), asst(60), user(20)} // 180 tokens
	o := baseOpts(t)
	o.Limit, o.Threshold, o.TailRatio = 200, 0.95, 0.05 // threshold 190
	if compact.ShouldCompact(msgs, o) {
		t.Fatal("180 < 190 without reserved tokens")
	}
	o.ReservedTokens = 10 // a system prompt outside the list
	chk, _ := compact.Check(msgs, o)
	if !chk.ShouldCompact || chk.Tokens != 190 || !compact.ShouldCompact(msgs, o) {
		t.Fatalf("Check = %+v, want due at 180 + 10", chk)
	}
	res, err := compact.Compact(context.Background(), msgs, o)
	if err != nil || !res.Compacted {
		t.Fatalf("res %+v err %v", res, err)
	}
	if res.Stats.OriginalTokenCount != 180 || res.Tokens != res.Stats.CompactedTokenCount+10 {
		t.Errorf("stats %+v tokens %d: stats count the messages, Tokens adds the reserved", res.Stats, res.Tokens)
	}
	o.ReservedTokens = 200 // the rest alone is over the threshold
	res, err = compact.Compact(context.Background(), msgs, o)
	if err != nil || !res.Compacted || res.BelowThreshold || res.Reason != compact.ReasonRetainedOverThreshold {
		t.Errorf("res %+v err %v", res, err)
	}
	if _, err := compact.Check(msgs, compact.Options{ReservedTokens: -1}); !errors.Is(err, compact.ErrInvalidOption) {
		t.Error("negative ReservedTokens accepted")
	}
}

// A summary of everything (SummarizeAll: the list ends in an open tool
// loop with signed thinking) replaces the results the model is about to
// act on: they follow the summary as they were sent, so the model's next
// step still sees what its last call printed. A list that does not end on
// tool results gets the summary alone.
func TestSummarizeAllKeepsTheLatestResults(t *testing.T) {
	call := agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(
		agentctx.ToolUseBlock("toolu_9", "Bash", json.RawMessage(`{"command":"make"}`))))
	result := agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(
		agentctx.ToolResultBlock("toolu_9", agentctx.Text("build ok\nNEXT=4f2a\n"), false)))
	for _, tc := range []struct {
		name string
		last []agentctx.Message
		want string
	}{
		{"ends on a result", []agentctx.Message{call, result},
			"THE SUMMARY\n\n## " + compact.LatestResultsTitle + "\n\nThe conversation stopped at these results of the last tool calls, as they were sent:\n\n" +
				"<tool_result tool_use_id=\"toolu_9\">\nbuild ok\nNEXT=4f2a\n</tool_result>"},
		{"ends on the assistant", []agentctx.Message{asst(10)}, "THE SUMMARY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs := append([]agentctx.Message{sys(10), user(40), asst(40), user(40)}, tc.last...)
			o := baseOpts(t)
			o.Limit, o.Threshold, o.TailRatio = 200, 0.9, 0.05
			o.Force, o.SummarizeAll = true, true
			o.Summarizer = &fakeSummarizer{script: []any{"THE SUMMARY"}}
			o.MaxPointers = -1
			res, err := compact.Compact(context.Background(), msgs, o)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Compacted || len(res.Messages) != 2 {
				t.Fatalf("compacted %v into %d messages, want head + summary", res.Compacted, len(res.Messages))
			}
			if got := res.Messages[1].Content.Text(); got != tc.want || res.Summary != tc.want {
				t.Errorf("summary\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}
