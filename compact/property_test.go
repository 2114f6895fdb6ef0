package compact_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
)

// genHistory returns a random paired history: leading system messages,
// then user and assistant turns with Anthropic tool rounds (thinking,
// parallel calls, results in any order, text after the results) and OpenAI
// tool rounds (parallel calls, tool messages in any order).
func genHistory(r *rand.Rand) []agentctx.Message {
	var msgs []agentctx.Message
	for range r.IntN(3) {
		msgs = append(msgs, sys(r.IntN(30)))
	}
	id := 0
	next := func() string { id++; return fmt.Sprintf("id%d", id) }
	for range r.IntN(25) {
		switch r.IntN(5) {
		case 0:
			msgs = append(msgs, user(r.IntN(60)))
		case 1:
			msgs = append(msgs, asst(r.IntN(60)))
		case 2, 3:
			ids := make([]string, 1+r.IntN(3))
			for i := range ids {
				ids[i] = next()
			}
			msgs = append(msgs, call(r.IntN(20), ids...))
			r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
			res := result(r.IntN(80), ids...)
			if r.IntN(3) == 0 {
				blocks := append(append([]agentctx.Block{}, res.Content.Blocks()...), agentctx.TextBlock(text(r.IntN(10)+1)))
				res = res.WithContent(agentctx.BlockList(blocks...))
			}
			msgs = append(msgs, res)
		case 4:
			ids := make([]string, 1+r.IntN(3))
			for i := range ids {
				ids[i] = next()
			}
			msgs = append(msgs, oaCall(ids...))
			r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
			for _, id := range ids {
				msgs = append(msgs, oaResult(r.IntN(80), id))
			}
		}
	}
	return msgs
}

// checkCompaction compacts msgs with random options and checks what must
// always hold.
func checkCompaction(t *testing.T, r *rand.Rand, msgs []agentctx.Message) {
	t.Helper()
	if rep := agentctx.ValidatePairing(msgs); !rep.Valid {
		t.Fatalf("generator made an unpaired history: %v", rep.Err())
	}
	o := compact.Options{
		Counter:    words{},
		Limit:      1 + r.IntN(1500),
		Threshold:  0.01 + r.Float64(),
		TailRatio:  r.Float64()*0.8 - 0.1,
		Force:      r.IntN(2) == 0,
		NoArchive:  true,
		Summarizer: compact.Extractive{MaxChars: 200 + r.IntN(4000)},
		Backoff:    noWait,
	}
	before := mustJSON(t, msgs)
	res, err := compact.Compact(context.Background(), msgs, o)
	if err != nil {
		t.Fatal(err)
	}
	if mustJSON(t, msgs) != before {
		t.Fatal("input modified")
	}
	if rep := agentctx.ValidatePairing(res.Messages); !rep.Valid {
		t.Fatalf("output is unpaired (limit %d, tail ratio %.3f): %v\ninput: %s\noutput: %s",
			o.Limit, o.TailRatio, rep.Err(), before, mustJSON(t, res.Messages))
	}
	p := compact.Split(msgs, o)
	if len(p.Head)+len(p.Middle)+len(p.Tail) != len(msgs) {
		t.Fatal("parts do not cover the list")
	}
	if len(msgs) > 0 && len(p.Tail) == 0 {
		t.Fatal("a non-empty list has an empty tail")
	}
	for _, m := range p.Head {
		if m.Role != agentctx.RoleSystem {
			t.Fatal("a head message is not a system message")
		}
	}
	if res.Compacted {
		if len(res.Messages) != len(p.Head)+1+len(p.Tail) {
			t.Fatalf("compacted list has %d messages, want %d", len(res.Messages), len(p.Head)+1+len(p.Tail))
		}
		s := res.Stats
		chk, _ := compact.Check(msgs, o)
		if s.CompactedMessageCount != len(p.Middle) || s.RetainedMessageCount != len(p.Head)+len(p.Tail) ||
			s.OriginalTokenCount != chk.Tokens || s.CompactedTokenCount != res.Tokens {
			t.Fatalf("inconsistent stats %+v (tokens %d)", s, res.Tokens)
		}
		if len(res.Summary) == 0 || res.Messages[len(p.Head)].Content.Text() != res.Summary {
			t.Fatal("summary message is not at the cut")
		}
	} else if mustJSON(t, res.Messages) != before {
		t.Fatal("not compacted, but the list changed")
	}
	if res.BelowThreshold != (res.Tokens < res.ThresholdTokens) {
		t.Fatalf("below_threshold %v with tokens %d, threshold %d", res.BelowThreshold, res.Tokens, res.ThresholdTokens)
	}
}

// Any paired history, any budget: the output is paired.
func TestPropertyOutputStaysPaired(t *testing.T) {
	n := 3000
	if testing.Short() || raceEnabled {
		n = 500
	}
	for seed := range n {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		msgs := genHistory(r)
		t.Run("", func(t *testing.T) { checkCompaction(t, r, msgs) })
		if t.Failed() {
			t.Fatalf("seed %d", seed)
		}
	}
}

func FuzzCompactPairing(f *testing.F) {
	for _, s := range []uint64{0, 1, 42, 1 << 40} {
		f.Add(s, s^0xdead)
	}
	f.Fuzz(func(t *testing.T, a, b uint64) {
		r := rand.New(rand.NewPCG(a, b))
		checkCompaction(t, r, genHistory(r))
	})
}

// FuzzCompactJSON compacts arbitrary message lists: no panic, and a paired
// input stays paired.
func FuzzCompactJSON(f *testing.F) {
	f.Add(session, 50)
	f.Add(`[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":[{"type":"weird"}]}]},{"role":"tool"}]`, 1)
	f.Add(`[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"Write","input":{"file_path":1,"command":["rm","-rf","/"]}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"{\"exitCode\":\"x\"}"}]}]`, 3)
	f.Fuzz(func(t *testing.T, doc string, limit int) {
		msgs, err := agentctx.UnmarshalMessages([]byte(doc))
		if err != nil {
			return
		}
		o := compact.Options{Limit: 1 + int(uint(limit)%5000), Force: true, NoArchive: true, Counter: words{}, Backoff: noWait}
		res, err := compact.Compact(context.Background(), msgs, o)
		if err != nil {
			t.Fatal(err)
		}
		if agentctx.ValidatePairing(msgs).Valid && !agentctx.ValidatePairing(res.Messages).Valid {
			t.Fatalf("pairing broken: %v", agentctx.ValidatePairing(res.Messages).Err())
		}
		sum := &compact.ModelSummarizer{Model: compact.ModelFunc(func(context.Context, string, string) (string, error) { return "ok", nil }), InputTokens: 600, Counter: words{}}
		if _, err := sum.Summarize(context.Background(), compact.Request{Messages: msgs}); err != nil {
			t.Fatal(err)
		}
	})
}
