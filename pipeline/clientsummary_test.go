package pipeline_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/pipeline"
)

// summaryRequest is a session's step (a short result) and the request
// after it: the step, then the new results of outs (one exchange each),
// then the client's instruction to summarize.
func summaryRequest(outs ...string) (step, summary []agentctx.Message) {
	at := now.Add(-10 * time.Minute)
	step = history(user("run the chain", at), exchange("call_1", "exec_command", "step 1", "chain step 001 NEXT=1111", false, at))
	parts := []any{step}
	for i, out := range outs {
		parts = append(parts, exchange(fmt.Sprintf("call_%d", i+2), "exec_command", fmt.Sprintf("cat part%d", i), out, false, at.Add(time.Minute)))
	}
	parts = append(parts, user("You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary.", at.Add(2*time.Minute)))
	return step, history(parts...)
}

// bigRead is a read of n characters, lines of numbers with value in the
// middle (where a reference's head and tail do not show it).
func bigRead(value string, n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		if b.Len() >= n/2 && value != "" {
			b.WriteString(value + "\n")
			value = ""
		}
		fmt.Fprintf(&b, "%05d %016x\n", i, uint64(i)*0x9e3779b97f4a7c15)
	}
	return b.String()[:n]
}

// TestClientSummaryKeepsNewResultsWhole: in a request marked as the
// client's own summary request (CallOptions.ClientSummary) a large result
// no earlier request sent is forwarded whole, where the same request
// unmarked sends it as a reference: the summary the client keeps instead
// of the history can hold what the result says. It is stored all the
// same, and recorded as sent whole: a later request of the session (the
// summary request again, unmarked) sends it whole too.
func TestClientSummaryKeepsNewResultsWhole(t *testing.T) {
	out := bigRead("chain step 035 NEXT=3535353535353535", 55_000)
	step, summary := summaryRequest(out)
	for _, marked := range []bool{true, false} {
		t.Run(fmt.Sprintf("marked=%v", marked), func(t *testing.T) {
			p := newPipeline(t, options(t))
			ctx := context.Background()
			doc := func(msgs []agentctx.Message) *agentctx.Document {
				return &agentctx.Document{Format: agentctx.FormatArray, Messages: msgs}
			}
			if _, err := p.PrepareCall(ctx, doc(step), pipeline.CallOptions{}); err != nil {
				t.Fatal(err)
			}
			res, err := p.PrepareCall(ctx, doc(summary), pipeline.CallOptions{ClientSummary: marked})
			if err != nil {
				t.Fatal(err)
			}
			got := resultText(res.Messages, "call_2")
			off := res.Report.Step(pipeline.StepOffload)
			if !marked {
				if got == out || off.New != 1 {
					t.Fatalf("unmarked: the new result was sent whole (%d chars, %d offloaded): want it offloaded", len(got), off.New)
				}
				return
			}
			if got != out {
				t.Fatalf("the summary request sent the new result as %.200q: want it whole", got)
			}
			if off.New != 0 || off.Offload.KeptWhole != 1 || off.Offload.Written != 1 || len(res.Report.Warnings) != 0 {
				t.Fatalf("offload step: new %d, kept whole %d, written %d, warnings %q: want 0, 1, 1 and none",
					off.New, off.Offload.KeptWhole, off.Offload.Written, res.Report.Warnings)
			}
			if _, err := p.Workspace().Get(ctx, off.Artifacts[0]); err != nil {
				t.Fatalf("the result kept whole is not stored: %v", err)
			}
			again, err := p.PrepareCall(ctx, doc(summary), pipeline.CallOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(again.Messages, "call_2"); got != out || again.Report.Session.PrefixChanged {
				t.Fatalf("the next request sent it as %.200q (prefix changed %v): want it whole, as the summary request sent it",
					got, again.Report.Session.PrefixChanged)
			}
		})
	}
}

// TestClientSummaryWithinTheLimit: results kept whole in a client's
// summary request keep it within the compaction limit: when they would
// not all fit, the largest keep their references, with a warning.
func TestClientSummaryWithinTheLimit(t *testing.T) {
	small := bigRead("chain step 034 NEXT=3434343434343434", 45_000)
	large := bigRead("chain step 035 NEXT=3535353535353535", 90_000)
	step, summary := summaryRequest(large, small)
	o := options(t)
	// Whole, the small one counts about 25,600 tokens, the large one
	// 51,200: either fits, not both.
	o.Compact.Limit = 60_000
	o.NoCompact = true // the priced trigger, lower, would compact the request: not what is tested
	p := newPipeline(t, o)
	ctx := context.Background()
	if _, err := p.PrepareCall(ctx, &agentctx.Document{Format: agentctx.FormatArray, Messages: step}, pipeline.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := p.PrepareCall(ctx, &agentctx.Document{Format: agentctx.FormatArray, Messages: summary}, pipeline.CallOptions{ClientSummary: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(res.Messages, "call_3"); got != small {
		t.Errorf("the smaller result was sent as %.200q: want it whole", got)
	}
	if got := resultText(res.Messages, "call_2"); got == large {
		t.Errorf("the larger result was sent whole: want its reference, the request within the limit")
	}
	if after, limit := res.Report.TokensAfter, o.Compact.Limit; after > limit {
		t.Errorf("the request counts %d tokens, over the limit of %d", after, limit)
	}
	if w := strings.Join(res.Report.Warnings, "\n"); !strings.Contains(w, "1 of its 2 new large result(s) sent as references") {
		t.Errorf("warnings %q: want the result offloaded for the limit", res.Report.Warnings)
	}
}
