package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// wsHistory is an Anthropic history with a small result, a large one
// (exactly 40,000 characters: indexed) and one of 39,999 (inlined).
func wsHistory(t *testing.T) string {
	t.Helper()
	var big strings.Builder
	for i := 1; big.Len() < 40_000; i++ {
		fmt.Fprintf(&big, "row %05d: value=%d ok\n", i, i*7)
	}
	large := big.String()[:40_000]
	msgs := []any{
		map[string]any{"role": "user", "content": "go"},
		map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "tool_use", "id": "small", "name": "bash", "input": map[string]any{"command": "pwd"}},
			map[string]any{"type": "tool_use", "id": "large", "name": "bash", "input": map[string]any{"command": "cat rows"}},
			map[string]any{"type": "tool_use", "id": "edge", "name": "str_replace_based_edit_tool", "input": map[string]any{"command": "view", "path": "/x"}},
		}},
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": "small", "content": "/src\n"},
			map[string]any{"type": "tool_result", "tool_use_id": "large", "content": large},
			map[string]any{"type": "tool_result", "tool_use_id": "edge", "content": strings.Repeat("é", 39_999)},
		}},
	}
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWSCommands(t *testing.T) {
	for _, backend := range []string{"dir", "ws.db", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			if backend == "postgres" { // --store overrides every --workspace below
				t.Setenv("AGENTCTX_STORE", pgURL(t))
			}
			ws := filepath.Join(t.TempDir(), "work", backend)
			history := wsHistory(t)
			in := filepath.Join(t.TempDir(), "history.json")
			if err := os.WriteFile(in, []byte(history), 0o644); err != nil {
				t.Fatal(err)
			}
			out, errOut, code := run(t, "", "ws", "offload", "--workspace", ws, "--session", "s1", "--task", "t1", "--agent", "a1", in)
			if code != 0 {
				t.Fatalf("offload: exit %d: %s", code, errOut)
			}
			var res struct {
				Messages  []json.RawMessage `json:"messages"`
				Artifacts []struct {
					ID       string            `json:"id"`
					Indexed  bool              `json:"indexed"`
					Chars    int               `json:"chars"`
					Metadata map[string]string `json:"metadata"`
				} `json:"artifacts"`
				Inlined int `json:"inlined"`
				Indexed int `json:"indexed"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("offload output: %v\n%.300s", err, out)
			}
			if res.Inlined != 2 || res.Indexed != 1 || len(res.Artifacts) != 3 || len(res.Messages) != 3 {
				t.Fatalf("offload: inlined %d indexed %d artifacts %d", res.Inlined, res.Indexed, len(res.Artifacts))
			}
			large := res.Artifacts[1]
			if large.ID != "tool_result_large" || !large.Indexed || large.Chars != 40_000 || res.Artifacts[2].Indexed {
				t.Errorf("boundary: %+v / %+v", large, res.Artifacts[2])
			}
			md := large.Metadata
			if md["context_type"] != "tool_result" || md["biz_id"] != "large" || md["session_id"] != "s1" || md["task_id"] != "t1" ||
				md["agent_id"] != "a1" || md["tool_name"] != "bash" || res.Artifacts[2].Metadata["action_name"] != "view" {
				t.Errorf("metadata: %v / %v", md, res.Artifacts[2].Metadata)
			}
			if !strings.Contains(string(res.Messages[2]), `"content":"<knowledge_list>\n<knowledge id=\"tool_result_large\"`) ||
				!strings.Contains(string(res.Messages[2]), `"content":"/src\n"`) {
				t.Errorf("messages: %.400s", res.Messages[2])
			}

			// get of a small artifact is byte-identical to the original.
			out, _, code = run(t, "", "ws", "get", "--workspace", ws, "--session", "s1", "tool_result_small")
			if code != 0 || out != "/src\n" {
				t.Errorf("get small: %d %q", code, out)
			}
			out, _, _ = run(t, "", "ws", "get", "--workspace", ws, "--session", "s1", "tool_result_large")
			if len(out) != 40_000 || !strings.HasPrefix(out, "row 00001: value=7 ok\n") {
				t.Errorf("get large under the default cap: %d bytes", len(out))
			}
			out, _, _ = run(t, "", "ws", "get", "--workspace", ws, "--session", "s1", "--max-chars", "1000", "tool_result_large")
			if len([]rune(out)) > 1000 || !strings.Contains(out, "[Read limit of 1,000 characters reached:") {
				t.Errorf("get with --max-chars 1000:\n%s", out)
			}
			out, _, _ = run(t, "", "ws", "get", "--workspace", ws, "--session", "s1", "--max-chars", "0", "tool_result_edge")
			if out != strings.Repeat("é", 39_999) {
				t.Errorf("get with --max-chars 0 cut the content")
			}

			tests := []struct {
				name string
				args []string
				code int
				out  string
				err  string
			}{
				{"lines", []string{"lines", "tool_result_large", "2", "3"}, 0, "Lines 2-3 of 1600\nrow 00002: value=14 ok\nrow 00003: value=21 ok\n", ""},
				{"lines clamped", []string{"lines", "tool_result_small", "1", "99"}, 0, "Lines 1-1 of 1\n/src\n", ""},
				{"lines beyond", []string{"lines", "tool_result_small", "2", "3"}, 2, "", "start line 2 is beyond the end (1 lines)"},
				{"lines reversed", []string{"lines", "tool_result_large", "3", "2"}, 2, "", "start line 3 is after end line 2"},
				{"lines not numbers", []string{"lines", "tool_result_large", "a", "2"}, 2, "", "START and END must be line numbers"},
				{"lines arg count", []string{"lines", "tool_result_large", "1"}, 2, "", "accepts 3 arg(s), received 2"},
				{"grep", []string{"grep", "tool_result_large", `^row 0000[12]:`}, 0, "1:row 00001: value=7 ok\n2:row 00002: value=14 ok\n", ""},
				{"grep context", []string{"grep", "-C", "1", "tool_result_large", `^row 0000[26]:`}, 0,
					"1-row 00001: value=7 ok\n2:row 00002: value=14 ok\n3-row 00003: value=21 ok\n--\n5-row 00005: value=35 ok\n6:row 00006: value=42 ok\n7-row 00007: value=49 ok\n", ""},
				{"grep adjacent groups merge", []string{"grep", "-C", "1", "tool_result_large", `^row 0000[25]:`}, 0,
					"1-row 00001: value=7 ok\n2:row 00002: value=14 ok\n3-row 00003: value=21 ok\n4-row 00004: value=28 ok\n5:row 00005: value=35 ok\n6-row 00006: value=42 ok\n", ""},
				{"grep ignore case", []string{"grep", "-i", "tool_result_small", "SRC"}, 0, "1:/src\n", ""},
				{"grep max results", []string{"grep", "--max-results", "1", "tool_result_large", "value=7"}, 0,
					"1:row 00001: value=7 ok\n\n[Showing the first 1 of 161 matching lines (max_results=1). Narrow the pattern or raise max_results to see more.]\n", ""},
				{"grep no match", []string{"grep", "tool_result_small", "nothing"}, 0, `No lines of tool_result_small match "nothing" (1 lines searched).` + "\n", ""},
				{"grep session", []string{"grep", "--session", "s1", `^/src$`}, 0, "tool_result_small:1:/src\n", ""},
				{"grep other session", []string{"grep", "--session", "s2", `src`}, 0, `No lines match "src" in 0 offloaded tool results.` + "\n", ""},
				{"grep ID with --task", []string{"grep", "--task", "t1", "tool_result_small", "x"}, 2, "", "--task selects tool results to search when no ID is given"},
				{"get with another session", []string{"get", "--session", "s2", "tool_result_small"}, 0, "/src\n", ""}, // ids are unique in the namespace
				{"get with the session", []string{"get", "--session", "s1", "tool_result_small"}, 0, "/src\n", ""},
				{"grep bad pattern", []string{"grep", "tool_result_small", "("}, 2, "", "invalid pattern"},
				{"grep missing", []string{"grep", "nope", "x"}, 2, "", `workspace: grep "nope" in namespace "default": artifact not found (agentctx ws ls lists the namespace's artifacts)`},
				{"get missing", []string{"get", "nope"}, 2, "", `workspace: get "nope" in namespace "default": artifact not found (agentctx ws ls lists the namespace's artifacts)`},
				{"lines missing", []string{"lines", "--session", "s1", "nope", "1", "2"}, 2, "", `workspace: lines "nope" in namespace "default": artifact not found (agentctx ws ls lists the namespace's artifacts)`},
				{"grep every session", []string{"grep", `^/src$`}, 0, "tool_result_small:1:/src\n", ""},
				{"get other namespace", []string{"get", "--namespace", "other", "tool_result_small"}, 2, "", "artifact not found"},
				{"get bad max-chars", []string{"get", "--max-chars", "-1", "tool_result_small"}, 2, "", "--max-chars must be 0"},
				{"ls empty namespace", []string{"ls", "--namespace", "other"}, 0, "[]\n", ""},
				{"unknown subcommand", []string{"frob"}, 2, "", `unknown command "frob" for "agentctx ws"`},
				{"empty namespace", []string{"ls", "--namespace", ""}, 2, "", "--namespace must not be empty"},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					// The artifacts were offloaded for session s1; reads
					// find them without it.
					args := append([]string{"ws", "--workspace", ws}, tt.args...)
					out, errOut, code := run(t, "", args...)
					if code != tt.code || tt.out != "" && out != tt.out || !strings.Contains(errOut, tt.err) {
						t.Errorf("exit %d, want %d\nstdout %q\nwant   %q\nstderr %q, want %q", code, tt.code, out, tt.out, errOut, tt.err)
					}
					if code == 2 && out != "" {
						t.Errorf("exit 2 wrote to stdout: %q", out)
					}
					if strings.Count(errOut, "\n") > 1 {
						t.Errorf("error is more than one line: %q", errOut)
					}
				})
			}

			for _, c := range []struct {
				args []string
				want []string
			}{
				{nil, []string{"tool_result_small", "tool_result_large", "tool_result_edge"}}, // every session
				{[]string{"--session", "s1"}, []string{"tool_result_small", "tool_result_large", "tool_result_edge"}},
				{[]string{"--context-type", "tool_result", "--session", "s1", "--task", "t1"}, []string{"tool_result_small", "tool_result_large", "tool_result_edge"}},
				{[]string{"--session", "s1", "--biz-id", "large"}, []string{"tool_result_large"}},
				{[]string{"--session", "s1", "--meta", "tool_name=str_replace_based_edit_tool"}, []string{"tool_result_edge"}},
				{[]string{"--session", "s2"}, nil},
				{[]string{"--task", ""}, nil},
				{[]string{"--session", "s1", "--limit", "1"}, []string{"tool_result_small"}},
			} {
				args := append([]string{"ws", "ls", "--workspace", ws}, c.args...)
				out, errOut, code := run(t, "", args...)
				var list []struct {
					ID string `json:"id"`
				}
				if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
					t.Errorf("ls %v: exit %d %s %s", c.args, code, out, errOut)
					continue
				}
				var ids []string
				for _, a := range list {
					ids = append(ids, a.ID)
				}
				if fmt.Sprint(ids) != fmt.Sprint(c.want) {
					t.Errorf("ls %v = %v, want %v", c.args, ids, c.want)
				}
			}

			// Offloading the offloaded history again changes nothing.
			again := filepath.Join(t.TempDir(), "again.json")
			msgs, _ := json.Marshal(res.Messages)
			if err := os.WriteFile(again, msgs, 0o644); err != nil {
				t.Fatal(err)
			}
			out, errOut, code = run(t, "", "ws", "offload", "--workspace", ws, "--session", "s1", "--task", "t1", "--agent", "a1", again)
			var res2 struct {
				Messages  []json.RawMessage `json:"messages"`
				Artifacts []struct {
					Unchanged bool `json:"unchanged"`
				} `json:"artifacts"`
				Inlined, Indexed int
			}
			if code != 0 || json.Unmarshal([]byte(out), &res2) != nil {
				t.Fatalf("offload again: %d %s", code, errOut)
			}
			var m1, m2 any
			json.Unmarshal(res.Messages[2], &m1)
			json.Unmarshal(res2.Messages[2], &m2)
			if len(res2.Artifacts) != 2 || !res2.Artifacts[0].Unchanged || !res2.Artifacts[1].Unchanged || !reflect.DeepEqual(m1, m2) {
				t.Errorf("offload again: %d artifacts (want the 2 inlined ones, unchanged), messages equal %v", len(res2.Artifacts), reflect.DeepEqual(m1, m2))
			}
		})
	}
}

