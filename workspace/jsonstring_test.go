package workspace_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/memstore"
)

// A result that is a JSON-encoded string of many lines (Cline's results)
// is stored as the text it encodes, so that line ranges page it, and the
// string as sent comes back from OriginalContent (issue 47, item 4: it was
// one 25,150-character line).
func TestJSONStringResultStoredWithItsLines(t *testing.T) {
	var b strings.Builder
	b.WriteString("Command executed.\nOutput:\n")
	for i := 1; i <= 1500; i++ {
		fmt.Fprintf(&b, "line %03d of the \"output\" \\ é\t\n", i)
	}
	text := b.String()
	sent, _ := json.Marshal(text) // Go escapes no character of text that JSON.stringify would not
	for name, store := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ws := workspace.New(store, workspace.Options{Now: now})
			msgs := anthropic(t, "run_commands", `{"commands":["make"]}`, agentctx.Text(string(sent)))
			res, err := ws.Offload(ctx, msgs)
			if err != nil {
				t.Fatal(err)
			}
			off := res.Artifacts[0]
			if want := 1502; off.Lines != want || !off.Indexed {
				t.Errorf("stored %d lines (indexed %v), want %d, a reference", off.Lines, off.Indexed, want)
			}
			page, err := ws.GetKnowledgeByLines(ctx, off.ID, 100, 102)
			if err != nil {
				t.Fatal(err)
			}
			want := "Lines 100-102 of 1502\nline 098 of the \"output\" \\ é\t\nline 099 of the \"output\" \\ é\t\nline 100 of the \"output\" \\ é\t"
			if page != want {
				t.Errorf("lines 100-102:\n%q\nwant\n%q", page, want)
			}
			// grep finds a line of the text, numbered as the lines page.
			hits, err := ws.GrepKnowledge(ctx, off.ID, `^line 777 `, workspace.GrepOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(hits, "779:line 777 of the \"output\" \\ é\t") || strings.Contains(hits, "line 778") {
				t.Errorf("grep for line 777:\n%.300q", hits)
			}
			a, err := ws.Get(ctx, off.ID)
			if err != nil {
				t.Fatal(err)
			}
			if a.Content != text || a.Metadata[workspace.KeyEncoding] != workspace.EncodingJSONString || a.Type != workspace.TypeText {
				t.Errorf("stored type %s, metadata %v, content %.60q...; want the decoded text, encoding json_string", a.Type, a.Metadata, a.Content)
			}
			back, err := workspace.OriginalContent(a)
			if err != nil || back.AsText() != string(sent) {
				t.Errorf("OriginalContent = %.60q..., %v; want the string as sent", back.AsText(), err)
			}
			// The reference previews the text's lines, not one long line.
			if ref := res.Messages[2].Content.Blocks()[0].Content.Text(); !strings.Contains(ref, "\nline 001 of the") {
				t.Errorf("reference does not preview the lines:\n%.300s", ref)
			}
		})
	}
}

// Strings that are not a JSON string of several lines written back byte
// for byte are stored as they were sent.
func TestJSONStringResultStoredAsSent(t *testing.T) {
	long := strings.Repeat("x", 100)
	for _, s := range []string{
		`"` + long + `"`,                   // one line: nothing to page
		`"a\/b\n` + long + `"`,             // \/ is not how JSON.stringify writes "/": not given back byte for byte
		`"a\u00e9\n` + long + `"`,          // idem for é
		` "a\nb"`,                          // white space around
		`"a\nb" and more`,                  // more than one string
		`{"stdout":"a\nb"}`,                // an object
		"\"a\nb\"",                         // a raw newline: not JSON
		`"a\nb`,                            // cut
		`plain text with \n in it`,         // not a string
		`"Exit code 0\nok" "` + long + `"`, // two strings
		`"a\nb"` + "\n",                    // a line ending after the string
		`"a\nb\x` + long + `"`,             // a bad escape
		`"a\nb\"`,                          // the last quote escaped: cut
	} {
		ws := workspace.New(memstore.New(), workspace.Options{Now: now})
		_, off, err := ws.OffloadToolResult(ctx, workspace.ToolCall{ID: "c1", Name: "x"}, agentctx.Text(s))
		if err != nil {
			t.Fatal(err)
		}
		a, err := ws.Get(ctx, off.ID)
		if err != nil {
			t.Fatal(err)
		}
		if a.Content != s || a.Metadata[workspace.KeyEncoding] != "" {
			t.Errorf("%q stored as %q (metadata %v), want as sent", s, a.Content, a.Metadata)
		}
	}
}
