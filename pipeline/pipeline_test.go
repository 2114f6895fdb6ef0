package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/offload"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/prune"
	"github.com/agentctx/agentctx/tokens"
	"github.com/agentctx/agentctx/transcript"
	"github.com/agentctx/agentctx/workspace"
)

func TestZeroOptionsAreTheEmbeddedDefaults(t *testing.T) {
	t.Chdir(t.TempDir())
	p, err := pipeline.New(pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	big := strings.Repeat("x", workspace.DefaultInlineLimit)
	msgs := history(user("read it", now), exchange("toolu_1", "Read", "cat big.txt", big, false, now.Add(time.Second)))
	res := mustPrepare(t, p, msgs)
	r := &res.Report
	if got, want := stepNames(r), "repair,prune,offload,count,compact,validate"; got != want {
		t.Errorf("steps %s, want %s", got, want)
	}
	if r.Limit != compact.DefaultLimit || r.ThresholdTokens != 184_000 {
		t.Errorf("limit %d, threshold %d: want the defaults of seed 002", r.Limit, r.ThresholdTokens)
	}
	// Artifacts live in the namespace ("default"), whatever the session.
	if _, err := os.Stat(filepath.Join(pipeline.DefaultWorkspaceDir, "default", "tool_result_toolu_1.txt")); err != nil {
		t.Errorf("default workspace: %v", err)
	}
	if got := resultText(res.Messages, "toolu_1"); !strings.HasPrefix(got, "<knowledge_list>") {
		t.Errorf("a 40,000-character result should be replaced by a reference, got %.80q", got)
	}
	if c := r.Step(pipeline.StepCount).Count; c == nil || c.ShouldCompact {
		t.Errorf("count step: %+v", c)
	}
}

func TestDefaultArchiveDir(t *testing.T) {
	t.Chdir(t.TempDir())
	var msgs []agentctx.Message
	for i := range 12 {
		msgs = append(msgs, user(fmt.Sprintf("request %d: %s", i, strings.Repeat("word ", 30)), now.Add(time.Duration(i)*time.Minute)))
	}
	// With the default workspace, the archive is an artifact of the
	// session, named by a hash of what it holds.
	p := newPipeline(t, pipeline.Options{Compact: compact.Options{Limit: 200}, Now: func() time.Time { return now }})
	res := mustPrepare(t, p, msgs)
	c := res.Report.Step(pipeline.StepCompact).Compact
	if !c.Compacted || !strings.HasPrefix(c.Archive, pipeline.ArchiveIDPrefix) || c.ArchivedBytes == 0 {
		t.Fatalf("compact: %+v", c)
	}
	a, err := p.Workspace().Get(context.Background(), c.Archive)
	if err != nil || a.Metadata[workspace.KeyContextType] != pipeline.ContextCompactionArchive {
		t.Fatalf("archive artifact: %v %v", a, err)
	}
	if !strings.Contains(res.Messages[0].Content.Text(), c.Archive) {
		t.Errorf("the summary does not name its archive %s", c.Archive)
	}
	// Without a workspace, archives are files (seed 002 names).
	p = newPipeline(t, pipeline.Options{Offload: pipeline.OffloadNone, NoPrune: true, Compact: compact.Options{Limit: 200}, Now: func() time.Time { return now }})
	res = mustPrepare(t, p, msgs)
	c = res.Report.Step(pipeline.StepCompact).Compact
	want, _ := filepath.Abs(filepath.Join(compact.DefaultDir, pipeline.DefaultSessionID, "compact-20260131T020000Z-1.json"))
	if !c.Compacted || c.Archive != want {
		t.Errorf("archive %s, want %s", c.Archive, want)
	}
}

func TestRepairStep(t *testing.T) {
	unanswered := history(user("go", now), agentctx.NewMessage(agentctx.RoleAssistant,
		agentctx.BlockList(agentctx.ToolUseBlock("toolu_1", "Bash", json.RawMessage(`{"command":"ls"}`)))).WithTimestamp(now))
	orphan := history(user("go", now), agentctx.NewMessage(agentctx.RoleUser,
		agentctx.BlockList(agentctx.ToolResultBlock("toolu_9", agentctx.Text("stray"), false), agentctx.TextBlock("and text"))).WithTimestamp(now))
	paired := history(user("go", now), exchange("toolu_1", "Bash", "ls", "a b c", false, now))
	// An orphan alone in the last message: dropping the message would end
	// the request on the assistant's turn, a prefill the client never sent.
	lastOrphan := history(user("go", now), agentctx.NewMessage(agentctx.RoleAssistant, agentctx.Text("done")).WithTimestamp(now),
		agentctx.NewMessage(agentctx.RoleUser,
			agentctx.BlockList(agentctx.ToolResultBlock("toolu_9", agentctx.Text("stray"), false))).WithTimestamp(now))
	tests := []struct {
		name    string
		msgs    []agentctx.Message
		changed int
		action  agentctx.RepairAction
		saved   func(int) bool
	}{
		{"unanswered call gets a synthetic result", unanswered, 1, agentctx.RepairAddedResult, func(n int) bool { return n < 0 }},
		{"orphan result dropped", orphan, 1, agentctx.RepairDroppedResult, func(n int) bool { return n > 0 }},
		{"paired history untouched", paired, 0, "", func(n int) bool { return n == 0 }},
		{"orphan alone at the end kept as text", lastOrphan, 1, agentctx.RepairResultAsText, func(n int) bool { return n < 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustPrepare(t, newPipeline(t, options(t)), tt.msgs)
			s := res.Report.Step(pipeline.StepRepair)
			if s.Changed != tt.changed || (tt.action != "" && s.Repairs[0].Action != tt.action) {
				t.Errorf("changed %d, repairs %+v", s.Changed, s.Repairs)
			}
			if last := res.Messages[len(res.Messages)-1]; last.Role == agentctx.RoleAssistant && tt.msgs[len(tt.msgs)-1].Role != agentctx.RoleAssistant {
				t.Errorf("the request ends on the assistant's turn, the client's on a %s message", tt.msgs[len(tt.msgs)-1].Role)
			}
			if !tt.saved(s.CharsSaved) || !tt.saved(s.TokensSaved) {
				t.Errorf("saved %d chars, %d tokens", s.CharsSaved, s.TokensSaved)
			}
		})
	}
}

func TestUnrepairableInputWritesNothing(t *testing.T) {
	o := options(t)
	// Two calls of one message share an id (an id reused in a later turn is repaired).
	dup := history(user("go", now),
		agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.ToolUseBlock("toolu_1", "Bash", nil), agentctx.ToolUseBlock("toolu_1", "Bash", nil))),
		agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock("toolu_1", agentctx.Text("a"), false))))
	_, err := prepare(t, newPipeline(t, o), dup)
	if !errors.Is(err, agentctx.ErrInvalidInput) || !strings.Contains(err.Error(), "duplicate_call_id") {
		t.Fatalf("err = %v, want an input error naming the duplicate id", err)
	}
	if _, err := os.Stat(o.WorkspaceDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("workspace written for bad input: %v", err)
	}
}

