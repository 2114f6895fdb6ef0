package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A request printed by prepare that holds references can be sent as it
// is: --read-back tools (the default) declares the read tools it names,
// --read-back paths points at the content files instead.
func TestPrepareReadBack(t *testing.T) {
	dir := t.TempDir()
	example, err := filepath.Abs("../../../examples/session.json")
	if err != nil {
		t.Fatal(err)
	}
	type tool struct {
		Name     string `json:"name"`
		Function *struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	type body struct {
		Tools    []tool            `json:"tools"`
		Messages []json.RawMessage `json:"messages"`
	}
	decode := func(out string) body {
		var b body
		if err := json.Unmarshal([]byte(out), &b); err != nil {
			t.Fatalf("output: %v", err)
		}
		return b
	}
	names := func(b body) string {
		var ns []string
		for _, t := range b.Tools {
			ns = append(ns, t.Name)
		}
		return strings.Join(ns, ",")
	}
	common := []string{"prepare", "--workspace", filepath.Join(dir, "ws"), "--dir", filepath.Join(dir, "off"), "--limit", "100000", "--summary", "never"}

	code, out, errs := prepRun(t, false, "", append(common, example)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "get_knowledge_by_id(artifact_id=") {
		t.Fatal("the example's prepared request names no read tool: the test needs a reference")
	}
	if got := names(decode(out)); !strings.HasSuffix(got, ",get_knowledge_by_id,get_knowledge_by_lines,grep_knowledge,grep_session_knowledge,query_artifacts,get_tool_result_offload_info") ||
		!strings.HasPrefix(got, "Bash,") {
		t.Fatalf("tools = %s, want the body's tools and the read tools", got)
	}

	code, out, errs = prepRun(t, false, "", append(common, "--read-back", "paths", example)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if got := names(decode(out)); strings.Contains(got, "get_knowledge_by_id") {
		t.Fatalf("--read-back paths declared the read tools: %s", got)
	}
	i := strings.Index(out, "<file>")
	if i < 0 {
		t.Fatal("--read-back paths: no content file path in the references")
	}
	path := out[i+len("<file>"):]
	path = path[:strings.Index(path, "</file>")]
	if _, err := os.Stat(path); err != nil || !filepath.IsAbs(path) {
		t.Fatalf("the path %q is not an absolute file: %v", path, err)
	}

	code, out, _ = prepRun(t, false, "", append(common, "--read-back", "none", example)...)
	if code != 0 || strings.Contains(names(decode(out)), "get_knowledge") || strings.Contains(out, "<file>") {
		t.Fatalf("--read-back none changed the request (exit %d)", code)
	}

	// OpenAI-shaped bodies get OpenAI-shaped definitions.
	openai := `{"model":"m","tools":[{"type":"function","function":{"name":"shell","parameters":{}}}],"messages":[` +
		`{"role":"user","content":"go"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"shell","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":` + jsonString(strings.Repeat("output line\n", 5000)) + `}]}`
	code, out, errs = prepRun(t, false, openai, append(common, "--session", "oa")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b := decode(out)
	if len(b.Tools) != 7 || b.Tools[1].Function == nil || b.Tools[1].Function.Name != "get_knowledge_by_id" {
		t.Fatalf("OpenAI body's tools: %+v", b.Tools)
	}

	if code, _, errs := prepRun(t, false, "", append(common, "--read-back", "bogus", example)...); code != 2 || !strings.Contains(errs, "--read-back") {
		t.Fatalf("--read-back bogus: exit %d, %s", code, errs)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
