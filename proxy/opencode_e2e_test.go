package proxy_test

// Issue 47: opencode, with its Anthropic provider pointed at the proxy, as
// the fourth real client: headless (`opencode run`) and offline
// (e2eclient.OpencodeEnv), through the proxy in process, against the
// strict fake upstream.

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/testkit/e2eclient"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/prune"
	"github.com/agentctx/agentctx/workspace"
)

// opencodeTool reports whether the request offers opencode's tool name.
func opencodeTool(c *fakeupstream.Call, name string) bool {
	for _, n := range c.ToolNames {
		if n == name {
			return true
		}
	}
	return false
}

// opencodeBash is a call of opencode's shell tool, bash (command, and an
// optional timeout and workdir).
func opencodeBash(c *fakeupstream.Call, cmd string) (fakeupstream.ToolCall, bool) {
	return fakeupstream.ToolCall{Name: "bash", Input: map[string]any{"command": cmd}}, opencodeTool(c, "bash")
}

// opencodeRead is a call of opencode's read tool, whose path is filePath
// (offset and limit, in lines, left to their defaults: the first 2,000
// lines, up to 50 KB).
func opencodeRead(c *fakeupstream.Call, path string) (fakeupstream.ToolCall, bool) {
	return fakeupstream.ToolCall{Name: "read", Input: map[string]any{"filePath": path}}, opencodeTool(c, "read")
}

// opencodeFiller returns filler step i's call: odd steps print 50 to 200
// lines of about 37 characters (2 to 7.5 KB) with bash, terminal output
// that the engine clears once stale; even steps read a notes file of 3.5
// to 6.5 KB (writeOpencodeNotes) with read, results the engine does not clear
// (its prune options name bash only), so that the history grows until
// only a compaction keeps it within the limit. Both stay under the
// engine's inline limit (8,000 characters): kept whole while fresh.
func opencodeFiller(work string) func(c *fakeupstream.Call, i int) (fakeupstream.ToolCall, bool) {
	return func(c *fakeupstream.Call, i int) (fakeupstream.ToolCall, bool) {
		if i%2 == 0 {
			return opencodeRead(c, filepath.Join(work, opencodeNotesName(i)))
		}
		cmd := fmt.Sprintf("seq 1 %d | sed 's/$/ filler-%d padding-padding-padding/'", 50+(i*67)%151, i)
		return opencodeBash(c, cmd)
	}
}

func opencodeNotesName(i int) string { return fmt.Sprintf("notes-%02d.txt", i) }