func TestNoRepairReportsUnpairedOutput(t *testing.T) {
	o := options(t)
	o.NoRepair = true
	msgs := history(user("go", now), agentctx.NewMessage(agentctx.RoleAssistant,
		agentctx.BlockList(agentctx.ToolUseBlock("toolu_1", "Bash", nil))).WithTimestamp(now))
	res, err := prepare(t, newPipeline(t, o), msgs)
	if !errors.Is(err, agentctx.ErrUnpaired) || res == nil || res.Report.Valid {
		t.Fatalf("err = %v, res = %v: want the result and an error matching ErrUnpaired", err, res != nil)
	}
	if !res.Report.Step(pipeline.StepRepair).Skipped {
		t.Error("repair step not reported as skipped")
	}
}

// seed004Example5 is seed 004's example 5 in OpenAI shape: ten results,
// newest first at 01:55 down to 00:30, the current time 02:00.
func seed004Example5(t *testing.T) []agentctx.Message {
	t.Helper()
	type item struct {
		at    string
		tool  string
		error bool
	}
	items := []item{ // oldest first
		{"00:30:00", "terminal-execute", true},
		{"00:40:00", "filesystem-read", false},
		{"00:50:00", "terminal-execute", false},
		{"01:20:00", "terminal-execute", false},
		{"01:30:00", "terminal-execute", false},
		{"01:35:00", "terminal-execute", false},
		{"01:40:00", "terminal-execute", true},
		{"01:45:00", "terminal-execute", false},
		{"01:50:00", "terminal-execute", false},
		{"01:55:00", "filesystem-read", false},
	}
	msgs := []agentctx.Message{user("build and test", now.Add(-2*time.Hour))}
	for i, it := range items {
		ts, _ := time.Parse(time.DateTime, "2026-01-31 "+it.at)
		// Long enough that the placeholder, which names the artifact, is
		// shorter than the output it replaces.
		content := `{"stdout":"Building project...\n` + strings.Repeat("compiling module ok\n", 20) + `Done in 3.2s","stderr":"","exitCode":0}`
		if it.error {
			content = `{"stdout":"","stderr":"Error: Cannot find module 'xxx'","exitCode":1}`
		}
		if it.tool == "filesystem-read" {
			content = "file contents " + strings.Repeat("lorem ipsum ", 20)
		}
		id := fmt.Sprintf("call_%02d", 10-i) // call_10 is the oldest, as in the seed's numbering
		call := fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":%q,"arguments":"{}"}}],"timestamp":%d}`,
			id, it.tool, ts.Add(-time.Second).UnixMilli())
		res := fmt.Sprintf(`{"role":"tool","tool_call_id":%q,"content":%q,"timestamp":%d}`, id, content, ts.UnixMilli())
		for _, raw := range []string{call, res} {
			m, err := agentctx.DecodeMessage([]byte(raw))
			if err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, m)
		}
	}
	return msgs
}

