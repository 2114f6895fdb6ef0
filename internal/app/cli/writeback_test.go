package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// subagentSession writes a Claude Code subagent file (every record a
// sidechain) of n tool rounds with long results, and a progress record
// between rounds.
func subagentSession(t *testing.T, path string, n int) {
	t.Helper()
	var b strings.Builder
	env := `"isSidechain":true,"userType":"external","cwd":"/home/dev/shop","sessionId":"7c2d9e10-0000-4000-8000-00000000abcd","version":"2.1.39","gitBranch":"main","agentId":"a3f9c2e1"`
	parent := "null"
	rec := func(uuid, typ, msg, extra string) {
		fmt.Fprintf(&b, `{"parentUuid":%s,%s,"type":%q,"message":%s%s,"uuid":%q,"timestamp":"2026-11-20T09:%02d:00.000Z"}`+"\n", parent, env, typ, msg, extra, uuid, len(parent)%60)
		parent = fmt.Sprintf("%q", uuid)
	}
	rec("u0", "user", `{"role":"user","content":"Find every place that sums prices as float64."}`, "")
	for i := range n {
		id := fmt.Sprintf("toolu_%02d", i)
		rec(fmt.Sprintf("a%d", i), "assistant", fmt.Sprintf(`{"id":"msg_%d","type":"message","role":"assistant","content":[{"type":"tool_use","id":%q,"name":"Grep","input":{"pattern":"float64 %d"}}]}`, i, id, i), `,"requestId":"req"`)
		rec(fmt.Sprintf("r%d", i), "user", fmt.Sprintf(`{"role":"user","content":[{"tool_use_id":%q,"type":"tool_result","content":%q}]}`, id, strings.Repeat(fmt.Sprintf("cart.go:%d: total += float64(p)\n", i), 60)), `,"toolUseResult":{"numFiles":1}`)
		fmt.Fprintf(&b, `{"type":"progress","data":{"step":%d},"uuid":"p%d","parentUuid":"r%d",%s}`+"\n", i, i, i, env)
	}
	rec("af", "assistant", `{"id":"msg_f","type":"message","role":"assistant","content":[{"type":"text","text":"cart.go and invoice.go sum prices as float64."}]}`, "")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPrepareOutKeepsClaudeCodeFiles: prepare --out writes a Claude Code
// file back whole: a compacted subagent file reads back as the messages
// prepare reported (it stays all sidechain), the records that are not
// messages are kept, and an unchanged file is written back as it was.
func TestPrepareOutKeepsClaudeCodeFiles(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	in := filepath.Join(dir, "agent-a3f9c2e1.jsonl")
	subagentSession(t, in, 30)

	code, out, errOut := runCLI(t, "", "prepare", "--json", "--out", "out", "--limit", "6000", in)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Report struct {
			MessagesAfter int `json:"messages_after"`
			Steps         []struct {
				Step    string `json:"step"`
				Changed int    `json:"changed"`
			} `json:"steps"`
		} `json:"report"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err, out)
	}
	compacted := false
	for _, s := range rep.Report.Steps {
		compacted = compacted || s.Step == "compact" && s.Changed > 0
	}
	if !compacted {
		t.Fatalf("the session was not compacted: %s", out)
	}
	written := filepath.Join(dir, "out", filepath.Base(in))
	code, out, errOut = runCLI(t, "", "validate", written)
	if code != 0 {
		t.Fatalf("validate the output: exit %d: %s", code, errOut)
	}
	var v struct {
		Messages int `json:"messages"`
		Valid    bool
	}
	json.Unmarshal([]byte(out), &v)
	if v.Messages != rep.Report.MessagesAfter || !v.Valid || strings.Contains(errOut, "sidechain") {
		t.Errorf("the output reads back as %d messages (valid %v; %s), prepare reported %d", v.Messages, v.Valid, strings.TrimSpace(errOut), rep.Report.MessagesAfter)
	}
	data, err := os.ReadFile(written)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(data), `"type":"progress"`); got != 30 {
		t.Errorf("%d progress records written back, want 30", got)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if !strings.Contains(line, `"isSidechain":true`) {
			t.Errorf("a record of the subagent's file is not a sidechain: %.200s", line)
		}
	}

	// Nothing to change: the file is written back as it was.
	small := filepath.Join(dir, "small.jsonl")
	subagentSession(t, small, 2)
	if code, _, errOut := runCLI(t, "", "prepare", "--out", "out2", small); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	before, _ := os.ReadFile(small)
	after, _ := os.ReadFile(filepath.Join(dir, "out2", "small.jsonl"))
	if string(before) != string(after) {
		t.Errorf("an unchanged file was not written back as it was:\n%s\nwant\n%s", after, before)
	}
}

// TestPrepareOutKeepsOpenHandsRecords: an OpenHands output of two
// conversations is written back as two records, a large observation
// replaced by its reference in its own event, the other events as they
// were.
func TestPrepareOutKeepsOpenHandsRecords(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	big := strings.Repeat("test output line\n", 3000) // 51,000 characters
	ev := func(s string) string { return s }
	rec := func(id string, history ...string) string {
		return fmt.Sprintf(`{"instance_id":%q,"history":[%s],"metadata":{"agent":"CodeActAgent"}}`, id, strings.Join(history, ","))
	}
	in := rec("one",
		ev(`{"id":0,"source":"user","action":"message","message":"Run the tests.","args":{"content":"Run the tests."}}`),
		ev(`{"id":1,"source":"agent","action":"run","args":{"command":"pytest"},"tool_call_metadata":{"function_name":"execute_bash","tool_call_id":"call_1","model_response":{"id":"r1","choices":[{"message":{"content":"Running.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"execute_bash","arguments":"{\"command\":\"pytest\"}"}}]}}]}}}`),
		ev(fmt.Sprintf(`{"id":2,"source":"agent","observation":"run","content":%q,"extras":{"metadata":{"exit_code":0,"prefix":"","suffix":"\n[exit 0]"}},"tool_call_metadata":{"function_name":"execute_bash","tool_call_id":"call_1"}}`, big)),
		ev(`{"id":3,"source":"environment","observation":"agent_state_changed","content":"","extras":{"agent_state":"running"}}`),
		ev(`{"id":4,"source":"agent","action":"message","message":"All pass.","args":{"content":"All pass."}}`),
	) + "\n" + rec("two",
		ev(`{"id":0,"source":"user","action":"message","message":"Hi.","args":{"content":"Hi."}}`),
		ev(`{"id":1,"source":"agent","action":"message","message":"Hello.","args":{"content":"Hello."}}`),
	) + "\n"
	if err := os.WriteFile("output.jsonl", []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "", "prepare", "--out", "out", "output.jsonl"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	data, err := os.ReadFile(filepath.Join("out", "output.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d records written, want 2:\n%.500s", len(lines), data)
	}
	if !strings.Contains(lines[0], `"metadata":{"agent":"CodeActAgent"}`) || !strings.Contains(lines[0], `"agent_state_changed"`) {
		t.Errorf("the record lost members or events: %.300s", lines[0])
	}
	if len(lines[0]) > 20_000 || !strings.Contains(lines[0], `<knowledge id=\"tool_result_call_1\"`) {
		t.Errorf("the large observation was not replaced by its reference in its event")
	}
	want := strings.Split(strings.TrimSpace(in), "\n")[1]
	if lines[1] != want {
		t.Errorf("the unchanged record differs:\n%s\nwant\n%s", lines[1], want)
	}
	code, out, errOut := runCLI(t, "", "validate", filepath.Join("out", "output.jsonl"))
	if code != 0 || strings.Count(out, `"valid":true`) != 2 {
		t.Errorf("validate the output: exit %d\n%s%s", code, out, errOut)
	}
}