// writeOpencodeNotes writes the notes files of the even filler steps up
// to n into work.
func writeOpencodeNotes(t *testing.T, work string, n int) {
	t.Helper()
	for i := 2; i <= n; i += 2 {
		var b strings.Builder
		for line := 1; b.Len() < 3500+(i*911)%3000; line++ {
			fmt.Fprintf(&b, "note %02d.%03d: the filler step read this line, nothing to act on\n", i, line)
		}
		if err := os.WriteFile(filepath.Join(work, opencodeNotesName(i)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// opencodeLimit is the proxy's limit (--limit) for the task: opencode's
// system prompt and tools (about 6,600 tokens) fit well below it, the
// early result's reference and a few fillers reach the clearing trigger,
// and the notes read since bring a compaction.
const opencodeLimit = 18_000

// opencodeMaxFillers bounds the filler steps before the read-back.
const opencodeMaxFillers = 16

// opencodeEngine is e2eEngine's pipeline (offload past 8,000 characters,
// bash results cleared in batches once stale, compaction at limit) with
// its workspace in ws, where the read-back model looks for pointers.
func opencodeEngine(t *testing.T, upstream, ws string, limit int) *proxy.PipelineEngine {
	t.Helper()
	e, err := proxy.NewPipelineEngine(proxy.PipelineOptions{
		Pipeline: pipeline.Options{
			WorkspaceDir: ws,
			Workspace:    workspace.Options{InlineLimit: 8000},
			Prune:        prune.Options{MaxAge: time.Millisecond, KeepRecent: 1, ToolNames: []string{"bash"}},
			ClearAtLeast: 2_000,
			Clearing:     pipeline.ClearBatched,
			Compact:      compact.Options{Limit: limit, Dir: filepath.Join(t.TempDir(), "archive"), MaxRetries: -1},
		},
		Summarizer: proxy.UpstreamSummarizers(proxy.UpstreamSummarizerOptions{AnthropicURL: upstream}),
		Logger:     testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// TestOpencodeEndToEnd runs opencode through the proxy (a small limit) on
// the fake's read-back task: step 1 prints big.txt with bash, 62,000
// characters whose middle line holds a token the final answer must quote;
// filler steps of 2 to 7.5 KB (opencodeFiller) follow until the proxy has
// cleared stale results and compacted the history; the model then reads
// back, with opencode's read tool, the file a pointer of the summary
// names.
//
// opencode's own cut of a tool's output (50 KB, the rest saved to a file
// of its own: "Full output saved to: ...") is raised in its config
// (e2eclient.OpencodeConfig): under it the early result would reach the
// proxy cut, with opencode's pointer to its file, whose read the proxy
// leaves whole (issue 47.5), and the run would test opencode's offload,
// not the proxy's. The test asserts that no request carried such a cut.
func TestOpencodeEndToEnd(t *testing.T) {
	t.Parallel() // its own upstream, proxy, home and working directories: the client runs overlap
	clients := e2eclient.InstallOpencode(t)
	home, work := t.TempDir(), t.TempDir()
	token := readBackToken(t)
	bigPath := filepath.Join(work, "big.txt")
	if err := os.WriteFile(bigPath, []byte(fakeupstream.ReadBackPayload(token, readBackSize)), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(t.TempDir(), "ws")
	writeOpencodeNotes(t, work, opencodeMaxFillers)
	model := fakeupstream.NewReadBack(fakeupstream.ReadBackOptions{
		Mode: fakeupstream.ByPath, FromSummary: true, SummaryTitle: compact.SummaryTitle, SummaryHeader: proxy.HeaderSummary,
		Produce: func(c *fakeupstream.Call) (fakeupstream.ToolCall, bool) { return opencodeBash(c, "cat big.txt") },
		Filler:  opencodeFiller(work), Fillers: 4, MaxFillers: opencodeMaxFillers, ReadPath: opencodeRead,
		PathRoots: []string{ws},
	})
	fake := fakeupstream.New(fakeupstream.Options{Script: model.Script})
	up := startUpstream(t, fake)
	srv, base := startProxy(t, up, opencodeEngine(t, up, ws, opencodeLimit))
	f := &readBackFixture{t: t, token: token, work: work, home: home, bigPath: bigPath, upstream: up, fake: fake, model: model, base: base, workspace: ws}

	env, err := e2eclient.OpencodeEnv(home, base, "dummy")
	if err != nil {
		t.Fatal(err)
	}
	guard := e2eclient.NewEgressGuard(t)
	argv := append(e2eclient.OpencodeCommand(clients), "run",
		"Print big.txt with bash, run the filler steps, then find SECRET_TOKEN in it again and report it as TOKEN=<value>.")
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = work, guard.Env(env)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	runErr := cmd.Run()
	f.dump()
	f.checkRejections()
	if runErr != nil {
		t.Fatalf("opencode: %v\nstdout: %s\nstderr: %s\nthe model's report:\n%s", runErr, e2eclient.Tail(stdout.String()), e2eclient.Tail(stderr.String()), model.Report())
	}
	t.Logf("opencode ran %v", time.Since(start).Round(time.Millisecond))
	if seen := guard.Seen(); len(seen) > 0 {
		t.Errorf("opencode tried to reach beyond loopback: %q", seen)
	}

	// The early value, read back by path after the compaction.
	f.check(stdout.String())
	f.checkCompacted()
	if reads := model.Reads(); len(reads) == 0 || reads[len(reads)-1].Call.Name != "read" {
		t.Errorf("the value was not read back with opencode's read tool:%s", describeReads(reads))
	}

	// What the upstream saw: the proxy's offload, clearing and compaction,
	// and no cut of opencode's own.
	var seen struct{ offload, clearing, summary, cut bool }
	summaries := 0
	for _, r := range fake.Records() {
		if r.API == "" {
			continue
		}
		if r.Header.Get(proxy.HeaderSummary) != "" {
			summaries++
		}
		seen.offload = seen.offload || bytes.Contains(r.Body, []byte("<knowledge_list>"))
		seen.clearing = seen.clearing || bytes.Contains(r.Body, []byte(prune.DefaultPlaceholder))
		seen.summary = seen.summary || bytes.Contains(r.Body, []byte(compact.SummaryTitle))
		seen.cut = seen.cut || bytes.Contains(r.Body, []byte("Full output saved to"))
	}
	if !seen.offload || !seen.clearing || !seen.summary {
		t.Errorf("upstream requests show offload %v, clearing %v, compaction %v; want all three", seen.offload, seen.clearing, seen.summary)
	}
	if seen.cut {
		t.Error(`a request carried opencode's own cut of a tool's output ("Full output saved to"): the early result did not reach the proxy whole`)
	}

	// The proxy's account: streams whole, its compactions the summaries
	// upstream, and its bill the fake's.
	var errs, cancels, compactions, edited, breaks, planned int
	var total proxy.Bill
	for _, st := range srv.Stats() {
		errs += st.Errors
		cancels += st.ClientCancels
		compactions += st.Compactions
		edited += st.Edited
		breaks += st.CacheBreaks
		planned += st.PrefixChanges
		total.CostUSD += st.CostUSD
		total.InputTokens += st.InputTokens
		total.CacheReadTokens += st.CacheReadTokens
		total.CacheWriteTokens += st.CacheWriteTokens
		total.OutputTokens += st.OutputTokens
		t.Logf("session %s: %d requests, %d edited, %d compactions, prefix changes %d, cache breaks %d, $%.4f",
			st.Session, st.Requests, st.Edited, st.Compactions, st.PrefixChanges, st.CacheBreaks, st.CostUSD)
	}
	if errs != 0 || cancels != 0 {
		t.Errorf("%d requests failed (an error status, or an answer cut) and %d were cancelled by opencode; want none", errs, cancels)
	}
	if compactions == 0 || summaries != compactions || edited == 0 {
		t.Errorf("%d compactions by the proxy, %d summary requests upstream, %d requests edited; want a compaction, one summary each, and edits", compactions, summaries, edited)
	}
	if breaks > planned {
		t.Errorf("%d cache breaks for %d prefix changes by the engine: the prompt cache broke where the proxy did not mean it to", breaks, planned)
	}
	bill := fake.Bill()
	if total.InputTokens != bill.Input || total.CacheReadTokens != bill.CacheRead || total.CacheWriteTokens != bill.CacheWrite+bill.CacheWrite1h ||
		total.OutputTokens != bill.Output || bill.USD <= 0 || math.Abs(total.CostUSD-bill.USD) > 1e-6*float64(bill.Requests) {
		t.Errorf("the proxy's bill: $%v, tokens in %d, cache read %d, cache written %d, out %d; the fake's: $%v, %+v",
			total.CostUSD, total.InputTokens, total.CacheReadTokens, total.CacheWriteTokens, total.OutputTokens, bill.USD, bill.Totals)
	}
	t.Logf("%d requests upstream (%d rejected), %d summaries; the bill $%.4f", bill.Requests, bill.Rejections, summaries, bill.USD)
}