func TestPruneStepSeed004(t *testing.T) {
	msgs := seed004Example5(t)
	o := options(t)
	o.ClearAtLeast = -1 // the seed applies every stale result at once
	o.Verify = true
	p := newPipeline(t, o)
	res := mustPrepare(t, p, msgs)
	s := res.Report.Step(pipeline.StepPrune)
	var ids []string
	for _, pr := range s.Pruned {
		ids = append(ids, pr.ID)
	}
	slices.Sort(ids)
	if strings.Join(ids, ",") != "call_07,call_08" {
		t.Errorf("pruned %q, want items 7 and 8 (seed 004, example 5)", ids)
	}
	for _, id := range []string{"call_07", "call_08"} {
		// The seed's placeholder, then how to read the original back.
		if got := resultText(res.Messages, id); !strings.HasPrefix(got, prune.DefaultPlaceholder+"\n") || !strings.Contains(got, `get_knowledge_by_id(artifact_id="tool_result_`+id+`")`) {
			t.Errorf("%s sent as %q, want the placeholder naming the artifact", id, got)
		}
		// Example 9: the original stays, in the stored history and in the
		// workspace.
		a, err := p.Workspace().Get(context.Background(), workspace.ArtifactID(id))
		if err != nil || a.Content != resultText(msgs, id) {
			t.Errorf("workspace holds %v / %v for %s, want the original", a, err, id)
		}
	}
	if s.CharsSaved <= 0 || s.TokensSaved <= 0 || s.Changed != 2 {
		t.Errorf("prune step %+v", s)
	}
	if off := res.Report.Step(pipeline.StepOffload).Offload; off.Stored != 10 || !off.Verified.OK() || off.Verified.Checked != 10 {
		t.Errorf("offload step: stored %d, verified %+v", off.Stored, off.Verified)
	}
}

func TestPruneAgeBoundary(t *testing.T) {
	// Seed 004, examples 7 and 8: 15:00.001 old is pruned, 15:00.000 kept.
	// Five newer successful results fill the recent window.
	for _, tt := range []struct {
		age    time.Duration
		pruned bool
	}{
		{15*time.Minute + time.Millisecond, true},
		{15 * time.Minute, false},
	} {
		t.Run(tt.age.String(), func(t *testing.T) {
			msgs := history(user("go", now.Add(-time.Hour)),
				exchange("toolu_old", "terminal-execute", "make", `{"stdout":"`+strings.Repeat("ok ", 200)+`","exitCode":0}`, false, now.Add(-tt.age)))
			for i := range 5 {
				msgs = append(msgs, exchange(fmt.Sprintf("toolu_%d", i), "Read", "cat", "text", false, now.Add(time.Duration(i-5)*time.Second))...)
			}
			o := options(t)
			o.ClearAtLeast = -1
			res := mustPrepare(t, newPipeline(t, o), msgs)
			got := strings.HasPrefix(resultText(res.Messages, "toolu_old"), prune.DefaultPlaceholder)
			if got != tt.pruned {
				t.Errorf("pruned = %v, want %v", got, tt.pruned)
			}
		})
	}
}

