package tracereplay

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
)

// trace writes a recorded Anthropic session of n requests into dir: each
// request the one before it plus a tool call and its result of size
// chars, a minute apart on the session's clock.
func trace(t *testing.T, dir string, n, chars int) {
	t.Helper()
	start := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	msgs := []any{map[string]any{"role": "user", "content": "Run the steps."}}
	f, err := os.Create(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("toolu_%03d", i)
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": fmt.Sprintf("make step%d", i)}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id,
				"content": fmt.Sprintf("lt-step-%03d\n", i) + strings.Repeat(fmt.Sprintf("line of step %d: ok\n", i), chars/20)}}})
		body, err := json.Marshal(map[string]any{
			"model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": false,
			"system":   []any{map[string]any{"type": "text", "text": "You are a coding agent.", "cache_control": map[string]any{"type": "ephemeral"}}},
			"tools":    []any{map[string]any{"name": "Bash", "description": "Run a command.", "input_schema": map[string]any{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}}}}},
			"messages": msgs,
		})
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%04d.json", i)
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
		line, _ := json.Marshal(Request{N: i, At: start.Add(time.Duration(i) * time.Minute), Method: http.MethodPost, Path: "/v1/messages",
			Header: http.Header{"Content-Type": {"application/json"}, "Anthropic-Version": {"2023-06-01"}}, BodyFile: name})
		fmt.Fprintf(f, "%s\n", line)
	}
}

func TestReplay(t *testing.T) {
	dir := t.TempDir()
	trace(t, dir, 12, 8_000)
	reqs, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 12 || reqs[3].N != 4 || len(reqs[3].Body) == 0 || !reqs[11].At.After(reqs[0].At) {
		t.Fatalf("read %d requests: %+v", len(reqs), reqs[3])
	}
	bills := map[string]float64{}
	for _, args := range [][]string{nil, nil, {"--max-age", "2m", "--clearing", "batched", "--clear-at-least", "2000", "--clear-trigger", "-1"}} {
		res, err := Run(t.Context(), reqs, Options{ProxyArgs: args, Task: fakeupstream.LongTaskOptions{SummaryTokens: -1}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.PerRequest) != len(reqs) || res.Bill.Requests < len(reqs) || res.Bill.Rejections != 0 {
			t.Fatalf("%v: %d per-request bills, %d requests billed, %d rejected", args, len(res.PerRequest), res.Bill.Requests, res.Bill.Rejections)
		}
		sum := 0.0
		for _, r := range res.PerRequest {
			sum += r.USD
		}
		if d := sum - res.Bill.USD; d > 1e-9 || d < -1e-9 {
			t.Errorf("%v: the per-request bills add to %v, the bill is %v", args, sum, res.Bill.USD)
		}
		key := strings.Join(args, " ")
		if b, ok := bills[key]; ok && b != res.Bill.USD {
			t.Errorf("%v: replayed twice, billed %v and %v", args, b, res.Bill.USD)
		}
		bills[key] = res.Bill.USD
	}
	// Results a minute apart and stale after two: the batched arm clears
	// them on the replay's clock, so its requests differ from the
	// default's, and so does its bill.
	if len(bills) != 2 || bills[""] == bills["--max-age 2m --clearing batched --clear-at-least 2000 --clear-trigger -1"] {
		t.Errorf("the two policies billed the same: %v", bills)
	}
}

func TestReadRejectsABadLine(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "requests.jsonl"), []byte("{not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("Read of a bad line: %v", err)
	}
	if _, err := Read(t.TempDir()); err == nil {
		t.Error("Read of a directory without a trace: no error")
	}
}

