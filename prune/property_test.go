package prune_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/prune"
	"github.com/agentctx/agentctx/transcript"
)

// randomResults returns n results with labels from first on, timestamps
// within 3 hours after base (some without one), of several tools and
// outcomes.
func randomResults(r *rand.Rand, first, n int, base time.Time) []res {
	tools := []string{terminal, terminal, "Bash", fsRead, "other"}
	contents := []string{okOut, okOut, errOut, fileOut, "Error: failed", `{"stdout":"x","exitCode":3}`, "plain output"}
	out := make([]res, n)
	for i := range out {
		rs := res{
			label:   fmt.Sprintf("r%d", first+i),
			tool:    tools[r.IntN(len(tools))],
			content: contents[r.IntN(len(contents))],
		}
		if r.IntN(10) > 0 {
			rs.at = base.Add(time.Duration(r.Int64N(int64(3 * time.Hour)))).Format("2006-01-02 15:04:05.000")
		}
		switch r.IntN(8) {
		case 0:
			rs.status = "error"
		case 1:
			rs.isError = true
		}
		out[i] = rs
	}
	return out
}

func labelSet(r prune.Result) map[string]bool {
	set := map[string]bool{}
	for _, l := range prunedLabels(r) {
		set[l] = true
	}
	return set
}

// TestMonotone checks on random histories that a result pruned at time t is
// still pruned later, and after more results arrive (newer or, out of
// order, older), under several options; and that pruning a view again
// changes nothing.
func TestMonotone(t *testing.T) {
	base := at(t, "00:00:00")
	r := rand.New(rand.NewPCG(4, 632))
	optionSets := []prune.Options{
		{},
		{CountErrors: true},
		{KeepRecent: 2, MaxAge: 10 * time.Minute},
		{KeepRecent: -1, ToolNames: []string{}},
	}
	for iter := range 200 {
		sh := shape(iter % 2)
		opts := optionSets[iter%len(optionSets)]
		rs := randomResults(r, 0, 1+r.IntN(25), base)
		msgs := history(t, sh, rs)
		now := base.Add(time.Duration(r.Int64N(int64(4 * time.Hour))))

		opts.Now = clock(now)
		before := prune.Prune(msgs, opts)
		pruned := labelSet(before)

		later := opts
		later.Now = clock(now.Add(time.Duration(r.Int64N(int64(2 * time.Hour)))))
		grown := history(t, sh, append(slices.Clone(rs), randomResults(r, len(rs), 1+r.IntN(10), base)...))
		for _, step := range []struct {
			name string
			got  prune.Result
		}{
			{"later", prune.Prune(msgs, later)},
			{"more results", prune.Prune(grown, opts)},
			{"more results, later", prune.Prune(grown, later)},
		} {
			now := labelSet(step.got)
			for l := range pruned {
				if !now[l] {
					t.Fatalf("iteration %d (%s, %+v): %s pruned before, kept after %s", iter, sh, opts, l, step.name)
				}
			}
		}

		again := prune.Prune(before.Messages, opts)
		if a, b := encode(t, again.Messages), encode(t, before.Messages); a != b {
			t.Fatalf("iteration %d: pruning the view changed it:\n%s\n%s", iter, b, a)
		}
	}
}

// transcriptsDir is where the real transcripts are; tests that use them skip
// when it is absent.
func transcriptsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("AGENTCTX_TRANSCRIPTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "transcripts")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("transcripts not available: %v", err)
	}
	return dir
}

// TestTranscripts prunes real sessions an hour after their last message and
// checks the invariants: the input is unchanged, only results are changed,
// no error is pruned, pairing is kept, and Claude Code Bash output goes.
func TestTranscripts(t *testing.T) {
	dir := transcriptsDir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "*.json*"))
	if len(files) == 0 {
		t.Skip("no transcripts")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			doc, err := transcript.ReadFile(t.Context(), f, nil)
			if errors.Is(err, agentctx.ErrInvalidInput) {
				t.Skipf("not a format agentctx reads: %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			// Each conversation on its own (an OpenHands file holds several).
			for _, conv := range doc.Conversations() {
				msgs := conv.Messages
				var last time.Time
				for _, m := range msgs {
					if ts, ok := m.Timestamp(); ok && ts.After(last) {
						last = ts
					}
				}
				before := encode(t, msgs)
				pairedBefore := agentctx.ValidatePairing(msgs).Valid
				got := prune.Prune(msgs, prune.Options{Now: clock(last.Add(time.Hour))})
				if encode(t, msgs) != before {
					t.Fatal("input modified")
				}
				checkView(t, msgs, got)
				if pairedBefore && !agentctx.ValidatePairing(got.Messages).Valid {
					t.Error("pruning broke tool pairing")
				}
				names := agentctx.ToolNames(msgs)
				for _, p := range got.Pruned {
					m := msgs[p.MessageIndex]
					isErr := m.Status() == "error"
					if p.BlockIndex >= 0 {
						isErr = isErr || m.Content.Blocks()[p.BlockIndex].IsError
					}
					if isErr || p.ToolName != names[p.ID] {
						t.Errorf("pruned %+v (error %v, tool %q)", p, isErr, names[p.ID])
					}
				}
				t.Logf("%d messages, pruned %d results, freed %d chars / %d tokens, %d without timestamp",
					len(msgs), got.PrunedCount, got.FreedChars, got.FreedTokens, got.SkippedNoTimestamp)
				if doc.Format == transcript.FormatClaudeCode && got.PrunedCount == 0 {
					t.Error("no Bash output pruned from a Claude Code session")
				}
			}
		})
	}
}

// FuzzPrune checks that no input makes Prune panic or modify its input.
func FuzzPrune(f *testing.F) {
	f.Add([]byte(`[{"role":"tool","tool_call_id":"a","content":"{\"stdout\":\"x\"}","timestamp":1}]`), int64(1e12), 0)
	f.Add([]byte(`[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"Bash","input":{}}]},{"role":"user","timestamp":"2026-01-31T00:00:00Z","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"ok"}]}]}]`), int64(2e12), -1)
	f.Add([]byte(`[{"role":"tool","content":{"exitCode":null,"stderr":[1]},"timestamp":0,"messageStatus":"x"}]`), int64(0), 3)
	f.Fuzz(func(t *testing.T, data []byte, nowMs int64, keep int) {
		msgs, err := agentctx.UnmarshalMessages(data)
		if err != nil {
			return
		}
		before, err := agentctx.MarshalMessages(msgs)
		if err != nil {
			return
		}
		got := prune.Prune(msgs, prune.Options{Now: clock(time.UnixMilli(nowMs)), KeepRecent: keep % 8, Counter: countRunes{},
			PlaceholderFunc: func(s prune.Stale) string { return s.Command() }})
		after, _ := agentctx.MarshalMessages(msgs)
		if string(before) != string(after) {
			t.Fatal("input modified")
		}
		if len(got.Messages) != len(msgs) || got.PrunedCount != len(got.Pruned) {
			t.Fatalf("bad result %+v", got)
		}
		if _, err := agentctx.MarshalMessages(got.Messages); err != nil {
			t.Fatalf("view does not encode: %v", err)
		}
	})
}