func TestOffloadWorkspaceBoundary(t *testing.T) {
	// Seed 003: fewer than 40,000 characters stay inline, 40,000 are
	// replaced by a reference; both are stored whole.
	msgs := history(user("read both", now),
		exchange("toolu_a", "Read", "cat a", strings.Repeat("a", 39_999), false, now),
		exchange("toolu_b", "Read", "cat b", strings.Repeat("é", 40_000), false, now))
	o := options(t)
	o.Verify = true
	p := newPipeline(t, o)
	res := mustPrepare(t, p, msgs)
	if resultText(res.Messages, "toolu_a") != strings.Repeat("a", 39_999) {
		t.Error("39,999 characters: not kept inline")
	}
	ref := resultText(res.Messages, "toolu_b")
	if !strings.HasPrefix(ref, `<knowledge_list>`) || !strings.Contains(ref, `id="tool_result_toolu_b"`) {
		t.Errorf("40,000 characters: %.120q, want a reference", ref)
	}
	s := res.Report.Step(pipeline.StepOffload)
	o2 := s.Offload
	if s.Changed != 1 || o2.Replaced != 1 || o2.ReplacedBytes != 80_000 || o2.Stored != 2 || o2.Written != 2 || o2.StoredBytes != 39_999+80_000 {
		t.Errorf("offload report %+v", o2)
	}
	if !slices.Equal(s.Artifacts, []string{"tool_result_toolu_a", "tool_result_toolu_b"}) || len(s.Files) != 2 {
		t.Errorf("artifacts %q, files %q", s.Artifacts, s.Files)
	}
	if !o2.Verified.OK() || o2.Verified.Checked != 2 {
		t.Errorf("verified %+v", o2.Verified)
	}
	if s.CharsSaved != 40_000-len([]rune(ref)) {
		t.Errorf("chars saved %d, want %d", s.CharsSaved, 40_000-len([]rune(ref)))
	}
	// The next request writes nothing new and sends the same thing.
	again := mustPrepare(t, p, msgs)
	if w := again.Report.Step(pipeline.StepOffload).Offload.Written; w != 0 {
		t.Errorf("second call wrote %d artifacts", w)
	}
	a, _ := agentctx.MarshalMessages(res.Messages)
	b, _ := agentctx.MarshalMessages(again.Messages)
	if string(a) != string(b) {
		t.Error("second call sends a different list")
	}
}

func TestOffloadFilesBoundary(t *testing.T) {
	// Seed 000: 99 characters are kept, 100 are offloaded.
	o := options(t)
	o.Offload = pipeline.OffloadFiles
	o.Files.Dir = filepath.Join(t.TempDir(), "files")
	o.Verify = true
	o.NoPrune = true
	msgs := history(user("go", now),
		exchange("toolu_99", "Read", "cat", strings.Repeat("9", 99), false, now),
		exchange("toolu_100", "Read", "cat", strings.Repeat("1", 100), false, now))
	res := mustPrepare(t, newPipeline(t, o), msgs)
	if got := resultText(res.Messages, "toolu_99"); got != strings.Repeat("9", 99) {
		t.Errorf("99 characters offloaded: %q", got)
	}
	if got := resultText(res.Messages, "toolu_100"); got != "[Content offloaded to: ./tool-result-toolu_100.md]" {
		t.Errorf("100 characters: %q", got)
	}
	s := res.Report.Step(pipeline.StepOffload)
	data, err := os.ReadFile(filepath.Join(o.Files.Dir, "tool-result-toolu_100.md"))
	if err != nil || string(data) != strings.Repeat("1", 100) {
		t.Errorf("file: %q, %v", data, err)
	}
	if s.Changed != 1 || len(s.Files) != 1 || !s.Offload.Verified.OK() || s.Offload.Verified.Checked != 1 {
		t.Errorf("offload step %+v / %+v", s, s.Offload)
	}
	if s.CharsSaved != 100-len("[Content offloaded to: ./tool-result-toolu_100.md]") {
		t.Errorf("chars saved %d", s.CharsSaved)
	}
}

