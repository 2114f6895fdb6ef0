package pipeline_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/workspace"
)

// An agent that reads an offloaded result back, with a read tool or with
// its own file tool on the artifact's content file, gets it whole: the
// read is stored, never replaced by a new reference (issue 21: Claude
// Code's Read of a 60,127-character content file came back as a
// 1,352-character reference, four times in a row).
func TestReadingBackIsNotOffloadedAgain(t *testing.T) {
	o := options(t)
	p := newPipeline(t, o)
	big := strings.Repeat("row of a large log\n", 2000) + "TOKEN=tk-7f3a\n" + strings.Repeat("more output\n", 2000)
	at := now.Add(-time.Minute)
	hist := history(user("find the token", at), exchange("toolu_big", "Bash", "cat big.log", big, false, at))
	res, err := prepare(t, p, hist)
	if err != nil {
		t.Fatal(err)
	}
	ref := resultText(res.Messages, "toolu_big")
	if !strings.HasPrefix(ref, "<knowledge_list>") {
		t.Fatalf("the large result was not replaced: %.100s", ref)
	}
	root, _ := filepath.Abs(o.WorkspaceDir)
	path := filepath.Join(root, "default", "tool_result_toolu_big.txt")
	if got, err := p.Workspace().Store().(workspace.Pather).Path(p.Workspace().Namespace(), "tool_result_toolu_big"); err == nil {
		path, _ = filepath.Abs(got)
	}
	reads := []struct{ id, tool, input string }{
		{"toolu_read", "Read", `{"file_path":"` + path + `"}`},
		{"toolu_mcp", "mcp__agentctx__get_knowledge_by_id", `{"artifact_id":"tool_result_toolu_big"}`},
	}
	for _, r := range reads {
		hist = append(hist,
			agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.ToolUseBlock(r.id, r.tool, json.RawMessage(r.input)))),
			agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock(r.id, agentctx.Text(big), false))))
		res, err = prepare(t, p, hist)
		if err != nil {
			t.Fatal(err)
		}
		if got := resultText(res.Messages, r.id); got != big {
			t.Fatalf("%s: the read-back reached the model as %d characters: %.120s", r.tool, len(got), got)
		}
	}
}

// WithPaths adds the absolute path of an offloaded result's content file
// after its reference, only when the file exists, and names it again on
// later requests from memory: the bytes of a request do not depend on the
// file system's state after the path was first found (a file removed by
// retention keeps its path), and a file not found yet is looked for again.
func TestWithPaths(t *testing.T) {
	o := options(t)
	p := newPipeline(t, o)
	big := strings.Repeat("row of a large log\n", 2000) + "TOKEN=tk-7f3a\n" + strings.Repeat("more output\n", 2000)
	at := now.Add(-time.Minute)
	hist := history(user("look", at), exchange("toolu_big", "Bash", "cat big.log", big, false, at))
	res, err := prepare(t, p, hist)
	if err != nil {
		t.Fatal(err)
	}
	path, err := p.Workspace().Store().(workspace.Pather).Path(p.Workspace().Namespace(), "tool_result_toolu_big")
	if err != nil {
		t.Fatal(err)
	}
	path, _ = filepath.Abs(path)
	want := "\n<file>" + path + "</file>"
	if got := resultText(p.WithPaths(res.Messages), "toolu_big"); !strings.Contains(got, want) {
		t.Fatalf("the reference does not name its file %s: %.300s", path, got)
	}
	if err := os.Rename(path, path+".moved"); err != nil {
		t.Fatal(err)
	}
	if got := resultText(p.WithPaths(res.Messages), "toolu_big"); !strings.Contains(got, want) {
		t.Errorf("a path found once was dropped when its file went away: %.300s", got)
	}

	// A reference whose file does not exist gets no path, until it does.
	other := newPipeline(t, options(t))
	ref := resultText(res.Messages, "toolu_big")
	moved := history(user("look", at), exchange("toolu_big", "Bash", "cat big.log", ref, false, at))
	if got := resultText(other.WithPaths(moved), "toolu_big"); strings.Contains(got, "<file>") {
		t.Fatalf("a reference to an artifact without a file got a path: %.300s", got)
	}
	if err := os.Rename(path+".moved", path); err != nil {
		t.Fatal(err)
	}
	if got := resultText(p.WithPaths(moved), "toolu_big"); !strings.Contains(got, want) {
		t.Errorf("the path of a file that exists again is missing: %.300s", got)
	}
}