func TestWSOffloadBadInput(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "ws")
	tests := []struct {
		name, stdin string
		err         string
	}{
		{"malformed", `[{"role":`, "unexpected end of JSON input"},
		{"empty", ``, "empty input"},
		{"result without id", `[{"role":"user","content":[{"type":"tool_result","tool_use_id":"","content":"x"}]}]`, "tool result 0 of message 0 has no tool call id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := run(t, tt.stdin, "ws", "offload", "--workspace", ws)
			if code != 2 || out != "" || !strings.Contains(errOut, tt.err) {
				t.Errorf("exit %d stdout %q stderr %q", code, out, errOut)
			}
			if _, err := os.Stat(ws); !os.IsNotExist(err) {
				t.Errorf("bad input created the workspace")
			}
		})
	}
	// Reads of a workspace that does not exist create nothing.
	for _, p := range []string{ws, ws + ".db"} {
		out, _, code := run(t, "", "ws", "ls", "--workspace", p)
		if code != 0 || out != "[]\n" {
			t.Errorf("ls of a missing workspace: %d %q", code, out)
		}
		if _, _, code := run(t, "", "ws", "get", "--workspace", p, "x"); code != 2 {
			t.Errorf("get from a missing workspace: exit %d", code)
		}
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("a read created %s", p)
		}
	}
	// A workspace path that is a file is a bad flag (exit 2), for every
	// command that opens the workspace.
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, []byte("x"), 0o644)
	if _, errOut, code := run(t, `[]`, "ws", "offload", "--workspace", file); code != 2 || !strings.Contains(errOut, "not a directory") {
		t.Errorf("workspace is a file: %d %q", code, errOut)
	}
	for _, args := range [][]string{
		{"prepare", "--workspace", file},
		{"ws", "ls", "--workspace", file},
		{"ws", "get", "--workspace", file, "x"},
	} {
		if _, errOut, code := run(t, `[]`, args...); code != 2 || !strings.Contains(errOut, "not a directory") {
			t.Errorf("%q with a workspace that is a file: exit %d %q, want 2", args, code, errOut)
		}
	}
	// So is a workspace under a file, and a SQLite workspace that is a
	// directory: no command can keep a workspace there.
	dbDir := filepath.Join(t.TempDir(), "ws.db")
	os.Mkdir(dbDir, 0o755)
	for _, tc := range []struct {
		path, want string
	}{
		{filepath.Join(file, "sub"), "not a directory"},
		{filepath.Join(file, "ws.db"), "not a directory"},
		{dbDir, "is a directory"},
	} {
		for _, args := range [][]string{
			{"prepare", "--workspace", tc.path},
			{"ws", "offload", "--workspace", tc.path},
			{"ws", "ls", "--workspace", tc.path},
			{"sessions", "ls", "--workspace", tc.path},
			{"replay", "--workspace", tc.path, "../../../testdata/claude_code.jsonl"},
		} {
			if _, errOut, code := run(t, `[]`, args...); code != 2 || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("%q: exit %d %q, want 2 and %q", args, code, errOut, tc.want)
			}
		}
	}
}

