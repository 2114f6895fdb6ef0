package pipeline_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
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
