package replay_test

import (
	"context"
	"math"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/pipeline/replay"
)

// A two-request session whose recorded usage is its bill, by hand at
// claude-sonnet-4-5's prices ($3 in, $0.30 read, $3.75 write, $6 1-hour
// write, $15 out per million tokens):
//
//	100×3 + 2000×3.75 + 50×15           = 8550 → $0.00855
//	10×3 + 2000×0.3 + 100×6 + 20×15     = 1530 → $0.00153
//
// Nothing is edited: the prepared requests cost the same.
func TestReplayBill(t *testing.T) {
	doc, err := agentctx.ParseDocument(context.Background(), []byte(`[
{"role":"user","content":"hi"},
{"role":"assistant","model":"claude-sonnet-4-5-20250929","content":"a1","usage":{"input_tokens":100,"cache_creation_input_tokens":2000,"output_tokens":50}},
{"role":"user","content":"again"},
{"role":"assistant","model":"claude-sonnet-4-5","content":"a2","usage":{"input_tokens":10,"cache_read_input_tokens":2000,"cache_creation_input_tokens":100,"cache_creation":{"ephemeral_1h_input_tokens":100},"output_tokens":20}}]`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := replay.Run(context.Background(), doc, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if !near(res.CostWithoutUSD, 0.01008) || !near(res.CostUSD, 0.01008) || res.SavedUSD != 0 {
		t.Errorf("cost $%v, without $%v, saved $%v; want $0.01008 both, 0 saved", res.CostUSD, res.CostWithoutUSD, res.SavedUSD)
	}
	if len(res.PerRequest) != 2 || !near(res.PerRequest[0].CostWithoutUSD, 0.00855) || !near(res.PerRequest[1].CostWithoutUSD, 0.00153) ||
		!near(res.PerRequest[1].CostUSD, 0.00153) {
		t.Errorf("per request %+v", res.PerRequest)
	}
}
