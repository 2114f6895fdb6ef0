package prune_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit/memtest"
	"github.com/agentctx/agentctx/prune"
)

// Select reports what Prune reports, without the view (issue 24: the
// pipeline applies the decisions itself and copied a long history only to
// drop the copy).
func TestSelectIsPruneWithoutTheView(t *testing.T) {
	for _, sh := range []shape{openAI, anthropic} {
		for _, tc := range seedExamples {
			msgs := history(t, sh, tc.rs)
			opts := tc.opts
			opts.Now = clock(at(t, tc.now))
			want := prune.Prune(msgs, opts)
			got := prune.Select(msgs, opts)
			if got.Messages != nil {
				t.Errorf("%s/%s: Select made a view of %d messages", sh, tc.name, len(got.Messages))
			}
			want.Messages = nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s/%s: Select\n got %+v\nwant %+v", sh, tc.name, got, want)
			}
		}
	}
}

// TestSelectAllocatesLittlePerResult holds what Select allocates for a
// long history of terminal output, none of it stale, to a few dozen bytes
// a result: a 136-byte candidate of each result, an 80-byte copy of each
// call and a map of every call's id made 269–316 bytes a result, 12 MB on
// every request of 50,000 results (issue 24, item 7); 64 now.
func TestSelectAllocatesLittlePerResult(t *testing.T) {
	const n = 20_000
	rs := make([]res, n)
	for i := range rs {
		rs[i] = res{label: fmt.Sprint(i), tool: "Bash", content: "ok", at: "2026-01-01 00:00:00"}
	}
	for _, sh := range []shape{openAI, anthropic} {
		msgs := history(t, sh, rs)
		opts := prune.Options{Now: clock(at(t, "2026-01-01 00:01:00"))}
		prune.Select(msgs, opts) // warm: what a first call loads once is not counted
		var got prune.Result
		bytes := memtest.AllocatedBy(func() { got = prune.Select(msgs, opts) })
		if got.PrunedCount != 0 {
			t.Fatalf("%s: %d pruned", sh, got.PrunedCount)
		}
		t.Logf("%s: %d bytes for %d results (%.0f each)", sh, bytes, n, float64(bytes)/n)
		if bytes > 100*n {
			t.Errorf("%s: Select allocated %d bytes for %d results, want at most %d", sh, bytes, n, 100*n)
		}
	}
}

// TestResultsAnswerTheLatestCallBefore pins which call a result answers
// when ids repeat: the latest one with its id in a message before the
// result's (the last of a message's blocks, then its OpenAI tool calls),
// whether that message is right before the result or further back.
func TestResultsAnswerTheLatestCallBefore(t *testing.T) {
	ts := at(t, "2026-01-01 00:00:00").UnixMilli()
	res := func(id string) string {
		return fmt.Sprintf(`{"role":"user","timestamp":%d,"content":[{"type":"tool_result","tool_use_id":%q,"content":"done"}]}`, ts, id)
	}
	raw := `[` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"Read","input":{"n":1}},{"type":"tool_use","id":"a","name":"Bash","input":{"n":2}}]},` +
		res("a") + `,` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"b","name":"Bash","input":{"n":3}}]},` +
		`{"role":"assistant","content":"thinking it over"},` +
		res("b") + `,` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"Grep","input":{"n":4}}]},` +
		res("a") + `,` +
		res("none") + `,` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"c","name":"Read","input":{"n":5}}],"tool_calls":[{"id":"c","type":"function","function":{"name":"Bash","arguments":"{\"n\":6}"}}]},` +
		res("c") + `,` +
		res("b") +
		`]`
	var msgs []agentctx.Message
	if err := json.Unmarshal([]byte(raw), &msgs); err != nil {
		t.Fatal(err)
	}
	var got []string
	opts := prune.Options{
		Now:        clock(at(t, "2026-02-01 00:00:00")),
		KeepRecent: -1,
		ToolNames:  []string{"Read", "Bash", "Grep"},
		PlaceholderFunc: func(st prune.Stale) string {
			got = append(got, fmt.Sprintf("%d:%s %s", st.Result.Message, st.ToolName, st.Input))
			return ""
		},
	}
	prune.Select(msgs, opts)
	want := []string{`1:Bash {"n":2}`, `4:Bash {"n":3}`, `6:Grep {"n":4}`, `9:Bash {"n":6}`, `10:Bash {"n":3}`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("results answer\n got %q\nwant %q", got, want)
	}
}
