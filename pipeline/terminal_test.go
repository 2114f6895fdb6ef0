package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/pipeline"
)

// lockedBuffer is a log sink that several Pipelines may share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// The terminal tools are logged once per session, whatever the requests
// and the Pipelines serving it, and each tool learned by the shape of its
// output once more (issue 47, item 3).
func TestTerminalToolsLoggedOncePerSession(t *testing.T) {
	var logs lockedBuffer
	o := options(t)
	o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	o.Prune.ByShape = true
	gemini := "Command: make\nDirectory: (root)\nOutput: " + strings.Repeat("built\n", 50) + "Exit Code: 0\nSignal: (none)"
	turns := []any{user("build it", now.Add(-time.Hour))}
	for i := range 4 {
		at := now.Add(-time.Hour + time.Duration(i+1)*time.Minute)
		turns = append(turns, exchange("call_"+string(rune('a'+i)), "my_shell", "make", gemini, false, at))
	}
	msgs := history(turns...)
	for _, session := range []string{"s1", "s2"} {
		for k := range 3 {
			so := o
			so.SessionID = session
			p := newPipeline(t, so) // a new Pipeline for each request: the state says the session was seen
			mustPrepare(t, p, msgs[:len(msgs)-2*(2-k)])
		}
	}
	if got := logs.count("pipeline: terminal tools"); got != 2 {
		t.Errorf("the terminal tools were logged %d times for 2 sessions of 3 requests, want 2:\n%s", got, logs.b.String())
	}
	if got := logs.count("tools=terminal-execute,Bash,shell,exec_command,local_shell,execute_bash,run_shell_command,execute_command,run_commands"); got != 2 {
		t.Errorf("the default list was logged %d times, want 2:\n%s", got, logs.b.String())
	}
	if got := logs.count("tool=my_shell"); got != 2 {
		t.Errorf("the learned tool was logged %d times for 2 sessions, want 2:\n%s", got, logs.b.String())
	}
}

// A Stateless Pipeline logs the list once, not at each request.
func TestTerminalToolsLoggedOnceStateless(t *testing.T) {
	var logs lockedBuffer
	o := options(t)
	o.Stateless = true
	o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	p := newPipeline(t, o)
	msgs := history(user("hi", now.Add(-time.Hour)), exchange("c1", "Bash", "ls", "a\nb\n", false, now.Add(-time.Hour)))
	for range 3 {
		mustPrepare(t, p, msgs)
	}
	if got := logs.count("pipeline: terminal tools"); got != 1 {
		t.Errorf("logged %d times, want 1:\n%s", got, logs.b.String())
	}
}

// The session's first request names the tools it declares that are
// terminal by name (issue 47, item 3: a Cline user could not tell that
// run_commands was not one), in any API's shape of declarations; a
// request that declares none of them says "none".
func TestTerminalToolsLogNamesDeclaredTools(t *testing.T) {
	msgs := history(user("hi", now.Add(-time.Hour)), exchange("c1", "read_file", "", "a\nb\n", false, now.Add(-time.Hour)))
	for _, tc := range []struct {
		name, tools, want string
	}{
		{"chat", `[{"type":"function","function":{"name":"read_file"}},{"type":"function","function":{"name":"run_commands"}},{"type":"function","function":{"name":"execute_command"}}]`, "declared=run_commands,execute_command"},
		{"anthropic", `[{"name":"Read","input_schema":{}},{"type":"bash_20250124","name":"bash"}]`, "declared=bash"},
		{"responses", `[{"type":"function","name":"apply_patch"},{"type":"local_shell"}]`, "declared=local_shell"},
		{"none terminal", `[{"type":"function","function":{"name":"my_shell"}}]`, "declared=none"},
		{"no list", `null`, "tools="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs lockedBuffer
			o := options(t)
			o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			p := newPipeline(t, o)
			co := pipeline.CallOptions{Tools: json.RawMessage(tc.tools)}
			for range 2 {
				if _, err := p.PrepareConversation(context.Background(), agentctx.Conversation{Messages: msgs}, 0, co); err != nil {
					t.Fatal(err)
				}
			}
			if got := logs.count("pipeline: terminal tools"); got != 1 {
				t.Fatalf("logged %d times, want 1:\n%s", got, logs.b.String())
			}
			if logs.count(tc.want) != 1 || tc.want == "tools=" && logs.count("declared=") != 0 {
				t.Errorf("want %s in\n%s", tc.want, logs.b.String())
			}
		})
	}
}

// PrepareDocument reads the declarations from the request body.
func TestTerminalToolsLogReadsTheBodysTools(t *testing.T) {
	body := `{"model":"m","tools":[{"name":"run_commands","input_schema":{}}],"messages":[{"role":"user","content":"hi"}]}`
	doc, err := agentctx.ParseDocument(context.Background(), []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	o := options(t)
	o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	if _, err := newPipeline(t, o).PrepareDocument(context.Background(), doc); err != nil {
		t.Fatal(err)
	}
	if logs.count("declared=run_commands ") != 1 {
		t.Errorf("the body's tools were not named:\n%s", logs.b.String())
	}
}

// Without Prune.ByShape (the library's default, the seed's rule) a
// transcript of a tool the list does not name is not terminal output:
// nothing is learned, and the first line says what else counts.
func TestTerminalToolsNotLearnedByShapeByDefault(t *testing.T) {
	var logs lockedBuffer
	o := options(t)
	o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	gemini := "Command: make\nOutput: " + strings.Repeat("built\n", 50) + "Exit Code: 0"
	msgs := history(user("build it", now.Add(-time.Hour)), exchange("c1", "my_shell", "make", gemini, false, now.Add(-time.Hour)))
	mustPrepare(t, newPipeline(t, o), msgs)
	if logs.count("tool=my_shell") != 0 || logs.count("shaped like a shell transcript") != 0 {
		t.Errorf("a shape was read without ByShape:\n%s", logs.b.String())
	}
	o = options(t) // a new session
	o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	o.Prune.ByShape = true
	mustPrepare(t, newPipeline(t, o), msgs)
	if logs.count("tool=my_shell") != 1 || logs.count("shaped like a shell transcript") != 1 {
		t.Errorf("with ByShape the tool was not learned once:\n%s", logs.b.String())
	}
}