// readBackTrace writes into dir a recorded session whose model read a
// result back by the path the recorded proxy's reference named, in its
// workspace ws: a Bash result of 51,000 characters (over the workspace's
// inline limit), then a Read of
// ws/default/tool_result_toolu_001.txt answered with that content.
func readBackTrace(t *testing.T, dir, ws string) {
	t.Helper()
	start := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	out := "lt-step-001\n" + strings.Repeat("line of step 1: ok\n", 2_700)
	msgs := []any{map[string]any{"role": "user", "content": "Run the steps."}}
	turn := func(id, name string, input map[string]any, result string) {
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": result}}})
	}
	var lines []byte
	add := func(n int) {
		body, err := json.Marshal(map[string]any{
			"model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": false,
			"system": []any{map[string]any{"type": "text", "text": "You are a coding agent.", "cache_control": map[string]any{"type": "ephemeral"}}},
			"tools": []any{map[string]any{"name": "Bash", "description": "Run a command.", "input_schema": map[string]any{"type": "object"}},
				map[string]any{"name": "Read", "description": "Read a file.", "input_schema": map[string]any{"type": "object"}}},
			"messages": msgs,
		})
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%04d.json", n)
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
		line, _ := json.Marshal(Request{N: n, At: start.Add(time.Duration(n) * 10 * time.Second), Method: http.MethodPost, Path: "/v1/messages",
			Header: http.Header{"Content-Type": {"application/json"}, "Anthropic-Version": {"2023-06-01"}}, BodyFile: name})
		lines = append(append(lines, line...), '\n')
	}
	turn("toolu_001", "Bash", map[string]any{"command": "make step1"}, out)
	add(1)
	turn("toolu_002", "Read", map[string]any{"file_path": filepath.Join(ws, "default", "tool_result_toolu_001.txt")}, out)
	add(2)
	turn("toolu_003", "Bash", map[string]any{"command": "make step2"}, "ok")
	add(3)
	if err := os.WriteFile(filepath.Join(dir, "requests.jsonl"), lines, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A replay keeps its workspace where the recorded proxy kept its own
// (Options.Workspace, from meta.json): the recorded model's read of a
// stored result names that directory, and only a proxy whose workspace it
// is takes it for a read-back and forwards it whole, as the recorded
// proxy did. A replay with its workspace elsewhere offloaded the read
// again: its requests were smaller than the recorded ones, and it
// compacted later (claude/warm/120: $4.96 replayed, $6.51 live).
func TestReplayReadsBackInTheRecordedWorkspace(t *testing.T) {
	tmp := t.TempDir()
	arm := filepath.Join(tmp, "costsim-arm")
	proxyDir := filepath.Join(arm, "proxy")
	ws := filepath.Join(arm, "home", ".local", "state", "agentctx", "projects", "proxy-0123456789ab")
	dir := filepath.Join(tmp, "trace")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	readBackTrace(t, dir, ws)
	reqs, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	sent := func(o Options) int {
		t.Helper()
		log.Reset()
		o.Log = &log
		o.Task = fakeupstream.LongTaskOptions{SummaryTokens: -1}
		res, err := Run(t.Context(), reqs, o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(arm); !os.IsNotExist(err) {
			t.Errorf("%+v: the replay left %s (%v)", o, arm, err)
		}
		u := res.PerRequest[1]
		return u.Input + u.CacheRead + u.CacheWrite + u.CacheWrite1h
	}
	recorded := sent(Options{ProxyDir: proxyDir, Workspace: ws, ProxyArgs: []string{"-v"}})
	// With -v the proxy logs each request's plan: the third counts the
	// read-back.
	if !regexp.MustCompile(`msg="pipeline: plan" .* requests=2 .* read_backs=1 `).MatchString(log.String()) {
		t.Errorf("the replay's debug log has no plan that counts the read-back:\n%s", log.String())
	}
	elsewhere := sent(Options{ProxyDir: proxyDir})
	// The result is about 20,000 tokens: whole in the recorded
	// workspace, a reference elsewhere.
	if recorded < elsewhere+15_000 {
		t.Errorf("the read of the recorded workspace's file sent %d tokens, %d with the workspace elsewhere: not kept whole as a read-back", recorded, elsewhere)
	}
}

// claimDir refuses a directory that is not a replay's and takes one a
// replay left (its mark), and its release removes the directory and the
// parents it made, leaving a parent that holds another's files.
func TestClaimDir(t *testing.T) {
	tmp := t.TempDir()
	if err := os.WriteFile(filepath.Join(tmp, "keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := claimDir(tmp); err == nil {
		t.Errorf("claimDir(%s), a directory that is not a replay's: no error", tmp)
	}
	left := filepath.Join(tmp, "left")
	if err := os.MkdirAll(left, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(left, replayMark), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, release, err := claimDir(left); err != nil {
		t.Errorf("claimDir of a replay's directory: %v", err)
	} else {
		release()
	}
	dir := filepath.Join(tmp, "a", "b", "ws")
	got, release, err := claimDir(dir)
	if err != nil || got != dir {
		t.Fatalf("claimDir: %q, %v", got, err)
	}
	other := filepath.Join(tmp, "a", "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	release()
	for p, want := range map[string]bool{dir: false, filepath.Join(tmp, "a", "b"): false, other: true, filepath.Join(tmp, "keep"): true, left: false} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("after release: %s exists %v, want %v", p, err == nil, want)
		}
	}
}