func TestStepsOff(t *testing.T) {
	o := options(t)
	o.NoRepair, o.NoPrune, o.NoCompact, o.Offload = true, true, true, pipeline.OffloadNone
	msgs := history(user("go", now), exchange("toolu_1", "Bash", "ls", strings.Repeat("x", 50_000), false, now.Add(-time.Hour)))
	res := mustPrepare(t, newPipeline(t, o), msgs)
	for _, s := range []pipeline.Step{pipeline.StepRepair, pipeline.StepPrune, pipeline.StepOffload, pipeline.StepCompact} {
		if r := res.Report.Step(s); !r.Skipped || r.TokensSaved != 0 {
			t.Errorf("%s: %+v", s, r)
		}
	}
	if _, err := os.Stat(o.WorkspaceDir); !errors.Is(err, os.ErrNotExist) {
		t.Error("offload none wrote a workspace")
	}
	a, _ := agentctx.MarshalMessages(msgs)
	b, _ := agentctx.MarshalMessages(res.Messages)
	if string(a) != string(b) {
		t.Error("with every step off the output differs from the input")
	}
}

// tokensOf counts like the pipeline does.
func tokensOf(msgs []agentctx.Message) int {
	return tokens.NewMessageCounter(tokens.MessageOptions{}).Count(msgs)
}

func longHistory(n int) []agentctx.Message {
	msgs := []agentctx.Message{agentctx.NewMessage(agentctx.RoleSystem, agentctx.Text("You are a coding agent."))}
	for i := range n {
		at := now.Add(time.Duration(i-n) * time.Minute)
		msgs = append(msgs, user(fmt.Sprintf("step %d: %s", i, strings.Repeat("please continue with the plan ", 12)), at))
		msgs = append(msgs, exchange(fmt.Sprintf("toolu_%03d", i), "Read", "cat f", strings.Repeat(fmt.Sprintf("line %d of the file\n", i), 25), false, at.Add(time.Second))...)
	}
	return msgs
}

func TestCompactTriggerBoundary(t *testing.T) {
	// Seed 002 F-002: tokens equal to the threshold compact (≥).
	msgs := longHistory(10)
	n := tokensOf(msgs)
	for _, tt := range []struct {
		limit     int
		compacted bool
	}{{n, true}, {n + 1, false}} {
		t.Run(fmt.Sprint(tt.limit-n), func(t *testing.T) {
			o := options(t)
			o.NoPrune, o.Offload = true, pipeline.OffloadNone
			o.Compact.Limit, o.Compact.Threshold, o.Compact.TailRatio = tt.limit, 1.0, 0.1
			res := mustPrepare(t, newPipeline(t, o), msgs)
			c := res.Report.Step(pipeline.StepCompact).Compact
			if c.Compacted != tt.compacted {
				t.Errorf("%d tokens, threshold %d: compacted %v, want %v", n, res.Report.ThresholdTokens, c.Compacted, tt.compacted)
			}
			if res.Report.TokensBefore != n || res.Report.Step(pipeline.StepCount).Count.Tokens != n {
				t.Errorf("tokens before %d, want %d", res.Report.TokensBefore, n)
			}
			if !res.Report.BelowThreshold && tt.compacted {
				t.Errorf("still over the trigger: %v", res.Report.Warnings)
			}
		})
	}
}

func TestCompactionThatCannotGetBelowIsReportedOnce(t *testing.T) {
	msgs := longHistory(6)
	msgs = append(msgs, user("and now this huge paste: "+strings.Repeat("stack frame ", 4000), now))
	sum := &countingSummarizer{}
	o := options(t)
	o.Compact.Limit, o.Compact.Summarizer = 2000, sum
	p := newPipeline(t, o)
	res := mustPrepare(t, p, msgs)
	r := &res.Report
	c := r.Step(pipeline.StepCompact).Compact
	if !c.Compacted || c.Reason != compact.ReasonRetainedOverThreshold || r.BelowThreshold {
		t.Errorf("compact %+v, below %v", c, r.BelowThreshold)
	}
	if sum.calls.Load() != 1 || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "not compacting again") {
		t.Errorf("summarizer called %d times, warnings %q", sum.calls.Load(), r.Warnings)
	}
	// The next request with the same history reuses the summary and does
	// not summarize again: nothing is left to summarize (over the limit,
	// compaction looks again, and finds so without a summary).
	res = mustPrepare(t, p, msgs)
	if sum.calls.Load() != 1 {
		t.Errorf("summarizer called again: %d", sum.calls.Load())
	}
	if c := res.Report.Step(pipeline.StepCompact).Compact; c.Reused == 0 || c.Compacted || len(res.Report.Warnings) != 1 || !strings.Contains(res.Report.Warnings[0], "nothing left to summarize") {
		t.Errorf("second call: %+v, warnings %q", c, res.Report.Warnings)
	}
}

