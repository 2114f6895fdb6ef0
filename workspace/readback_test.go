package workspace_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/dirstore"
	"github.com/agentctx/agentctx/workspace/memstore"
)

// A page returned in text blocks (as SDKs return tool results) is measured
// on its text, not on the JSON that carries it: its newlines are one
// character each, not the two of "\n".
func TestInlineLimitMeasuresTheTextTheModelReads(t *testing.T) {
	page := lines(500, 79) // 500 lines, 39,500 characters (40,027 as the JSON of a text block)
	if n := len([]rune(page)); n >= workspace.DefaultInlineLimit {
		t.Fatalf("test page has %d characters, want fewer than the limit", n)
	}
	cases := map[string]agentctx.Content{
		"string":       agentctx.Text(page),
		"one block":    agentctx.BlockList(agentctx.TextBlock(page)),
		"three blocks": agentctx.BlockList(agentctx.TextBlock(page[:1000]), agentctx.TextBlock(page[1001:20000]), agentctx.TextBlock(page[20001:])),
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := workspace.InlineChars(c); got >= workspace.DefaultInlineLimit {
				t.Fatalf("InlineChars = %d, want < %d", got, workspace.DefaultInlineLimit)
			}
			ws := workspace.New(memstore.New(), workspace.Options{Now: now})
			res, err := ws.Offload(ctx, anthropic(t, "fetch_page", `{}`, c))
			if err != nil {
				t.Fatal(err)
			}
			if res.Indexed != 0 || !resultContent(res.Messages)[0].Equal(c) {
				t.Fatalf("a %d-character page was replaced by a reference: %.200s", len([]rune(page)), resultContent(res.Messages)[0].AsText())
			}
		})
	}
	// Other blocks count as their JSON: an image of the same size is data.
	img := mustContent(t, fmt.Sprintf(`[{"type":"image","source":{"type":"base64","media_type":"image/png","data":%q}}]`, strings.Repeat("A", workspace.DefaultInlineLimit)))
	if got := workspace.InlineChars(img); got < workspace.DefaultInlineLimit {
		t.Fatalf("InlineChars(image) = %d, want its JSON size", got)
	}
	if got, want := workspace.InlineChars(agentctx.Content{}), 0; got != want {
		t.Fatalf("InlineChars(absent) = %d", got)
	}
}

// A read of stored content back (the read tools, under any MCP prefix, or
// the agent's file tool on an artifact's content file) is stored but never
// replaced by a new reference: that was a loop the agent could not leave.
func TestReadBackIsNeverReplaced(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	store, err := dirstore.Open(dir, dirstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ws := workspace.New(store, workspace.Options{SessionID: "s1", Now: now})
	big := lines(800, 75) // 60,000 characters
	first, err := ws.Offload(ctx, anthropic(t, "Bash", `{"command":"cat big.log"}`, agentctx.Text(big)))
	if err != nil {
		t.Fatal(err)
	}
	if first.Indexed != 1 {
		t.Fatalf("the large result was not replaced by a reference")
	}
	path, err := store.(workspace.Pather).Path(ws.Namespace(), first.Artifacts[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(path)
	escaped := `{"file_path":"` + strings.ReplaceAll(abs, "/", `\/`) + `"}` // as some encoders write it
	reads := []struct {
		name, tool, input string
		want              bool
	}{
		{"Read of the content file", "Read", `{"file_path":"` + abs + `"}`, true},
		{"shell cat of the content file", "exec_command", `{"cmd":["bash","-lc","cat ` + abs + `"]}`, true},
		{"escaped path", "Read", escaped, true},
		{"read tool", "get_knowledge_by_id", `{"artifact_id":"tool_result_toolu_01"}`, true},
		{"MCP read tool", "mcp__agentctx__get_knowledge_by_lines", `{"artifact_id":"x","start_line":1,"end_line":900}`, true},
		{"another file", "Read", `{"file_path":"/tmp/elsewhere.log"}`, false},
		{"a tool named like a read tool's suffix", "my_get_knowledge_by_id", `{}`, false},
	}
	for _, r := range reads {
		t.Run(r.name, func(t *testing.T) {
			msgs := anthropic(t, r.tool, r.input, agentctx.Text(big+"\nread "+r.name))
			// A fresh tool call id per case.
			id := "toolu_read_" + strings.ReplaceAll(r.name, " ", "_")
			msgs = renameCall(msgs, id)
			res, err := ws.Offload(ctx, msgs)
			if err != nil {
				t.Fatal(err)
			}
			kept := res.Indexed == 0
			if kept != r.want {
				t.Fatalf("kept whole = %v, want %v (%s %s)", kept, r.want, r.tool, r.input)
			}
			if len(res.Artifacts) != 1 || res.Artifacts[0].ReadBack != r.want {
				t.Fatalf("artifacts = %+v, want one with ReadBack %v", res.Artifacts, r.want)
			}
			if r.want && resultContent(res.Messages)[0].AsText() != big+"\nread "+r.name {
				t.Fatalf("the read-back was changed")
			}
		})
	}
	// A store without files has no paths to read: only the read tools count.
	mem := workspace.New(memstore.New(), workspace.Options{})
	if mem.ReadsBack(workspace.ToolCall{ID: "a", Name: "Read", Input: json.RawMessage(`{"file_path":"/"}`)}) {
		t.Fatal("a memory store's workspace took a file read for a read-back")
	}
}

// renameCall gives the only tool call of an anthropic() history the id id.
func renameCall(msgs []agentctx.Message, id string) []agentctx.Message {
	var out []agentctx.Message
	for _, m := range msgs {
		if m.Content.Kind() != agentctx.ContentBlocks {
			out = append(out, m)
			continue
		}
		var bs []agentctx.Block
		for _, b := range m.Content.Blocks() {
			switch b.Type {
			case agentctx.BlockToolUse:
				b = agentctx.ToolUseBlock(id, b.Name, b.Input)
			case agentctx.BlockToolResult:
				b = agentctx.ToolResultBlock(id, b.Content, false)
			}
			bs = append(bs, b)
		}
		m.Content = agentctx.BlockList(bs...)
		out = append(out, m)
	}
	return out
}
