package compact_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
)

func ExampleCompact() {
	dir, _ := os.MkdirTemp("", "compact-example-")
	defer os.RemoveAll(dir)

	long := strings.Repeat("lorem ipsum dolor sit amet ", 100)
	msgs, _ := agentctx.UnmarshalMessages([]byte(`[
		{"role":"system","content":"You are a coding agent."},
		{"role":"user","content":"Fix the failing build. ` + long + `"},
		{"role":"assistant","content":[{"type":"text","text":"Running the build."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"go build ./..."}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"Exit code 1\n./main.go:3: undefined: x\n` + long + `"}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Edit","input":{"file_path":"main.go","old_string":"x","new_string":"y"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"The file main.go has been updated."}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"t3","name":"Bash","input":{"command":"go build ./..."}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t3","content":"ok"}]},
		{"role":"assistant","content":"The build passes now."}
	]`))

	res, err := compact.Compact(context.Background(), msgs, compact.Options{
		Limit:     1000, // a tiny window, to show compaction
		TailRatio: 0.03,
		Dir:       dir,
		SessionID: "demo",
		Now:       func() time.Time { return time.Date(2026, 11, 22, 7, 14, 0, 0, time.UTC) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("compacted:", res.Compacted, "below threshold:", res.BelowThreshold)
	fmt.Println("messages:", len(msgs), "→", len(res.Messages))
	fmt.Println("archive:", filepath.Base(res.Archive))
	for _, m := range res.Messages {
		fmt.Printf("  %s: %.40q\n", m.Role, firstLineOf(m))
	}
	fmt.Println(strings.Split(res.Summary, "## ")[5])
	// Output:
	// compacted: true below threshold: true
	// messages: 9 → 7
	// archive: compact-20261122T071400Z-1.json
	//   system: "You are a coding agent."
	//   user: "# Summary of the earlier conversation"
	//   assistant: "[{\"type\":\"tool_use\",\"id\":\"t2\",\"name\":\"Ed"
	//   user: "[{\"type\":\"tool_result\",\"tool_use_id\":\"t2"
	//   assistant: "[{\"type\":\"tool_use\",\"id\":\"t3\",\"name\":\"Ba"
	//   user: "[{\"type\":\"tool_result\",\"tool_use_id\":\"t3"
	//   assistant: "The build passes now."
	// Errors and fixes
	// - Bash `go build ./...` failed: ./main.go:3: undefined: x → still open
}

func firstLineOf(m agentctx.Message) string {
	s := m.Content.AsText()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

func ExampleCheck() {
	msgs := []agentctx.Message{
		agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(strings.Repeat(" hello", 100))),
	}
	chk, _ := compact.Check(msgs, compact.Options{Limit: 100})
	fmt.Printf("%+v\n", chk)
	// Output:
	// {ShouldCompact:true Tokens:100 ThresholdTokens:92}
}

func ExampleSplit() {
	msgs := []agentctx.Message{
		agentctx.NewMessage(agentctx.RoleSystem, agentctx.Text("system prompt")),
		agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(strings.Repeat("a ", 50))),
		agentctx.NewMessage(agentctx.RoleAssistant, agentctx.Text(strings.Repeat("b ", 50))),
		agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(strings.Repeat("c ", 8))),
		agentctx.NewMessage(agentctx.RoleAssistant, agentctx.Text(strings.Repeat("d ", 8))),
	}
	// Tail budget: 100 × 0.1 = 10 tokens; the last two messages reach it.
	p := compact.Split(msgs, compact.Options{Limit: 100})
	fmt.Println(len(p.Head), len(p.Middle), len(p.Tail))
	// Output:
	// 1 2 2
}

func ExampleExtractive() {
	msgs, _ := agentctx.UnmarshalMessages([]byte(`[
		{"role":"user","content":"Rename the config file."},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"rm old.yaml\"}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"done"}
	]`))
	s, _ := compact.Extractive{}.Summarize(context.Background(), compact.Request{Messages: msgs})
	fmt.Println(s)
	// Output:
	// # Summary of the earlier conversation
	//
	// 3 earlier messages compacted: 1 user request, 1 assistant message, 1 tool call (0 failed).
	//
	// ## User requests
	// 1. Rename the config file.
	//
	// ## Goals and key decisions
	// - none
	//
	// ## File operations
	// - old.yaml: deleted
	//
	// ## Tool calls
	// - 1 call: bash ×1
	//
	// ## Errors and fixes
	// - none
	//
	// ## Current state
	// - Current task: the latest request (the last one under User requests).
}

func ExampleModelSummarizer() {
	// Any model will do; this one answers from a script.
	model := compact.ModelFunc(func(_ context.Context, system, prompt string) (string, error) {
		return "## Goals and key decisions\n- Say hello.", nil
	})
	sum := &compact.ModelSummarizer{Model: model}
	msgs := []agentctx.Message{agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("hello"))}
	s, _ := sum.Summarize(context.Background(), compact.Request{Messages: msgs})
	fmt.Println(s)
	// Output:
	// # Summary of the earlier conversation
	//
	// ## Goals and key decisions
	// - Say hello.
}

func ExampleWithPointers() {
	summary := compact.SummaryTitle + "\n\n## Current state\n- The tests pass."
	ps := []compact.Pointer{
		{Kind: compact.PointerResult, ToolName: "Bash", Input: "go test ./...", ArtifactID: "tool_result_toolu_01",
			Path: "/work/.agentctx/default/tool_result_toolu_01.txt", Chars: 60127, Lines: 812},
		{Kind: compact.PointerArchive, ArtifactID: "compact_4bbb520b5ce37c2c", Messages: 89,
			Path: "/work/.agentctx/default/compact_4bbb520b5ce37c2c.txt", Bytes: 123456},
	}
	// A summarizer (a model) that left the pointers out gets them back.
	out := compact.WithPointers(summary, ps)
	fmt.Println(out)
	fmt.Println(len(compact.ParsePointers(out)), "pointers read back")
	// Output:
	// # Summary of the earlier conversation
	//
	// ## Current state
	// - The tests pass.
	//
	// ## Stored originals
	// Kept whole: read one back with get_knowledge_by_id(artifact_id="<id>"), or read its file. An archive holds its messages as JSON, an earlier summary with its own stored originals included.
	// - Bash `go test ./...` → tool_result_toolu_01 (/work/.agentctx/default/tool_result_toolu_01.txt, 60,127 chars, 812 lines)
	// - Archive of 89 messages → compact_4bbb520b5ce37c2c (/work/.agentctx/default/compact_4bbb520b5ce37c2c.txt, 123,456 bytes)
	// 2 pointers read back
}