// TestPrepareOutRoundTripsEveryShape: a file in any input shape that
// prepare has nothing to change in is written back by prepare --out with
// the same JSON, every member and record kept (a Claude Code file byte for
// byte); the OpenHands run cut short only gains the synthetic result of
// its unanswered call.
func TestPrepareOutRoundTripsEveryShape(t *testing.T) {
	testdata, err := filepath.Abs(filepath.Join("..", "..", "..", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	for _, name := range []string{
		"anthropic_request.json", "openai_chat.json", "messages.jsonl", "crlf.jsonl",
		"claude_code.jsonl", "claude_code_compacted.jsonl", "claude_code_subagent.jsonl",
		"mini_swe_agent.traj.json", "swe_traj.json", "swe_agent.traj", "swe_agent_reused_ids.traj",
		"openhands_output.jsonl",
	} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(testdata, name))
			if err != nil {
				t.Fatal(err)
			}
			in := string(data)
			os.WriteFile(name, data, 0o644)
			if code, _, errOut := runCLI(t, "", "prepare", "--keep-metadata", "--workspace", "ws-"+name, "--out", "out-"+name, name); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			out, err := os.ReadFile(filepath.Join("out-"+name, name))
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(name, "claude_code") {
				if string(out) != in {
					t.Errorf("not written back byte for byte:\n%s\nwant\n%s", out, in)
				}
				return
			}
			want, got := jsonValues(t, in), jsonValues(t, string(out))
			if name == "openhands_output.jsonl" {
				got = withoutSyntheticResults(got)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("written back as\n%s\nwant the same JSON as\n%s", out, in)
			}
		})
	}
}

// jsonValues decodes a JSON document, or each line of JSON Lines.
func jsonValues(t *testing.T, s string) []any {
	t.Helper()
	var vals []any
	dec := json.NewDecoder(strings.NewReader(s))
	for dec.More() {
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%v in %.200s", err, s)
		}
		vals = append(vals, v)
	}
	return vals
}

// withoutSyntheticResults removes from OpenHands records the observations
// prepare adds for calls that have no result.
func withoutSyntheticResults(records []any) []any {
	for _, r := range records {
		rec, _ := r.(map[string]any)
		hist, _ := rec["history"].([]any)
		kept := hist[:0]
		for _, ev := range hist {
			if e, _ := ev.(map[string]any); e != nil && strings.HasPrefix(fmt.Sprint(e["content"]), "Error: no result was recorded") {
				continue
			}
			kept = append(kept, ev)
		}
		if rec != nil {
			rec["history"] = kept
		}
	}
	return records
}
