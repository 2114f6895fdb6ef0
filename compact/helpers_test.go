package compact_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
)

// words counts whitespace-separated words: token counts that a test can
// read off its input.
type words struct{}

func (words) Count(s string) int { return len(strings.Fields(s)) }

// text returns n words.
func text(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.TrimSpace(strings.Repeat("w ", n))
}

func sys(n int) agentctx.Message {
	return agentctx.NewMessage(agentctx.RoleSystem, agentctx.Text(text(n)))
}
func user(n int) agentctx.Message {
	return agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(text(n)))
}
func asst(n int) agentctx.Message {
	return agentctx.NewMessage(agentctx.RoleAssistant, agentctx.Text(text(n)))
}

// call is an Anthropic assistant message with tool_use blocks (one per
// id) after a thinking block; the input holds n words.
func call(n int, ids ...string) agentctx.Message {
	blocks := []agentctx.Block{thinking("thinking")}
	for _, id := range ids {
		in, _ := json.Marshal(map[string]string{"command": text(n)})
		blocks = append(blocks, agentctx.ToolUseBlock(id, "Bash", in))
	}
	return agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(blocks...))
}

func thinking(s string) agentctx.Block {
	var b agentctx.Block
	if err := json.Unmarshal([]byte(`{"type":"thinking","thinking":`+quote(s)+`,"signature":"sig"}`), &b); err != nil {
		panic(err)
	}
	return b
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// result is a user message answering ids, each with n words.
func result(n int, ids ...string) agentctx.Message {
	var blocks []agentctx.Block
	for _, id := range ids {
		blocks = append(blocks, agentctx.ToolResultBlock(id, agentctx.Text(text(n)), false))
	}
	return agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(blocks...))
}

// oaCall is an OpenAI assistant message with tool_calls.
func oaCall(ids ...string) agentctx.Message {
	var tcs []agentctx.ToolCall
	for _, id := range ids {
		tcs = append(tcs, agentctx.ToolCall{ID: id, Type: "function", Function: agentctx.FunctionCall{Name: "shell", Arguments: `{"cmd":"ls"}`}})
	}
	m := agentctx.NewMessage(agentctx.RoleAssistant, agentctx.Null())
	m.ToolCalls = tcs
	return m
}

// oaResult is an OpenAI tool message with n words.
func oaResult(n int, id string) agentctx.Message {
	m := agentctx.NewMessage(agentctx.RoleTool, agentctx.Text(text(n)))
	m.ToolCallID = id
	return m
}

func mustJSON(t testing.TB, msgs []agentctx.Message) string {
	t.Helper()
	b, err := agentctx.MarshalMessages(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func parse(t testing.TB, s string) []agentctx.Message {
	t.Helper()
	msgs, err := agentctx.UnmarshalMessages([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// fixedClock returns a clock stopped at 2026-11-22T07:14:00Z.
func fixedClock() func() time.Time {
	t := time.Date(2026, 11, 22, 7, 14, 0, 0, time.UTC)
	return func() time.Time { return t }
}

// fakeSummarizer answers from a script: one entry per call, an error or a
// summary; after the script it repeats the last entry.
type fakeSummarizer struct {
	mu     sync.Mutex
	script []any // string or error
	calls  int
	reqs   []compact.Request
}

func (f *fakeSummarizer) Summarize(ctx context.Context, req compact.Request) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.reqs = append(f.reqs, req)
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if len(f.script) == 0 {
		return "summary", nil
	}
	i := min(f.calls-1, len(f.script)-1)
	switch v := f.script[i].(type) {
	case error:
		return "", v
	case string:
		return v, nil
	}
	return "", fmt.Errorf("bad script entry %v", f.script[i])
}

// logBuffer is a slog logger writing text to a buffer.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// noWait is a Backoff that does not wait.
func noWait(int) time.Duration { return 0 }

// baseOpts are options for tests: word counts, a temp archive dir, a fixed
// clock, no waiting.
func baseOpts(t testing.TB) compact.Options {
	return compact.Options{
		Counter: words{},
		Dir:     t.TempDir(),
		Now:     fixedClock(),
		Backoff: noWait,
	}
}

func errorsAs[T any](err error, target *T) bool { return errors.As(err, target) }
