package prune_test

import (
	"fmt"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/prune"
)

const exampleHistory = `[
{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"terminal-execute","arguments":"{\"command\":\"npm run build\"}"}}]},
{"role":"tool","tool_call_id":"c1","content":"{\"stdout\":\"Building project...\\nDone in 3.2s\",\"stderr\":\"\",\"exitCode\":0}","timestamp":"2026-01-31T01:00:00Z"},
{"role":"assistant","content":null,"tool_calls":[{"id":"c2","type":"function","function":{"name":"terminal-execute","arguments":"{\"command\":\"npm test\"}"}}]},
{"role":"tool","tool_call_id":"c2","content":"{\"stdout\":\"\",\"stderr\":\"Error: Cannot find module 'xxx'\",\"exitCode\":1}","timestamp":"2026-01-31T01:05:00Z"},
{"role":"assistant","content":null,"tool_calls":[{"id":"c3","type":"function","function":{"name":"terminal-execute","arguments":"{\"command\":\"ls\"}"}}]},
{"role":"tool","tool_call_id":"c3","content":"{\"stdout\":\"package.json\\nsrc\",\"stderr\":\"\",\"exitCode\":0}","timestamp":"2026-01-31T01:10:00Z"}
]`

// Prune the view of a history at 01:30, keeping only the most recent
// successful result: the build output (30 minutes old) goes, the failed
// test run stays because it is an error, the listing stays because it is
// the most recent.
func Example() {
	history, err := agentctx.UnmarshalMessages([]byte(exampleHistory))
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 31, 1, 30, 0, 0, time.UTC)

	res := prune.Prune(history, prune.Options{
		Now:        func() time.Time { return now },
		KeepRecent: 1,
	})
	for r := range agentctx.ToolResults(res.Messages) {
		fmt.Printf("%s: %s\n", r.ID, r.Content.AsText())
	}
	fmt.Printf("pruned %d, freed %d chars, %d tokens\n", res.PrunedCount, res.FreedChars, res.FreedTokens)
	// The stored history still holds the output.
	fmt.Println("stored c1:", history[1].Content.AsText())
	// Output:
	// c1: 此命令返回内容已过时
	// c2: {"stdout":"","stderr":"Error: Cannot find module 'xxx'","exitCode":1}
	// c3: {"stdout":"package.json\nsrc","stderr":"","exitCode":0}
	// pruned 1, freed 61 chars, 14 tokens
	// stored c1: {"stdout":"Building project...\nDone in 3.2s","stderr":"","exitCode":0}
}

// A placeholder that tells the model how to get the output back: here the
// command and the workspace artifact (SPEC §5) that keeps the result.
func ExampleOptions_placeholderFunc() {
	history, err := agentctx.UnmarshalMessages([]byte(exampleHistory))
	if err != nil {
		panic(err)
	}
	res := prune.Prune(history, prune.Options{
		Now:        func() time.Time { return time.Date(2026, 1, 31, 2, 0, 0, 0, time.UTC) },
		KeepRecent: -1, // keep no results just for being recent
		PlaceholderFunc: func(s prune.Stale) string {
			return fmt.Sprintf("[output of `%s` (%s ago) pruned; get_knowledge_by_id tool_result_%s]",
				s.Command(), s.Age, s.Result.ID)
		},
	})
	for _, p := range res.Pruned {
		fmt.Println(res.Messages[p.MessageIndex].Content.Text())
	}
	// Output:
	// [output of `npm run build` (1h0m0s ago) pruned; get_knowledge_by_id tool_result_c1]
	// [output of `ls` (50m0s ago) pruned; get_knowledge_by_id tool_result_c3]
}
