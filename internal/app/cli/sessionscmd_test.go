package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/pipeline"
)

// runEnv runs one command line with an environment.
func runEnv(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(t.Context(), args, Streams{In: strings.NewReader(""), Out: &out, Err: &errb,
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	return out.String(), errb.String(), code
}

// TestSessionsEndToEnd drives sessions ls, show, rm and prune through the
// CLI on sessions that prepare stored, in each backend.
func TestSessionsEndToEnd(t *testing.T) {
	example, _ := filepath.Abs("../../../examples/session.json")
	small, _ := filepath.Abs("../../../testdata/messages.jsonl")
	backends := map[string]func(t *testing.T) []string{
		"dir":    func(t *testing.T) []string { return []string{"--workspace", filepath.Join(t.TempDir(), "ws")} },
		"sqlite": func(t *testing.T) []string { return []string{"--workspace", filepath.Join(t.TempDir(), "ws.db")} },
		"postgres": func(t *testing.T) []string {
			if testing.Short() {
				t.Skip("-short: PostgreSQL")
			}
			return []string{"--store", pgURL(t)}
		},
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			loc := open(t)
			tmp := t.TempDir()
			cmd := func(args ...string) (string, string, int) {
				t.Helper()
				return run(t, "", append(args, loc...)...)
			}
			must := func(args ...string) string {
				t.Helper()
				out, errOut, code := cmd(args...)
				if code != 0 {
					t.Fatalf("%v: exit %d: %s", args, code, errOut)
				}
				return out
			}
			ls := func() []pipeline.SessionInfo {
				t.Helper()
				var list []pipeline.SessionInfo
				if err := json.Unmarshal([]byte(must("sessions", "ls")), &list); err != nil {
					t.Fatal(err)
				}
				return list
			}
			prune := func(args ...string) pipeline.PruneReport {
				t.Helper()
				var rep pipeline.PruneReport
				if err := json.Unmarshal([]byte(must(append([]string{"sessions"}, args...)...)), &rep); err != nil {
					t.Fatal(err)
				}
				return rep
			}
			if l := ls(); len(l) != 0 {
				t.Fatalf("ls of an empty store: %+v", l)
			}
			must("prepare", "--limit", "14000", "--session", "s1", "--dir", tmp, example)
			must("prepare", "--session", "s2", "--dir", tmp, small)
			list := ls()
			if len(list) != 2 || list[0].ID != "s1" || list[1].ID != "s2" {
				t.Fatalf("ls = %+v, want s1 and s2", list)
			}
			s1 := list[0]
			if s1.Requests != 1 || s1.Compactions != 1 || s1.Archives != 1 || s1.Artifacts < 2 || s1.Tokens == 0 ||
				s1.Size != s1.StateBytes+s1.ArtifactBytes || s1.LastActivity.IsZero() {
				t.Fatalf("s1 = %+v: want 1 request, 1 compaction with its archive, artifacts, size = state + artifacts", s1)
			}
			var d pipeline.SessionDetail
			if err := json.Unmarshal([]byte(must("sessions", "show", "s1")), &d); err != nil {
				t.Fatal(err)
			}
			if d.Summary == "" || len(d.ArtifactList) != s1.Artifacts {
				t.Fatalf("show s1: summary %q, %d artifacts listed, want %d", d.Summary, len(d.ArtifactList), s1.Artifacts)
			}
			if out, errOut, code := cmd("sessions", "show", "nope"); code != 2 || out != "" || !strings.Contains(errOut, "session not found") {
				t.Fatalf("show nope: exit %d, %q %q", code, out, errOut)
			}
			if _, _, code := cmd("sessions", "rm"); code != 2 {
				t.Fatalf("rm without ids or --older-than: exit %d", code)
			}
			if _, _, code := cmd("sessions", "prune"); code != 2 {
				t.Fatalf("prune without a retention: exit %d", code)
			}

			// Everything is fresh: age and size (with the live protection)
			// delete nothing.
			for _, args := range [][]string{{"prune", "--retain-age", "1h"}, {"prune", "--retain-size", "1"}, {"rm", "--older-than", "1d"}} {
				if rep := prune(args...); len(rep.Sessions) != 0 || rep.Artifacts != 0 {
					t.Fatalf("%v deleted %+v", args, rep)
				}
			}
			// Without it, a dry run names both and deletes nothing.
			rep := prune("prune", "--retain-size", "1", "--retain-live", "0", "--dry-run")
			if len(rep.Sessions) != 2 || !rep.DryRun || rep.Remaining != 0 {
				t.Fatalf("dry run = %+v, want both sessions", rep)
			}
			if l := ls(); len(l) != 2 {
				t.Fatalf("a dry run deleted: %+v", l)
			}
			// A size both fit in deletes nothing; one that only s1 fits in
			// deletes the idler s1... s1 is older (prepared first).
			if rep := prune("prune", "--retain-size", "100GB", "--retain-live", "0"); len(rep.Sessions) != 0 {
				t.Fatalf("prune under the size deleted %+v", rep)
			}
			artifacts := func(session string) int {
				var l []json.RawMessage
				json.Unmarshal([]byte(must("ws", "ls", "--session", session)), &l)
				return len(l)
			}
			if artifacts("s2") == 0 {
				t.Fatal("s2 has no artifacts to delete")
			}
			rep = prune("rm", "s2")
			if len(rep.Sessions) != 1 || rep.Sessions[0] != "default/s2" || rep.Artifacts == 0 {
				t.Fatalf("rm s2 = %+v", rep)
			}
			if l := ls(); len(l) != 1 || l[0].ID != "s1" || l[0].Size != s1.Size {
				t.Fatalf("after rm s2: %+v", l)
			}
			if n := artifacts("s2"); n != 0 {
				t.Fatalf("rm s2 left %d of its artifacts", n)
			}
			if n := artifacts("s1"); n != s1.Artifacts {
				t.Fatalf("rm s2 took artifacts of s1: %d left of %d", n, s1.Artifacts)
			}
			rep = prune("prune", "--retain-size", "1", "--retain-live", "0")
			if len(rep.Sessions) != 1 || rep.Remaining != 0 || rep.Bytes != s1.Size {
				t.Fatalf("prune to 1 byte = %+v, want s1 whole (%d bytes)", rep, s1.Size)
			}
			if l := ls(); len(l) != 0 {
				t.Fatalf("after prune: %+v", l)
			}
			if out := must("ws", "ls"); strings.TrimSpace(out) != "[]" && strings.TrimSpace(out) != "null" {
				t.Fatalf("artifacts left: %s", out)
			}
		})
	}
}