// AddPaths says what it changed: a message it added a path to has Source
// -1 and the Facts of its new encoding (so that a caller does not encode
// it again), and the next call, given the same message, gives the very
// same bytes; the messages it left alone keep their Sources and Facts.
func TestAddPathsGivesFacts(t *testing.T) {
	p := newPipeline(t, options(t))
	big := strings.Repeat("row of a large log\n", 2000) + "TOKEN=tk-7f3a\n" + strings.Repeat("more output\n", 2000)
	at := now.Add(-time.Minute)
	hist := history(user("look", at), exchange("toolu_big", "Bash", "cat big.log", big, false, at))
	var first []byte
	for call := range 2 {
		res, err := prepare(t, p, hist)
		if err != nil {
			t.Fatal(err)
		}
		q := p.AddPaths(res)
		changed := 0
		for i, m := range q.Messages {
			enc, err := m.AppendJSON(nil)
			if err != nil {
				t.Fatal(err)
			}
			if q.Sources[i] >= 0 {
				if !reflect.DeepEqual(q.Facts[i], res.Facts[i]) {
					t.Fatalf("call %d: message %d kept, its Facts changed", call, i)
				}
				continue
			}
			changed++
			f := q.Facts[i]
			if !bytes.Equal(f.Encoding, enc) || f.Hash != agentctx.HashEncoding(enc) {
				t.Fatalf("call %d: message %d has a path, its Facts are not its encoding's: %+v", call, i, f.Hash)
			}
			if !strings.Contains(string(enc), "<file>") {
				t.Fatalf("call %d: message %d changed without a path", call, i)
			}
			if call == 0 {
				first = enc
			} else if !bytes.Equal(enc, first) {
				t.Fatalf("the second call's message differs:\n%s\n%s", enc, first)
			}
		}
		if changed != 1 {
			t.Fatalf("call %d: %d messages changed, want the reference's", call, changed)
		}
	}
}

// AddPaths looks again for the file of a reference it found none for
// (AddPaths keeps what it did to a message, but not that).
func TestAddPathsLooksAgain(t *testing.T) {
	p := newPipeline(t, options(t))
	big := strings.Repeat("row of a large log\n", 2000) + "TOKEN=tk-7f3a\n" + strings.Repeat("more output\n", 2000)
	at := now.Add(-time.Minute)
	res, err := prepare(t, p, history(user("look", at), exchange("toolu_big", "Bash", "cat big.log", big, false, at)))
	if err != nil {
		t.Fatal(err)
	}
	path, err := p.Workspace().Store().(workspace.Pather).Path(p.Workspace().Namespace(), "tool_result_toolu_big")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path, path+".away"); err != nil {
		t.Fatal(err)
	}
	if got := resultText(p.AddPaths(res).Messages, "toolu_big"); strings.Contains(got, "<file>") {
		t.Fatalf("a path to a file that is not there: %.300s", got)
	}
	if err := os.Rename(path+".away", path); err != nil {
		t.Fatal(err)
	}
	if got := resultText(p.AddPaths(res).Messages, "toolu_big"); !strings.Contains(got, "<file>") {
		t.Fatalf("no path once the file is there: %.300s", got)
	}
}

// TestAddPathsRemembersResultsOnly holds AddPaths' memo to the messages
// that hold a tool result, the only ones it changes: it remembered every
// message (a request of 100,000 small messages: 3.4 MB of hashes, half of
// them of calls; issue 24, item 7). The messages are the same either way.
func TestAddPathsRemembersResultsOnly(t *testing.T) {
	p := newPipeline(t, options(t))
	at := now.Add(-time.Minute)
	var hist []agentctx.Message
	hist = append(hist, user("look", at))
	for i := range 20 {
		hist = append(hist, exchange(fmt.Sprint("toolu_", i), "Bash", "ls", "ok", false, at)...)
	}
	big := strings.Repeat("row of a large log\n", 3000)
	hist = append(hist, exchange("toolu_big", "Bash", "cat big.log", big, false, at)...)
	res, err := prepare(t, p, hist)
	if err != nil {
		t.Fatal(err)
	}
	results := 0
	for range agentctx.ToolResults(res.Messages) {
		results++
	}
	q := p.AddPaths(res)
	same, changed := p.PathedMemoLen()
	if same+changed != results {
		t.Errorf("the memo holds %d messages, want the %d that hold a result (of %d)", same+changed, results, len(res.Messages))
	}
	if changed != 1 || !strings.Contains(resultText(q.Messages, "toolu_big"), "<file>") {
		t.Errorf("the reference did not get its path: %d changed", changed)
	}
	// Again: the same messages, from the memo.
	again := p.AddPaths(res)
	for i := range q.Messages {
		a, _ := q.Messages[i].AppendJSON(nil)
		b, _ := again.Messages[i].AppendJSON(nil)
		if !bytes.Equal(a, b) {
			t.Fatalf("message %d differs the second time", i)
		}
	}
}
