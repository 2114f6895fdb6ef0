package cli_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// claudeSession writes a Claude Code session of n tool turns: each
// assistant record calls Read and records the usage Claude would have
// billed (a 2,000-token system prompt plus 1.3 tokens per 4 characters).
func claudeSession(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	start := time.Date(2026, 2, 1, 9, 0, 0, 0, time.UTC)
	chars := 0
	rec := func(v map[string]any) {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		b.WriteByte('\n')
		chars += len(data)
	}
	rec(map[string]any{"type": "user", "uuid": "u0", "sessionId": "s", "timestamp": start.Format(time.RFC3339Nano),
		"message": map[string]any{"role": "user", "content": "Fix the failing build, please."}})
	for i := range n {
		at := start.Add(time.Duration(i) * 2 * time.Minute)
		usage := 2_000 + chars*13/40
		rec(map[string]any{"type": "assistant", "uuid": fmt.Sprint("a", i), "sessionId": "s", "timestamp": at.Format(time.RFC3339Nano),
			"message": map[string]any{"id": fmt.Sprint("msg_", i), "role": "assistant", "model": "claude-sonnet-4-5",
				"content": []any{map[string]any{"type": "tool_use", "id": fmt.Sprint("toolu_", i), "name": "Read", "input": map[string]any{"file_path": "build.log"}}},
				"usage":   map[string]any{"input_tokens": 3, "cache_read_input_tokens": usage - 1003, "cache_creation_input_tokens": 1000, "output_tokens": 50}}})
		out := strings.Repeat(fmt.Sprintf("compiling unit %d ... ok\n", i), 120)
		rec(map[string]any{"type": "user", "uuid": fmt.Sprint("r", i), "sessionId": "s", "timestamp": at.Add(30 * time.Second).Format(time.RFC3339Nano),
			"message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": fmt.Sprint("toolu_", i), "content": out}}}})
	}
	rec(map[string]any{"type": "assistant", "uuid": "end", "sessionId": "s", "timestamp": start.Add(time.Duration(n) * 2 * time.Minute).Format(time.RFC3339Nano),
		"message": map[string]any{"id": "msg_end", "role": "assistant", "content": []any{map[string]any{"type": "text", "text": "Fixed."}},
			"usage": map[string]any{"input_tokens": 2_000 + chars*13/40}}})
	path := filepath.Join(t.TempDir(), "session.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReplayCommand(t *testing.T) {
	path := claudeSession(t, 40)
	code, out, errOut := runCLI(t, "", "replay", "--limit", "20000", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	m := jsonKeys(t, out, "requests", "compactions", "cache_breaks", "prefix_stable_ratio", "count_error", "max_ms", "median_ms",
		"tokens_before", "tokens_after", "cache_cost", "ratio", "per_request", "cost_usd", "cost_without_usd", "saved_usd")
	// The recorded bill, by hand at claude-sonnet-4-5's prices: each tool
	// turn i reads r_i−1003 tokens, writes 1,000 and outputs 50; the last
	// request, of no known model, is priced at the pipeline's prices (the
	// Anthropic fallback, the same): see claudeSession.
	if got, want := mustFloat(t, m["cost_without_usd"]), recordedBill(path); math.Abs(got-want) > 1e-5 {
		t.Errorf("cost_without_usd %v, want %v", got, want)
	}
	if with, saved := mustFloat(t, m["cost_usd"]), mustFloat(t, m["saved_usd"]); with <= 0 || saved <= 0 {
		t.Errorf("cost_usd %v, saved_usd %v: offloading and compacting the build logs should save", with, saved)
	}
	var res struct {
		Requests, Compactions, CacheBreaks int
		PrefixStableRatio                  float64 `json:"prefix_stable_ratio"`
		CountError                         struct {
			MedianPct float64 `json:"median_pct"`
			P95Pct    float64 `json:"p95_pct"`
			N         int     `json:"n"`
		} `json:"count_error"`
		PerRequest []map[string]any `json:"per_request"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	res.CacheBreaks = int(mustFloat(t, m["cache_breaks"]))
	if res.Requests != 41 || len(res.PerRequest) != 41 || res.Compactions < 1 {
		t.Errorf("requests %d (%d rows), compactions %d", res.Requests, len(res.PerRequest), res.Compactions)
	}
	if res.CacheBreaks > res.Compactions+1 || res.PrefixStableRatio < 0.9 {
		t.Errorf("cache breaks %d, prefix stable %.3f", res.CacheBreaks, res.PrefixStableRatio)
	}
	if res.CountError.N != 40 || res.CountError.MedianPct > 3 || res.CountError.P95Pct > 10 {
		t.Errorf("count error %+v", res.CountError)
	}

	// Without per-request rows; a terminal gets a summary.
	code, out, _ = runCLI(t, "", "replay", "--limit", "20000", "--per-request=false", path)
	if code != 0 || !strings.Contains(out, `"per_request":null`) {
		t.Errorf("--per-request=false: %d %.200s", code, out)
	}

	for _, tt := range []struct {
		name, input string
		args        []string
		want        string
	}{
		{"no request", `[{"role":"user","content":"hi"}]`, nil, "no model request"},
		{"bad estimate", `[]`, []string{"--estimate", "gpt"}, "invalid --estimate"},
		{"bad clear trigger", `[]`, []string{"--clear-trigger", "2"}, "invalid --clear-trigger"},
		{"bad trigger", `[]`, []string{"--trigger", "early"}, "invalid --trigger \"early\": want priced or threshold"},
		{"missing file", "", []string{"/no/such/file.jsonl"}, "no such file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tt.input, append([]string{"replay"}, tt.args...)...)
			if code != 2 || out != "" || !strings.Contains(errOut, tt.want) || strings.Count(errOut, "\n") > 1 {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, out, errOut, tt.want)
			}
		})
	}
}

func mustFloat(t *testing.T, raw json.RawMessage) float64 {
	t.Helper()
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestPrepareSessionAcrossProcesses: two prepare commands with one
// --session behave like one long-lived pipeline: the second re-applies the
// first one's compaction (same beginning, byte for byte) and does not
// compact again.
func TestPrepareSessionAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	path := claudeSession(t, 40)
	data, _ := os.ReadFile(path)
	lines := strings.SplitAfter(strings.TrimSpace(string(data)), "\n")
	short := filepath.Join(dir, "short.jsonl")
	os.WriteFile(short, []byte(strings.Join(lines[:len(lines)-3], "")), 0o644)
	args := []string{"prepare", "--limit", "20000", "--workspace", filepath.Join(dir, "ws"), "--session", "s1"}
	type out struct {
		Messages []json.RawMessage `json:"messages"`
		Report   struct {
			Session struct {
				Requests    int  `json:"requests"`
				Compactions int  `json:"compactions"`
				Changed     bool `json:"prefix_changed"`
			} `json:"session"`
		} `json:"report"`
	}
	var first, second out
	for i, in := range []string{short, path} {
		code, stdout, errOut := runCLI(t, "", append(args, in)...)
		if code != 0 {
			t.Fatalf("call %d: exit %d: %s", i+1, code, errOut)
		}
		dst := &first
		if i == 1 {
			dst = &second
		}
		if err := json.Unmarshal([]byte(stdout), dst); err != nil {
			t.Fatal(err)
		}
	}
	if first.Report.Session.Compactions != 1 || second.Report.Session.Requests != 2 || second.Report.Session.Compactions != 1 || second.Report.Session.Changed {
		t.Fatalf("sessions: %+v then %+v", first.Report.Session, second.Report.Session)
	}
	for i := range first.Messages {
		if string(first.Messages[i]) != string(second.Messages[i]) {
			t.Fatalf("message %d differs between the calls:\n%.200s\n%.200s", i, first.Messages[i], second.Messages[i])
		}
	}
	// The summary's archive reads back with ws get --session.
	code, got, errOut := runCLI(t, "", "ws", "ls", "--workspace", filepath.Join(dir, "ws"), "--session", "s1", "--context-type", "compaction_archive")
	if code != 0 || !strings.Contains(got, `"id":"compact_`) {
		t.Errorf("archive listing: %d %s %s", code, got, errOut)
	}
}

// recordedBill prices the usage recorded in a session file at $3 in,
// $0.30 read, $3.75 write and $15 out per million tokens.
func recordedBill(path string) float64 {
	data, _ := os.ReadFile(path)
	total := 0.0
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var rec struct {
			Message struct {
				Usage struct {
					In    int `json:"input_tokens"`
					Read  int `json:"cache_read_input_tokens"`
					Write int `json:"cache_creation_input_tokens"`
					Out   int `json:"output_tokens"`
				} `json:"usage"`
			} `json:"message"`
		}
		json.Unmarshal([]byte(line), &rec)
		u := rec.Message.Usage
		total += (float64(u.In)*3 + float64(u.Read)*0.3 + float64(u.Write)*3.75 + float64(u.Out)*15) / 1e6
	}
	return total
}

// TestReplaySummaryWithoutUsage: a session with no recorded usage has no
// count error to show (not "0.00%"), and its bill without agentctx is said
// to be an estimate.
func TestReplaySummaryWithoutUsage(t *testing.T) {
	session, err := filepath.Abs(filepath.Join("..", "..", "..", "examples", "session.json"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	code, _, stderr := prepRun(t, true, "", "replay", "--limit", "14000", session)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stderr, "0.00%") || !strings.Contains(stderr, "no recorded usage") || !strings.Contains(stderr, "estimated from our counts") {
		t.Errorf("summary:\n%s", stderr)
	}
}
