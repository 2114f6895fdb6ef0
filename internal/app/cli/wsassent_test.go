package cli_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// A result sent as a JSON-encoded string (Cline's) is stored as its text,
// which ws get and ws lines read by line, and ws get --as-sent prints it
// as it was sent (issue 47, item 4).
func TestWSGetAsSent(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "ws")
	var b strings.Builder
	for i := 1; i <= 50; i++ {
		b.WriteString("line " + strings.Repeat("x", i%7) + " \"q\"\n")
	}
	sent, _ := json.Marshal(b.String())
	msgs := []any{
		map[string]any{"role": "user", "content": "go"},
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "run_commands", "input": map[string]any{}}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": string(sent)}}},
	}
	in, _ := json.Marshal(msgs)
	if code, _, errs := runCLI(t, string(in), "ws", "offload", "--workspace", ws); code != 0 {
		t.Fatal(errs)
	}
	if code, out, errs := runCLI(t, "", "ws", "lines", "--workspace", ws, "tool_result_toolu_1", "2", "3"); code != 0 || out != "Lines 2-3 of 50\nline xx \"q\"\nline xxx \"q\"\n" {
		t.Errorf("ws lines: exit %d, %q (%s)", code, out, errs)
	}
	if code, out, errs := runCLI(t, "", "ws", "get", "--workspace", ws, "tool_result_toolu_1"); code != 0 || out != b.String() {
		t.Errorf("ws get: exit %d, %.80q (%s); want the text", code, out, errs)
	}
	if code, out, errs := runCLI(t, "", "ws", "get", "--as-sent", "--workspace", ws, "tool_result_toolu_1"); code != 0 || out != string(sent) {
		t.Errorf("ws get --as-sent: exit %d, %.80q (%s); want the JSON string as sent", code, out, errs)
	}
}
