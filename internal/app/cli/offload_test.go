package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const offloadHistory = `[
{"role":"assistant","content":[{"type":"tool_use","id":"toolu_01abc","name":"bash","input":{"cmd":"cat big.txt"}},{"type":"tool_use","id":"toolu_02def","name":"bash","input":{"cmd":"echo hi"}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01abc","content":"` + "%BIG%" + `"},{"type":"tool_result","tool_use_id":"toolu_02def","content":"hi <&>"}],"timestamp":1700000000000},
{"role":"assistant","content":[],"tool_calls":[{"id":"call_9","type":"function","function":{"name":"ls","arguments":"{}"}}]},
{"role":"tool","tool_call_id":"call_9","content":[{"type":"text","text":"` + "%BIG%" + `"}]}
]`

func offloadInput() string {
	return strings.ReplaceAll(offloadHistory, "%BIG%", strings.Repeat("0123456789", 15))
}

func TestOffloadCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "out")
	in := filepath.Join(t.TempDir(), "history.json")
	if err := os.WriteFile(in, []byte(offloadInput()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		stdin string
		args  []string
	}{
		{"file argument", "", []string{"offload", "--dir", dir, in}},
		{"stdin", offloadInput(), []string{"offload", "--dir", dir}},
		{"stdin dash", offloadInput(), []string{"offload", "--dir", dir, "--min-chars", "100", "-"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.stdin, tt.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if strings.Count(stdout, "\n") != 1 || !strings.Contains(stdout, `"hi <&>"`) {
				t.Errorf("stdout is not one line of unescaped JSON: %s", stdout)
			}
			m := jsonKeys(t, stdout, "messages", "offloaded_count", "freed_chars", "files")
			var count, freed int
			var files []string
			json.Unmarshal(m["offloaded_count"], &count)
			json.Unmarshal(m["freed_chars"], &freed)
			json.Unmarshal(m["files"], &files)
			// 150 characters of string + 177 of block-array JSON ([{"type":"text","text":"…"}] is 27 + 150).
			if count != 2 || freed != 150+177 {
				t.Errorf("offloaded_count = %d, freed_chars = %d; want 2, 327", count, freed)
			}
			want := []string{filepath.Join(dir, "tool-result-toolu_01abc.md"), filepath.Join(dir, "tool-result-call_9.md")}
			if !slices.Equal(files, want) {
				t.Errorf("files = %q, want %q", files, want)
			}
			if got, _ := os.ReadFile(want[1]); !strings.HasPrefix(string(got), `[{"type":"text","text":"0123`) {
				t.Errorf("block array file holds %.40q", got)
			}
			var msgs []map[string]any
			json.Unmarshal(m["messages"], &msgs)
			if len(msgs) != 4 {
				t.Fatalf("%d messages, want 4", len(msgs))
			}
			blocks := msgs[1]["content"].([]any)
			if c := blocks[0].(map[string]any)["content"]; c != "[Content offloaded to: ./tool-result-toolu_01abc.md]" {
				t.Errorf("reference = %v", c)
			}
			if msgs[3]["content"] != "[Content offloaded to: ./tool-result-call_9.md]" || msgs[3]["tool_call_id"] != "call_9" {
				t.Errorf("tool message = %v", msgs[3])
			}
			if msgs[1]["timestamp"] != float64(1700000000000) {
				t.Errorf("timestamp lost: %v", msgs[1])
			}
		})
	}
}

func TestOffloadCommandDefaults(t *testing.T) {
	t.Chdir(t.TempDir())
	wd, _ := os.Getwd()
	code, stdout, stderr := runCLI(t, `[{"role":"tool","tool_call_id":"a","content":"`+strings.Repeat("x", 99)+`"},{"role":"tool","tool_call_id":"b","content":"`+strings.Repeat("x", 100)+`"}]`, "offload")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	m := jsonKeys(t, stdout, "messages", "offloaded_count", "freed_chars", "files")
	if string(m["files"]) != `["`+filepath.Join(wd, ".offload", "tool-result-b.md")+`"]` || string(m["freed_chars"]) != "100" {
		t.Errorf("files = %s, freed_chars = %s", m["files"], m["freed_chars"])
	}
}

