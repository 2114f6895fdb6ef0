package cli_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestReaderNotice: an input that yields no message, or from which records
// were skipped, says so on stderr with counts by kind; the command still
// runs.
func TestReaderNotice(t *testing.T) {
	compacted := readTestdata(t, "claude_code_compacted.jsonl")
	tests := []struct {
		name, stdin string
		args        []string
		messages    int
		notice      string // "" for none
	}{
		{"messages only", `[{"role":"user","content":"hi"}]`, nil, 1, ""},
		{"no messages", `[]`, nil, 0, "notice: -: no messages (json)\n"},
		{"claude code records skipped", readTestdata(t, "claude_code.jsonl"), nil, 6,
			"notice: -: 6 records skipped: progress 2, file-history-snapshot 1, queue-operation 1, sidechain 1, system/local_command 1\n"},
		{"live context of a compacted session", compacted, nil, 5, "the live context is read, from line 6 on"},
		{"whole history", compacted, []string{"--whole-history"}, 9, "the whole history is read"},
		{"subagent file", readTestdata(t, "claude_code_subagent.jsonl"), nil, 4, ""},
		{"mini-swe-agent exit", readTestdata(t, "mini_swe_agent.traj.json"), nil, 8, `1 message with role "exit" kept in the file`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tt.stdin, append([]string{"count"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var got struct{ Messages int }
			if err := json.Unmarshal([]byte(out), &got); err != nil || got.Messages != tt.messages {
				t.Errorf("messages %d (%v), want %d", got.Messages, err, tt.messages)
			}
			switch {
			case tt.notice == "" && errOut != "":
				t.Errorf("stderr %q, want nothing", errOut)
			case tt.notice != "" && (!strings.HasPrefix(errOut, "notice: -: ") || !strings.Contains(errOut, tt.notice) || strings.Count(errOut, "\n") != 1):
				t.Errorf("stderr %q, want one notice line with %q", errOut, tt.notice)
			}
		})
	}
}

// TestValidateReportsSkipped: validate's report carries the skipped records
// by kind, the compact boundaries and the notice.
func TestValidateReportsSkipped(t *testing.T) {
	code, out, _ := runCLI(t, readTestdata(t, "claude_code_compacted.jsonl"), "validate")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	m := jsonKeys(t, out, "format", "valid", "messages", "tool_uses", "tool_results", "issues", "skipped_records", "skipped_by_kind", "merged_records", "compact_boundaries", "notice")
	if string(m["compact_boundaries"]) != `[{"line":6,"message_index":0,"trigger":"auto","pre_tokens":158321}]` {
		t.Errorf("compact_boundaries %s", m["compact_boundaries"])
	}
	if !strings.Contains(string(m["skipped_by_kind"]), `"before compact boundary":5`) {
		t.Errorf("skipped_by_kind %s", m["skipped_by_kind"])
	}
}

// TestSingleShotKeepsEveryMessage: offload, ws offload, prune, compact and
// validate --repair return every
// message they were given, mini-swe-agent's final "exit" message included
// (prepare prints what is sent, without it).
func TestSingleShotKeepsEveryMessage(t *testing.T) {
	in := readTestdata(t, "swe_traj.json")
	dir := t.TempDir()
	for _, args := range [][]string{
		{"offload", "--dir", dir},
		{"prune"},
		{"compact", "--force", "--no-archive"},
		{"prune", "--messages-only"},
		{"ws", "offload", "--workspace", filepath.Join(dir, "ws")},
		{"ws", "offload", "--workspace", filepath.Join(dir, "ws"), "--messages-only"},
		{"validate", "--repair"},
	} {
		code, out, errOut := runCLI(t, in, args...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, errOut)
		}
		var o struct {
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		if err := json.Unmarshal([]byte(out), &o); err != nil {
			t.Fatalf("%q: %v\n%s", args, err, out)
		}
		if n := len(o.Messages); n == 0 || o.Messages[n-1].Role != "exit" {
			t.Errorf("%q: the exit message is missing: %+v", args, o.Messages)
		}
	}
}