func TestSessionsMissingWorkspace(t *testing.T) {
	dir := t.TempDir()
	for _, ws := range []string{filepath.Join(dir, "none"), filepath.Join(dir, "none.db")} {
		out, errOut, code := run(t, "", "sessions", "ls", "--workspace", ws)
		if code != 0 || strings.TrimSpace(out) != "[]" {
			t.Fatalf("ls of a missing workspace: exit %d %q %q", code, out, errOut)
		}
		if _, err := os.Stat(ws); err == nil {
			t.Fatalf("ls created %s", ws)
		}
	}
}

func TestAgeAndSizeFlags(t *testing.T) {
	// Printed as written (issue 48), and read back the same.
	for in, want := range map[string]string{"30d": "30d", "1d12h": "1d12h", "90m": "1h30m", "0": "0", "36h": "1d12h", "1h0m1s": "1h0m1s", "720h": "30d", "2m30s": "2m30s"} {
		var a age
		if err := a.Set(in); err != nil || a.String() != want {
			t.Errorf("age %q = %v, %v; want %s", in, a.String(), err, want)
		}
	}
	for _, bad := range []string{"", "d", "-1h", "3x", "1d-1h"} {
		var a age
		if a.Set(bad) == nil {
			t.Errorf("age %q accepted", bad)
		}
	}
	for in, want := range map[string]int64{"100": 100, "2GiB": 2 << 30, "500MB": 500e6, "1.5k": 1536, "0": 0} {
		var b byteSize
		if err := b.Set(in); err != nil || int64(b) != want {
			t.Errorf("size %q = %d, %v; want %d", in, b, err, want)
		}
	}
	for in, want := range map[string]string{"2GiB": "2GiB", "500MB": "500MB", "1.5k": "1536", "1024": "1KiB", "1000": "1KB", "1000KiB": "1000KiB", "123": "123", "0": "0"} {
		var b byteSize
		if err := b.Set(in); err != nil || b.String() != want {
			t.Errorf("size %q printed %q, %v; want %s", in, b.String(), err, want)
		}
		var again byteSize
		if err := again.Set(b.String()); err != nil || again != b {
			t.Errorf("size %q: %q reads back as %d, %v", in, b.String(), again, err)
		}
	}
	for _, bad := range []string{"", "MB", "-1", "5 parsecs", "1e30GB"} {
		var b byteSize
		if b.Set(bad) == nil {
			t.Errorf("size %q accepted", bad)
		}
	}
}

// On a terminal ls prints a table, and JSON with --json.
func TestSessionsLsTable(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	small, _ := filepath.Abs("../../../testdata/messages.jsonl")
	if _, errOut, code := run(t, "", "prepare", "--workspace", ws, "--session", "s\x01odd", "--dir", dir, small); code != 0 {
		t.Fatal(errOut)
	}
	tty := func(args ...string) string {
		var out, errb bytes.Buffer
		if code := Run(t.Context(), args, Streams{In: strings.NewReader(""), Out: &out, Err: &errb, OutIsTerminal: true}); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	if _, errOut, code := run(t, "", "prepare", "--workspace", ws, "--session", "plain-1", "--dir", dir, small); code != 0 {
		t.Fatal(errOut)
	}
	lines := strings.Split(strings.TrimSpace(tty("sessions", "ls", "--workspace", ws)), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "NAMESPACE  SESSION") {
		t.Fatalf("table:\n%s", strings.Join(lines, "\n"))
	}
	// Ids as they are, quoted only when they would hide or shift the
	// columns; the time with its zone (issue 48: every cell was quoted,
	// the time had no zone).
	zone := time.Now().Format("MST")
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		switch {
		case f[0] != "default":
			t.Errorf("namespace %q, want it bare: %s", f[0], l)
		case f[1] != "plain-1" && f[1] != `"s\x01odd"`:
			t.Errorf("session %q, want plain-1 bare or the odd one quoted: %s", f[1], l)
		case f[len(f)-1] != zone:
			t.Errorf("last activity without its zone %s: %s", zone, l)
		}
	}
	if out := tty("sessions", "show", "--workspace", ws, "plain-1"); !strings.HasPrefix(out, "{\n  \"") {
		t.Errorf("show on a terminal, not indented: %.200s", out)
	}
	if out := tty("sessions", "show", "--json", "--workspace", ws, "plain-1"); strings.Count(out, "\n") != 1 {
		t.Errorf("show --json on a terminal, not one line: %.200s", out)
	}
	if out := tty("sessions", "ls", "--json", "--workspace", ws); !strings.HasPrefix(out, `[{"namespace":"default","id":`) || !strings.Contains(out, `"id":"s\u0001odd"`) {
		t.Fatalf("--json on a terminal: %s", out)
	}
}
