package tracereplay

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
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
