package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestPrepareCountsWhatItPrints: prepare's report counts the request it
// prints (read tools it declares included), and count of the printed file
// says the same, whatever the input's JSON layout.
func TestPrepareCountsWhatItPrints(t *testing.T) {
	session, err := os.ReadFile("../../../examples/session.json")
	if err != nil {
		t.Fatal(err)
	}
	var cb bytes.Buffer
	if err := json.Compact(&cb, session); err != nil {
		t.Fatal(err)
	}
	compact := cb.Bytes()
	dir := t.TempDir()
	t.Chdir(dir)
	var counts []int
	for _, in := range [][]byte{session, compact} {
		if err := os.WriteFile("in.json", in, 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runCLI(t, "", "count", "in.json")
		if code != 0 {
			t.Fatalf("count: exit %d: %s", code, stderr)
		}
		os.RemoveAll(filepath.Join(dir, ".agentctx"))
		code, out, stderr := runCLI(t, "", "prepare", "--limit", "14000", "in.json")
		if code != 0 {
			t.Fatalf("prepare: exit %d: %s", code, stderr)
		}
		var body struct {
			Tools  []json.RawMessage `json:"tools"`
			Report struct {
				TokensBefore    int `json:"tokens_before"`
				TokensAfter     int `json:"tokens_after"`
				ReadToolsTokens int `json:"read_tools_tokens"`
			} `json:"report"`
		}
		if err := json.Unmarshal([]byte(out), &body); err != nil {
			t.Fatal(err)
		}
		if body.Report.ReadToolsTokens == 0 {
			t.Errorf("the report does not count the %d tools it declared", len(body.Tools))
		}
		if err := os.WriteFile("prepared.json", []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, stderr = runCLI(t, "", "count", "prepared.json")
		if code != 0 {
			t.Fatalf("count prepared: exit %d: %s", code, stderr)
		}
		var c struct{ Tokens int }
		if err := json.Unmarshal([]byte(out), &c); err != nil {
			t.Fatal(err)
		}
		if c.Tokens != body.Report.TokensAfter {
			t.Errorf("prepare reports %d tokens after, count of what it printed says %d", body.Report.TokensAfter, c.Tokens)
		}
		counts = append(counts, body.Report.TokensBefore)
	}
	if counts[0] != counts[1] {
		t.Errorf("the same session counts %d indented and %d compact", counts[0], counts[1])
	}
}