func TestWSTranscripts(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "..", "shared", "transcripts")
	if _, err := os.Stat(dir); err != nil {
		t.Skip("no transcripts folder")
	}
	for _, name := range []string{"spotter__fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl", "mini-swe-agent_pr854__astropy__astropy-12907.traj.json"} {
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); err != nil {
			continue
		}
		t.Run(name, func(t *testing.T) {
			ws := filepath.Join(t.TempDir(), "ws.db")
			out, errOut, code := run(t, "", "ws", "offload", "--workspace", ws, "--session", "s", path)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var res struct {
				Artifacts []struct {
					ID    string `json:"id"`
					Chars int    `json:"chars"`
				} `json:"artifacts"`
				Inlined, Indexed int
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Artifacts) == 0 {
				t.Fatalf("%v: %d artifacts", err, len(res.Artifacts))
			}
			// Every artifact reads back whole with the cap lifted.
			for _, a := range res.Artifacts[:min(len(res.Artifacts), 20)] {
				got, _, code := run(t, "", "ws", "get", "--workspace", ws, "--session", "s", "--max-chars", "0", a.ID)
				if code != 0 || len([]rune(got)) != a.Chars {
					t.Errorf("%s: exit %d, %d characters, want %d", a.ID, code, len([]rune(got)), a.Chars)
				}
			}
		})
	}
}