// A summary that fails within the limit leaves the list as it came (over
// the limit it falls back: TestOverTheLimitFallsBackToTheExtractiveSummary).
func TestSummarizerFailure(t *testing.T) {
	msgs := longHistory(12)
	for _, required := range []bool{false, true} {
		t.Run(fmt.Sprint("required=", required), func(t *testing.T) {
			sum := &countingSummarizer{fail: true}
			o := options(t)
			o.NoPrune = true
			// Over the trigger (92%), within the limit.
			o.Compact.Limit, o.Compact.Summarizer, o.Compact.MaxRetries, o.Compact.SummaryRequired = tokensOf(msgs)*104/100, sum, 1, required
			o.Compact.Backoff = func(int) time.Duration { return 0 }
			res, err := prepare(t, newPipeline(t, o), msgs)
			if sum.calls.Load() != 2 {
				t.Errorf("%d attempts, want 2 (one retry)", sum.calls.Load())
			}
			if required {
				if err == nil || !strings.Contains(err.Error(), "model unavailable") {
					t.Errorf("err = %v, want the summarizer's failure", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c := res.Report.Step(pipeline.StepCompact).Compact
			if c.Compacted || c.Reason != compact.ReasonSummarizerFailed || len(res.Report.Warnings) != 1 || len(res.Messages) != len(msgs) {
				t.Errorf("compact %+v, warnings %q", c, res.Report.Warnings)
			}
		})
	}
}

func TestCompactionIsRememberedAcrossRequests(t *testing.T) {
	msgs := longHistory(14)
	sum := &countingSummarizer{}
	o := options(t)
	o.NoPrune = true
	o.Compact.Limit, o.Compact.Summarizer = 3000, sum
	p := newPipeline(t, o)
	first := mustPrepare(t, p, msgs)
	c1 := first.Report.Step(pipeline.StepCompact).Compact
	if !c1.Compacted || sum.calls.Load() != 1 || !first.Report.BelowThreshold {
		t.Fatalf("first request: %+v", c1)
	}

	// The history grows by one exchange: the same summary stands for the
	// same messages, nothing is summarized or archived again.
	grown := append(slices.Clone(msgs), exchange("toolu_new", "Read", "cat g", "small", false, now)...)
	second := mustPrepare(t, p, grown)
	c2 := second.Report.Step(pipeline.StepCompact).Compact
	if sum.calls.Load() != 1 || c2.Compacted || c2.Reused != c1.Stats.CompactedMessageCount || c2.ReusedArchive != c1.Archive {
		t.Errorf("second request: %+v (summarizer calls %d)", c2, sum.calls.Load())
	}
	if !second.Report.BelowThreshold || second.Report.Step(pipeline.StepCompact).TokensSaved <= 0 {
		t.Errorf("second request: below %v, saved %d", second.Report.BelowThreshold, second.Report.Step(pipeline.StepCompact).TokensSaved)
	}
	// The beginning of what is sent is the same: provider caches hold.
	n := 2 // the system prompt and the summary
	a, _ := agentctx.MarshalMessages(first.Messages[:n])
	b, _ := agentctx.MarshalMessages(second.Messages[:n])
	if string(a) != string(b) {
		t.Error("the start of the list changed between requests")
	}
	if len(second.Messages) != len(first.Messages)+2 {
		t.Errorf("second list has %d messages, want %d", len(second.Messages), len(first.Messages)+2)
	}
	archives, _ := p.Workspace().Query(context.Background(), workspace.Filter{Metadata: workspace.Metadata{workspace.KeyContextType: pipeline.ContextCompactionArchive}})
	if len(archives) != 1 {
		t.Errorf("%d archives, want 1", len(archives))
	}

	// A history whose summarized part differs is not given the summary.
	edited := slices.Clone(grown)
	edited[3] = edited[3].WithContent(agentctx.Text("edited"))
	mustPrepare(t, p, edited)
	if sum.calls.Load() != 2 {
		t.Errorf("edited history: summarizer calls %d, want 2", sum.calls.Load())
	}

	// Growing further until the trigger is reached again compacts again,
	// carrying the earlier summary in (rolling compaction, seed 002 UC-002).
	longer := slices.Clone(grown)
	for i := range 12 {
		longer = append(longer, exchange(fmt.Sprintf("toolu_more_%d", i), "Read", "cat h", strings.Repeat("more output\n", 150), false, now)...)
	}
	p2 := newPipeline(t, o)
	mustPrepare(t, p2, grown)
	before := sum.calls.Load()
	third := mustPrepare(t, p2, longer)
	c3 := third.Report.Step(pipeline.StepCompact).Compact
	if !c3.Compacted || c3.Reused == 0 || sum.calls.Load() != before+1 || !third.Report.BelowThreshold {
		t.Errorf("rolling compaction: %+v", c3)
	}
}

func TestStatelessAndReset(t *testing.T) {
	msgs := longHistory(14)
	grown := append(slices.Clone(msgs), exchange("toolu_new", "Read", "cat g", "small", false, now)...)
	for _, tt := range []struct {
		name  string
		setup func(*pipeline.Options)
		reset bool
	}{
		{"stateless", func(o *pipeline.Options) { o.Stateless = true }, false},
		{"reset", func(*pipeline.Options) {}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sum := &countingSummarizer{}
			o := options(t)
			o.NoPrune = true
			o.Compact.Limit, o.Compact.Summarizer = 3000, sum
			tt.setup(&o)
			p := newPipeline(t, o)
			mustPrepare(t, p, msgs)
			if tt.reset {
				if err := p.Reset(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			res := mustPrepare(t, p, grown)
			if sum.calls.Load() != 2 || res.Report.Step(pipeline.StepCompact).Compact.Reused != 0 {
				t.Errorf("summarizer calls %d, reused %d", sum.calls.Load(), res.Report.Step(pipeline.StepCompact).Compact.Reused)
			}
		})
	}
}

func TestPrepareDocumentCountsTheSystemPrompt(t *testing.T) {
	doc, err := agentctx.ParseDocument(context.Background(), []byte(`{"system":"You are a careful agent. Answer briefly.","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	o := options(t)
	o.ReservedTokens = 100
	p := newPipeline(t, o)
	res, err := p.PrepareDocument(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	sys, _ := doc.System()
	want := 100 + tokens.NewMessageCounter(tokens.MessageOptions{}).CountContent(sys)
	if res.Report.ReservedTokens != want || res.Report.TokensBefore != want+1 || res.Report.TokensAfter != want+1 {
		t.Errorf("reserved %d, before %d, after %d; want reserved %d", res.Report.ReservedTokens, res.Report.TokensBefore, res.Report.TokensAfter, want)
	}
}

func TestCancelledContext(t *testing.T) {
	o := options(t)
	p := newPipeline(t, o)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.Prepare(ctx, longHistory(3))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
	if _, err := os.Stat(o.WorkspaceDir); !errors.Is(err, os.ErrNotExist) {
		t.Error("wrote after cancel")
	}
}

func TestEmptyHistory(t *testing.T) {
	res := mustPrepare(t, newPipeline(t, options(t)), nil)
	if res.Messages == nil || len(res.Messages) != 0 || res.Report.TokensBefore != 0 || !res.Report.BelowThreshold {
		t.Errorf("empty: %+v", res.Report)
	}
}

func TestConcurrentPrepare(t *testing.T) {
	msgs := longHistory(14)
	o := options(t)
	o.Compact.Limit = 3000
	p := newPipeline(t, o)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			res, err := p.Prepare(context.Background(), msgs)
			if err == nil && !res.Report.BelowThreshold {
				err = errors.New("not below the trigger")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestInvalidOptions(t *testing.T) {
	for _, o := range []pipeline.Options{
		{Offload: "cloud"},
		{ReservedTokens: -1},
		{Files: offload.BatchOptions{MinChars: -1}},
		{Workspace: workspace.Options{InlineLimit: -5}},
		{Compact: compact.Options{Limit: -1}},
	} {
		if _, err := pipeline.New(o); !errors.Is(err, pipeline.ErrInvalidOption) {
			t.Errorf("%+v: err = %v", o, err)
		}
	}
}

func TestReportJSONAndString(t *testing.T) {
	o := options(t)
	o.Compact.Limit = 1500
	res := mustPrepare(t, newPipeline(t, o), append(longHistory(12), exchange("toolu_x", "Bash", "make", "ok", false, now.Add(-time.Hour))...))
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	json.Unmarshal(data, &top)
	if len(top) != 2 || top["messages"] == nil || top["report"] == nil {
		t.Errorf("top-level keys: %s", data[:min(len(data), 200)])
	}
	var rep map[string]json.RawMessage
	json.Unmarshal(top["report"], &rep)
	for _, k := range []string{"messages_before", "messages_after", "tokens_before", "tokens_after", "reserved_tokens", "limit",
		"threshold_tokens", "below_threshold", "valid", "chars_saved", "tokens_saved", "steps", "warnings", "duration_ms"} {
		if _, ok := rep[k]; !ok {
			t.Errorf("report has no %q", k)
		}
	}
	var back pipeline.Report
	if err := json.Unmarshal(top["report"], &back); err != nil || len(back.Steps) != 6 || back.TokensAfter != res.Report.TokensAfter {
		t.Errorf("report does not read back: %v", err)
	}
	sum := 0
	for _, s := range res.Report.Steps {
		sum += s.TokensSaved
	}
	if sum != res.Report.TokensSaved || res.Report.TokensBefore-res.Report.TokensAfter != sum {
		t.Errorf("steps save %d tokens, report says %d, before-after %d", sum, res.Report.TokensSaved, res.Report.TokensBefore-res.Report.TokensAfter)
	}
	s := res.Report.String()
	for _, want := range []string{"tokens ", "repair ", "prune ", "offload ", "count ", "compact ", "summarized", "originals in", "validate ", "pair up"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
}

// TestPrepareOddInputs runs the pipeline over every test document of the
// repository and over odd messages: it must never panic, and whatever it
// returns without error pairs up.
func TestPrepareOddInputs(t *testing.T) {
	var docs [][]agentctx.Message
	files, _ := filepath.Glob("../testdata/*.json*")
	for _, f := range files {
		doc, err := transcript.ReadFile(context.Background(), f, nil)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, c := range doc.Conversations() {
			docs = append(docs, c.Messages)
		}
	}
	for _, raw := range []string{
		`[{"role":"user","content":null},{"role":"assistant"},{"role":"tool","tool_call_id":"x","content":[{"type":"text","text":"orphan"}]}]`,
		`[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"Bash","input":{"command":["ls","-l"]}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"{\"stdout\":\"x\",\"exitCode\":0}"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}]}]`,
		`[{"role":"system","content":"s"},{"role":"system","content":"t"}]`,
		`[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{"}}]},{"role":"tool","tool_call_id":"c","content":42}]`,
		`[{"role":"user","content":"x","timestamp":"not a time"},{"role":"user","content":"y","timestamp":-5}]`,
	} {
		msgs, err := agentctx.UnmarshalMessages([]byte(raw))
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		docs = append(docs, msgs)
	}
	for i, msgs := range docs {
		for _, limit := range []int{50, 200_000} {
			o := options(t)
			o.Compact.Limit = limit
			o.Verify = true
			res, err := prepare(t, newPipeline(t, o), msgs)
			if err != nil {
				if !errors.Is(err, agentctx.ErrInvalidInput) {
					t.Errorf("document %d, limit %d: %v", i, limit, err)
				}
				continue
			}
			if !res.Report.Valid || !res.Report.Verified() {
				t.Errorf("document %d, limit %d: valid %v, verified %v", i, limit, res.Report.Valid, res.Report.Verified())
			}
		}
	}
}

// A request the steps leave as it is reports the pairing of its input,
// validated once: the counts are the output's (mustPrepare compares the
// report with the output's own).
func TestValidateReportOfAnUnchangedRequest(t *testing.T) {
	o := options(t)
	o.NoCompact, o.NoPrune = true, true
	p := newPipeline(t, o)
	msgs := history(user("go", now), exchange("call_1", "Bash", "ls", "ok", false, now), exchange("call_1", "Bash", "ls", "ok again", false, now), say("done", now))
	for range 2 {
		res := mustPrepare(t, p, msgs)
		if v := res.Report.Step(pipeline.StepValidate).Pairing; !v.Valid || v.ToolUses != 2 || v.ToolResults != 2 || v.Messages != len(msgs) {
			t.Fatalf("validate step: %+v", v)
		}
	}
}
