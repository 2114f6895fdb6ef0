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

// The notices clients write when they keep a long output in a file of
// their own name its path (issue 47, item 5).
func TestSavedPaths(t *testing.T) {
	long := strings.Repeat("output line\n", 3000)
	cases := []struct {
		name, text string
		want       []string
	}{
		{"claude code", "<persisted-output>\nOutput too large (58.6KB). Full output saved to: /home/u/.claude/projects/-w/4f/tool-results/toolu_01.txt\n\nPreview (first 2KB):\nabc\n</persisted-output>",
			[]string{"/home/u/.claude/projects/-w/4f/tool-results/toolu_01.txt"}},
		{"opencode", "abc\n...\n\nThe tool call succeeded but the output was truncated. Full output saved to: /home/u/.local/share/opencode/tool-output/tool_9a8b7c\nUse Grep or Read with offset/limit.",
			[]string{"/home/u/.local/share/opencode/tool-output/tool_9a8b7c"}},
		{"qwen code", "Tool output was too large and has been truncated.\nThe full output has been saved to: /home/u/.qwen/tmp/ab12/shell_1.output\nTo read it, use read_file.",
			[]string{"/home/u/.qwen/tmp/ab12/shell_1.output"}},
		{"sentence end and quotes", "Output written to `/tmp/run/out.log`. Stored in the file \"/var/tmp/a/b.txt\".",
			[]string{"/tmp/run/out.log", "/var/tmp/a/b.txt"}},
		{"windows", `Full output saved to: C:\Users\u\AppData\tool-results\t1.txt`, []string{`C:\Users\u\AppData\tool-results\t1.txt`}},
		{"at the end of a long output", long + "Full output saved to: /tmp/x/full.txt", []string{"/tmp/x/full.txt"}},
		{"each once", "saved to /tmp/x/a.txt and saved to /tmp/x/a.txt", []string{"/tmp/x/a.txt"}},
		{"JSON-encoded", jsonOf("Full output saved to: /tmp/x/c.txt\nmore"), []string{"/tmp/x/c.txt"}},

		{"no notice", "a path: /home/u/src/main.go\n" + long, nil},
		{"relative path", "saved to: out/log.txt", nil},
		{"a root or one level", "saved to / and written to /tmp.", nil},
		{"in the middle of a long output", long + "saved to /tmp/x/mid.txt\n" + long, nil},
		{"no verb", "Full output at: /tmp/x/a.txt", nil},
	}
	for _, c := range cases {
		if got := workspace.SavedPaths(agentctx.Text(c.text)); !slices.Equal(got, c.want) {
			t.Errorf("%s: SavedPaths = %q, want %q", c.name, got, c.want)
		}
	}
	blocks := agentctx.BlockList(agentctx.TextBlock("x"), agentctx.TextBlock("Full output saved to: /tmp/x/b.txt"))
	if got := workspace.SavedPaths(blocks); !slices.Equal(got, []string{"/tmp/x/b.txt"}) {
		t.Errorf("text blocks: SavedPaths = %q", got)
	}
}

func jsonOf(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestNamesSavedPath(t *testing.T) {
	paths := []string{"/tmp/x/a.txt", `C:\tool-results\t1.txt`}
	for in, want := range map[string]bool{
		`{"file_path":"/tmp/x/a.txt"}`:             true,
		`{"command":"sed -n 1,200p /tmp/x/a.txt"}`: true,
		`{"path":"C:\\tool-results\\t1.txt"}`:      true,
		`{"file_path":"/tmp/x/b.txt"}`:             false,
		`{"file_path":"/tmp/x/"}`:                  false,
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