// TestWSAfterPrepare: prepare stores the results of its session (the
// session "default" when none is named; any session id when one is); ws
// get, lines, grep and ls find them without --session, as the README and
// the help examples run them.
func TestWSAfterPrepare(t *testing.T) {
	session := filepath.Join("..", "..", "..", "examples", "session.json")
	for _, prepSession := range []string{"", "3f2a-unknown-to-the-user"} {
		t.Run("session="+prepSession, func(t *testing.T) {
			dir := t.TempDir()
			ws := filepath.Join(dir, "ws")
			args := []string{"prepare", "--limit", "14000", "--workspace", ws, "--dir", filepath.Join(dir, "offload"), "--summary", "never"}
			if prepSession != "" {
				args = append(args, "--session", prepSession)
			}
			out, errOut, code := run(t, "", append(args, session)...)
			if code != 0 {
				t.Fatalf("prepare: exit %d: %s", code, errOut)
			}
			// The ids the model was given (in placeholders, references and
			// the summary) and the archive of the compaction.
			id := regexp.MustCompile(`tool_result_toolu[A-Za-z0-9_-]+`).FindString(out)
			archive := regexp.MustCompile(`compact_[0-9a-f]{16}`).FindString(out)
			if id == "" || archive == "" {
				t.Fatalf("prepare output names no artifact (%q) or archive (%q)", id, archive)
			}

			out, errOut, code = run(t, "", "ws", "ls", "--workspace", ws)
			var list []struct {
				ID       string            `json:"id"`
				Metadata map[string]string `json:"metadata"`
			}
			if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) < 46 {
				t.Fatalf("ws ls: exit %d, %d artifacts, %s", code, len(list), errOut)
			}
			var tool string
			for _, a := range list {
				if a.ID == id {
					tool = a.Metadata["tool_name"]
				}
			}
			if tool == "" {
				t.Fatalf("ws ls does not list %s", id)
			}
			for _, c := range []struct {
				args []string
				want string
			}{
				{[]string{"get", id}, ""},
				{[]string{"get", archive}, `"role"`},
				{[]string{"lines", id, "1", "3"}, "Lines 1-3 of "},
				{[]string{"grep", "-i", id, "."}, "1:"},
				{[]string{"grep", "--max-results", "1", "."}, ":1:"},
				{[]string{"ls", "--meta", "tool_name=" + tool, "--limit", "10"}, `"id":"tool_result_`},
			} {
				out, errOut, code := run(t, "", append([]string{"ws", "--workspace", ws}, c.args...)...)
				if code != 0 || out == "" || !strings.Contains(out, c.want) {
					t.Errorf("ws %v: exit %d, stdout %.200q, stderr %q", c.args, code, out, errOut)
				}
			}
			if prepSession != "" {
				out, _, code := run(t, "", "ws", "ls", "--workspace", ws, "--session", "another")
				if code != 0 || out != "[]\n" {
					t.Errorf("ws ls --session another: %d %.200s", code, out)
				}
			}
		})
	}
}
