package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pricing"
)

// exampleHistory is a short session: a build an hour ago, five file reads
// since, a 50,000-character log, and a call whose result was never
// recorded.
func exampleHistory(now time.Time) []agentctx.Message {
	msg := func(role string, at time.Time, blocks ...agentctx.Block) agentctx.Message {
		return agentctx.NewMessage(role, agentctx.BlockList(blocks...)).WithTimestamp(at)
	}
	call := func(id, tool, cmd string, at time.Time) agentctx.Message {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		return msg(agentctx.RoleAssistant, at, agentctx.ToolUseBlock(id, tool, in))
	}
	result := func(id, out string, at time.Time) agentctx.Message {
		return msg(agentctx.RoleUser, at, agentctx.ToolResultBlock(id, agentctx.Text(out), false))
	}
	h := []agentctx.Message{
		agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("Build the project and look at the logs.")).WithTimestamp(now.Add(-time.Hour)),
		call("toolu_build", "Bash", "make", now.Add(-time.Hour)),
		result("toolu_build", strings.Repeat("cc -O2 -c main.c\n", 40)+"cc -o app main.o\nbuild ok", now.Add(-time.Hour)),
	}
	for i := range 5 {
		id := fmt.Sprintf("toolu_read%d", i)
		h = append(h, call(id, "Read", "cat notes.txt", now.Add(-10*time.Minute)), result(id, "notes", now.Add(-10*time.Minute)))
	}
	h = append(h,
		call("toolu_log", "Read", "cat app.log", now.Add(-time.Minute)),
		result("toolu_log", strings.Repeat("GET /health 200 1ms\n", 2500), now.Add(-time.Minute)),
		call("toolu_lost", "Bash", "tail app.log", now))
	return h
}

func Example() {
	dir, err := os.MkdirTemp("", "pipeline-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	now := time.Date(2026, 1, 31, 2, 0, 0, 0, time.UTC)

	p, err := pipeline.New(pipeline.Options{
		WorkspaceDir: filepath.Join(dir, "workspace"),
		Compact:      compact.Options{Dir: filepath.Join(dir, "archive")},
		Now:          func() time.Time { return now },
	})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()

	history := exampleHistory(now)
	res, err := p.Prepare(context.Background(), history)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range res.Report.Steps {
		fmt.Printf("%-8s changed %d\n", s.Step, s.Changed)
	}
	for r := range agentctx.ToolResults(res.Messages) {
		switch r.ID {
		case "toolu_build", "toolu_lost":
			first, _, _ := strings.Cut(r.Content.Text(), "\n")
			fmt.Printf("%s: %s\n", r.ID, first)
		case "toolu_log":
			first, _, _ := strings.Cut(r.Content.Text(), "\n")
			fmt.Printf("%s: %s (names its artifact: %v)\n", r.ID, first, strings.Contains(r.Content.Text(), `id="tool_result_toolu_log"`))
		}
	}
	fmt.Println("below the trigger:", res.Report.BelowThreshold, "valid:", res.Report.Valid)
	fmt.Println("history unchanged:", len(history), "messages")
	// Output:
	// repair   changed 1
	// prune    changed 1
	// offload  changed 1
	// count    changed 0
	// compact  changed 0
	// validate changed 0
	// toolu_build: 此命令返回内容已过时
	// toolu_log: <knowledge_list> (names its artifact: true)
	// toolu_lost: Error: no result was recorded for this tool call.
	// below the trigger: true valid: true
	// history unchanged: 16 messages
}

// The loop of an agent: prepare the stored history before each request,
// send what Prepare returns, append the reply and the tool results to the
// history. A compaction is done once and reused while the history grows.
func Example_agentLoop() {
	dir, err := os.MkdirTemp("", "pipeline-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	now := time.Date(2026, 1, 31, 2, 0, 0, 0, time.UTC)
	p, err := pipeline.New(pipeline.Options{
		SessionID:    "s1",
		WorkspaceDir: filepath.Join(dir, "workspace"),
		Compact:      compact.Options{Limit: 3_000, Dir: filepath.Join(dir, "archive")},
		Now:          func() time.Time { return now },
	})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()

	history := []agentctx.Message{agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("Summarize every chapter."))}
	for turn := 1; turn <= 14; turn++ {
		res, err := p.Prepare(context.Background(), history)
		if err != nil {
			log.Fatal(err)
		}
		if c := res.Report.Step(pipeline.StepCompact).Compact; c.Compacted || c.Reused > 0 {
			fmt.Printf("request %d: %d messages sent for %d stored (compacted %v, reused summary of %d)\n",
				turn, len(res.Messages), len(history), c.Compacted, c.Reused)
		}
		// A fake model reads one chapter per turn.
		id := fmt.Sprintf("toolu_%02d", turn)
		history = append(history,
			agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(
				agentctx.ToolUseBlock(id, "Read", json.RawMessage(fmt.Sprintf(`{"file_path":"chapter%02d.md"}`, turn))))),
			agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(
				agentctx.ToolResultBlock(id, agentctx.Text(strings.Repeat(fmt.Sprintf("Chapter %d text. ", turn), 60)), false))))
	}
	// Output:
	// request 10: 3 messages sent for 19 stored (compacted true, reused summary of 0)
	// request 11: 5 messages sent for 21 stored (compacted false, reused summary of 17)
	// request 12: 7 messages sent for 23 stored (compacted false, reused summary of 17)
	// request 13: 9 messages sent for 25 stored (compacted false, reused summary of 17)
	// request 14: 11 messages sent for 27 stored (compacted false, reused summary of 17)
}

// A Pipeline is a session engine: the second request re-applies what the
// first decided, and the usage the provider reports calibrates the
// estimates of the next request.
func ExamplePipeline_Observe() {
	dir, err := os.MkdirTemp("", "agentctx-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	p, err := pipeline.New(pipeline.Options{SessionID: "s1", WorkspaceDir: filepath.Join(dir, "ws")})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	history := []agentctx.Message{
		agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("Summarize the design document.")),
	}
	first, err := p.Prepare(ctx, history)
	if err != nil {
		log.Fatal(err)
	}
	// The provider billed 1,500 input tokens for the request (its system
	// prompt and tools included).
	if err := p.Observe(ctx, pricing.Usage{Uncached: 1500}, 0); err != nil {
		log.Fatal(err)
	}
	history = append(history,
		agentctx.NewMessage(agentctx.RoleAssistant, agentctx.Text("The design has three parts.")),
		agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("Go on.")))
	next, err := p.Prepare(ctx, history)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("first: counted", first.Report.TokensAfter, "estimated", first.Report.EstimatedTokens)
	fmt.Println("next: counted", next.Report.TokensAfter, "estimated", next.Report.EstimatedTokens)
	fmt.Println("requests in the session:", next.Report.Session.Requests, "calibrated:", next.Report.Session.Calibrated)
	// Output:
	// first: counted 7 estimated 7
	// next: counted 16 estimated 1509
	// requests in the session: 2 calibrated: true
}