func TestOffloadCommandEmpty(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := runCLI(t, `[]`, "offload", "--dir", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if want := `{"messages":[],"offloaded_count":0,"freed_chars":0,"files":[]}` + "\n"; stdout != want {
		t.Errorf("stdout = %s, want %s", stdout, want)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("dir created for an empty history")
	}
}

func TestOffloadCommandErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "regular")
	os.WriteFile(file, []byte("x"), 0o644)
	big := strings.Repeat("x", 200)
	tests := []struct {
		name     string
		stdin    string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"malformed JSON", `[{"role":"tool",`, []string{"offload"}, 2, "agentctx:"},
		{"not messages", `{"foo":1}`, []string{"offload"}, 2, "agentctx:"},
		{"empty id on a large result", `[{"role":"tool","tool_call_id":"","content":"` + big + `"}]`, []string{"offload"}, 2, "empty tool result id"},
		{"min-chars zero", `[]`, []string{"offload", "--min-chars", "0"}, 2, "--min-chars"},
		{"min-chars negative", `[]`, []string{"offload", "--min-chars", "-5"}, 2, "--min-chars"},
		{"min-chars not a number", `[]`, []string{"offload", "--min-chars", "many"}, 2, "min-chars"},
		{"two files", `[]`, []string{"offload", "a", "b"}, 2, "accepts at most 1 arg"},
		{"missing file", ``, []string{"offload", "/does/not/exist.json"}, 2, "no such file"},
		{"write failure", `[{"role":"tool","tool_call_id":"a","content":"` + big + `"}]`, []string{"offload", "--dir", file}, 1, "not a directory"},
		{"one: no session", `{"role":"tool","tool_call_id":"a","content":"x"}`, []string{"offload-one"}, 2, "--session is required"},
		{"one: malformed JSON", `{"role":`, []string{"offload-one", "--session", "s"}, 2, "agentctx:"},
		{"one: two messages", `[{"role":"tool","tool_call_id":"a","content":"x"},{"role":"tool","tool_call_id":"b","content":"y"}]`, []string{"offload-one", "--session", "s"}, 2, "holds 2"},
		{"one: no message", `[]`, []string{"offload-one", "--session", "s"}, 2, "holds 0"},
		{"one: no tool result", `{"role":"user","content":"hello"}`, []string{"offload-one", "--session", "s"}, 2, "no tool result"},
		{"one: empty id", `{"role":"tool","tool_call_id":"","content":"x"}`, []string{"offload-one", "--session", "s"}, 2, "empty tool result id"},
		{"one: write failure", `{"role":"tool","tool_call_id":"a","content":"x"}`, []string{"offload-one", "--session", "s", "--dir", file}, 1, "not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			t.Chdir(root) // the default --dir would land here
			code, stdout, stderr := runCLI(t, tt.stdin, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.wantCode, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
			if !strings.Contains(stderr, tt.wantErr) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr = %q, want one line containing %q", stderr, tt.wantErr)
			}
			if ents, _ := os.ReadDir(root); len(ents) != 0 {
				t.Errorf("something was written: %v", ents)
			}
		})
	}
}

func TestOffloadOneCommand(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("é", 1000)
	tests := []struct {
		name      string
		stdin     string
		wantFiles []string
		wantData  []string
	}{
		{
			name:      "role tool message",
			stdin:     `{"role":"tool","tool_call_id":"toolu_xyz","content":"` + big + `","timestamp":1}`,
			wantFiles: []string{"toolu_xyz.md"},
			wantData:  []string{big},
		},
		{
			name:      "array holding one message with two results",
			stdin:     `[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"<x>"}]},{"type":"tool_result","tool_use_id":"b","content":"` + big + `"}]}]`,
			wantFiles: []string{"a.md", "b.md"},
			wantData:  []string{`[{"type":"text","text":"<x>"}]`, big},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.stdin, "offload-one", "--session", "session-abc123", "--dir", dir)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			m := jsonKeys(t, stdout, "message", "freed_chars", "file", "files")
			var file string
			var files []string
			var freed int
			json.Unmarshal(m["file"], &file)
			json.Unmarshal(m["files"], &files)
			json.Unmarshal(m["freed_chars"], &freed)
			var want []string
			wantFreed := 0
			for i, n := range tt.wantFiles {
				p := filepath.Join(dir, "session-abc123", n)
				want = append(want, p)
				if got, _ := os.ReadFile(p); string(got) != tt.wantData[i] {
					t.Errorf("%s holds %.40q", p, got)
				}
				ref := "[Tool result offloaded to file: " + p + "]"
				if !strings.Contains(string(m["message"]), `"`+ref+`"`) {
					t.Errorf("message lacks %q: %s", ref, m["message"])
				}
				wantFreed += len([]rune(tt.wantData[i])) - len([]rune(ref))
			}
			if file != want[0] || !slices.Equal(files, want) {
				t.Errorf("file = %q, files = %q; want %q", file, files, want)
			}
			if freed != wantFreed {
				t.Errorf("freed_chars = %d, want %d", freed, wantFreed)
			}
		})
	}
}
