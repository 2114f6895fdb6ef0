package offload_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
)

// toolResultMsg returns a user message with one tool_result block.
func toolResultMsg(id string, c agentctx.Content) agentctx.Message {
	return agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock(id, c, false)))
}

// toolMsg returns an OpenAI role "tool" message.
func toolMsg(id, s string) agentctx.Message {
	m := agentctx.NewMessage(agentctx.RoleTool, agentctx.Text(s))
	m.ToolCallID = id
	return m
}

// toolUseMsg returns an assistant message calling the tools ids.
func toolUseMsg(ids ...string) agentctx.Message {
	var bs []agentctx.Block
	for _, id := range ids {
		bs = append(bs, agentctx.ToolUseBlock(id, "bash", json.RawMessage(`{"cmd":"ls"}`)))
	}
	return agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(bs...))
}

// parse decodes a JSON array of messages.
func parse(t testing.TB, s string) []agentctx.Message {
	t.Helper()
	msgs, err := agentctx.UnmarshalMessages([]byte(s))
	if err != nil {
		t.Fatalf("UnmarshalMessages: %v", err)
	}
	return msgs
}

// encode returns the lossless JSON of msgs.
func encode(t testing.TB, msgs []agentctx.Message) string {
	t.Helper()
	b, err := agentctx.MarshalMessages(msgs)
	if err != nil {
		t.Fatalf("MarshalMessages: %v", err)
	}
	return string(b)
}

// snapshot returns the input and a function that fails the test if msgs
// changed since.
func snapshot(t testing.TB, msgs []agentctx.Message) func() {
	t.Helper()
	before := encode(t, msgs)
	clone := make([]agentctx.Message, len(msgs))
	for i := range msgs {
		clone[i] = msgs[i].Clone()
	}
	return func() {
		t.Helper()
		if after := encode(t, msgs); after != before {
			t.Errorf("input was modified:\nbefore %s\nafter  %s", before, after)
		}
		if a, b := encode(t, clone), encode(t, msgs); a != b {
			t.Errorf("input differs from its deep copy")
		}
	}
}

// listDir returns the sorted names in dir, or nil if it does not exist.
func listDir(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// readFile returns the content of a file.
func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// noTempFiles fails if a temp file of an atomic write is left in dir.
func noTempFiles(t testing.TB, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".tmp-") {
			t.Errorf("temp file left behind: %s", path)
		}
		return nil
	})
}

// contentOf returns the content of tool result i (in ToolResults order).
func contentOf(msgs []agentctx.Message, i int) agentctx.Content {
	n := 0
	for r := range agentctx.ToolResults(msgs) {
		if n == i {
			return r.Content
		}
		n++
	}
	return agentctx.Content{}
}
