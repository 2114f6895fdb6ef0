package workspace_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/memstore"
)

// SavedPaths reads the text of a result, string or text blocks, by the
// rule of internal/base/clientsaved (whose table holds the clients'
// shapes): a client's preview names its file, a mere path does not.
func TestSavedPaths(t *testing.T) {
	preview := "<persisted-output>\nOutput too large (58.6KB). Full output saved to: /home/u/.claude/projects/-w/4f/tool-results/toolu_01.txt\n\nPreview (first 2KB):\nabc\n</persisted-output>"
	if got := workspace.SavedPaths(agentctx.Text(preview)); !slices.Equal(got, []string{"/home/u/.claude/projects/-w/4f/tool-results/toolu_01.txt"}) {
		t.Errorf("a string: SavedPaths = %q", got)
	}
	blocks := agentctx.BlockList(agentctx.TextBlock("x"), agentctx.TextBlock("Full output saved to: /tmp/x/b.txt"), agentctx.TextBlock("Full output saved to: /tmp/x/b.txt"))
	if got := workspace.SavedPaths(blocks); !slices.Equal(got, []string{"/tmp/x/b.txt"}) {
		t.Errorf("text blocks: SavedPaths = %q", got)
	}
	if got := workspace.SavedPaths(agentctx.Text("Finished report saved to /tmp/tmpq/target/llvm-cov/html")); got != nil {
		t.Errorf("a tool's own file: SavedPaths = %q, want none", got)
	}
}

func TestNamesSavedPath(t *testing.T) {
	paths := []string{"/tmp/x/a.txt", `C:\tool-results\t1.txt`}
	for in, want := range map[string]bool{
		`{"file_path":"/tmp/x/a.txt"}`:             true,
		`{"command":"sed -n 1,200p /tmp/x/a.txt"}`: true,
		`{"path":"C:\\tool-results\\t1.txt"}`:      true,
		`{"file_path":"/tmp/x/b.txt"}`:             false,
		`{"file_path":"/tmp/x/a.txt.bak"}`:         false,
		``:                                         false,
	} {
		if got := workspace.NamesSavedPath(json.RawMessage(in), paths); got != want {
			t.Errorf("NamesSavedPath(%s) = %v, want %v", in, got, want)
		}
	}
}

// Offload keeps whole a read of a file an earlier result said the client
// saved output to, and offloads a read of another file as long.
func TestOffloadKeepsReadOfClientSavedFile(t *testing.T) {
	whole := strings.Repeat("the whole output, line after line\n", 1500)
	preview := agentctx.Text("Output too large (51KB). Full output saved to: /home/u/.claude/tool-results/t1.txt\n\nPreview (first 2KB):\nthe whole")
	call := func(id, tool, in string) agentctx.Block { return agentctx.ToolUseBlock(id, tool, json.RawMessage(in)) }
	msgs := []agentctx.Message{
		agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("go")),
		agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(call("t1", "Bash", `{"command":"make"}`))),
		agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock("t1", preview, false))),
		agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(
			call("t2", "Read", `{"file_path":"/home/u/.claude/tool-results/t1.txt"}`),
			call("t3", "Read", `{"file_path":"/home/u/other.txt"}`))),
		agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(
			agentctx.ToolResultBlock("t2", agentctx.Text(whole), false),
			agentctx.ToolResultBlock("t3", agentctx.Text(whole), false))),
	}
	res, err := workspace.New(memstore.New(), workspace.Options{Now: now}).Offload(ctx, msgs)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]workspace.Offloaded{}
	for _, a := range res.Artifacts {
		got[a.ID] = a
	}
	if a := got["tool_result_t2"]; a.Indexed || !a.ReadBack {
		t.Errorf("the read of the client's saved file: indexed %v, read back %v; want kept whole", a.Indexed, a.ReadBack)
	}
	if a := got["tool_result_t3"]; !a.Indexed {
		t.Errorf("a read of another file as long was not offloaded")
	}
}
