package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Two sessions whose agents number their calls alike (call_0) store
// tool_result_call_0 and tool_result_call_0-2: ws get, lines and grep with
// --session read that session's own result by the plain id; without it the
// plain id is one line listing both, exit 2 (issue 48.5), on every backend.
func TestWSSessionScopesReadByID(t *testing.T) {
	history := func(out string) string {
		return `[{"role":"assistant","content":[{"type":"tool_use","id":"call_0","name":"bash","input":{"command":"ls"}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_0","content":"` + out + `\n"}]}]`
	}
	for _, backend := range []string{"dir", "ws.db", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			loc := []string{"--workspace", filepath.Join(t.TempDir(), backend)}
			if backend == "postgres" {
				loc = []string{"--store", pgURL(t)}
			}
			for _, s := range []string{"s1", "s2"} {
				in := filepath.Join(t.TempDir(), s+".json")
				if err := os.WriteFile(in, []byte(history(s+" secret output")), 0o644); err != nil {
					t.Fatal(err)
				}
				if _, errOut, code := run(t, "", append(append([]string{"ws", "offload", "--session", s}, loc...), in)...); code != 0 {
					t.Fatalf("offload %s: exit %d: %s", s, code, errOut)
				}
			}
			for _, c := range []struct {
				args []string
				want string
				code int
			}{
				{[]string{"get", "--session", "s2", "tool_result_call_0"}, "s2 secret output\n", 0},
				{[]string{"get", "--session", "s1", "tool_result_call_0"}, "s1 secret output\n", 0},
				{[]string{"lines", "--session", "s2", "tool_result_call_0", "1", "1"}, "Lines 1-1 of 1\ns2 secret output\n", 0},
				{[]string{"grep", "--session", "s2", "tool_result_call_0", "secret"}, "1:s2 secret output\n", 0},
				{[]string{"get", "tool_result_call_0-2"}, "s2 secret output\n", 0},
				{[]string{"get", "tool_result_call_0"}, `agentctx: workspace: "tool_result_call_0" names the results of 2 sessions in namespace "default": "tool_result_call_0" (session "s1"), "tool_result_call_0-2" (session "s2"); give --session or one of these ids` + "\n", 2},
				{[]string{"lines", "tool_result_call_0", "1", "1"}, "names the results of 2 sessions", 2},
				{[]string{"grep", "tool_result_call_0", "secret"}, "names the results of 2 sessions", 2},
			} {
				out, errOut, code := run(t, "", append(append([]string{"ws"}, c.args[:1]...), append(loc, c.args[1:]...)...)...)
				got := out
				if c.code != 0 {
					got = errOut
				}
				if code != c.code || (c.code == 0 && got != c.want) || !strings.Contains(got, c.want) || strings.Count(errOut, "\n") > 1 {
					t.Errorf("ws %s: exit %d, stdout %q, stderr %q; want exit %d and %q", strings.Join(c.args, " "), code, out, errOut, c.code, c.want)
				}
			}
		})
	}
}
