// Package e2eclient installs and runs the real agent clients the
// end-to-end tests drive: Claude Code and Codex, from npm, cached between
// runs. It is for tests only.
package e2eclient

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/base/fsutil"
)

// The real clients the end-to-end tests drive, from npm.
const (
	ClaudePackage = "@anthropic-ai/claude-code@2.1.330"
	CodexPackage  = "@openai/codex@0.169.0"
)

var (
	installOnce sync.Once
	installDir  string
	installErr  error
)

// Cache is the directory the clients are installed in, reused between
// runs: $AGENTCTX_E2E_CACHE, else agentctx-e2e in the user's cache
// directory.
func Cache() string {
	if d := os.Getenv("AGENTCTX_E2E_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "agentctx-e2e")
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "agentctx-e2e")
	}
	return filepath.Join(os.TempDir(), "agentctx-e2e")
}

// Install installs Claude Code and Codex with npm (once per test binary,
// cached between runs) and returns the install directory. In CI (CI set) a
// missing npm fails the test; elsewhere it skips it, as -short does.
func Install(t testing.TB) string {
	t.Helper()
	if testing.Short() && os.Getenv("CI") == "" {
		t.Skip("end-to-end test with real clients: skipped with -short")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("npm is required in CI for the end-to-end tests with Claude Code and Codex: %v", err)
		}
		t.Skip("npm not found: the end-to-end tests with Claude Code and Codex need it")
	}
	installOnce.Do(func() { installDir, installErr = install(Cache()) })
	if installErr != nil {
		t.Fatal(installErr)
	}
	return installDir
}

// install installs the clients into dir once per machine: test binaries
// run in parallel (go test ./... starts one per package), so the install
// runs under a lock file in dir that every process takes, and a stamp
// written after a complete install tells the others it is done.
func install(dir string) (string, error) {
	stamp := filepath.Join(dir, ".installed-"+strings.NewReplacer("/", "_", "@", "").Replace(ClaudePackage+"+"+CodexPackage))
	if _, err := os.Stat(stamp); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := fsutil.Lock(filepath.Join(dir, ".install.lock"))
	if err != nil {
		return "", fmt.Errorf("lock the install: %w", err)
	}
	defer unlock()
	if _, err := os.Stat(stamp); err == nil {
		return dir, nil // another process installed while this one waited
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--prefix", dir, ClaudePackage, CodexPackage)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("npm install: %v\n%s", err, out)
	}
	if err := os.WriteFile(stamp, nil, 0o644); err != nil {
		return "", err
	}
	return dir, nil
}

// ClaudeCommand returns the command that runs Claude Code installed in
// dir: the native binary of the platform package (the wrapper's
// postinstall copies it into place, but npm may not run install scripts).
func ClaudeCommand(dir string) []string {
	matches, _ := filepath.Glob(filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-code-*", "claude"))
	for _, m := range matches {
		if fi, err := os.Stat(m); err == nil && fi.Mode()&0o111 != 0 {
			return []string{m}
		}
	}
	return []string{"node", filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-code", "cli-wrapper.cjs")}
}

// CodexCommand returns the command that runs Codex installed in dir.
func CodexCommand(dir string) []string {
	return []string{"node", filepath.Join(dir, "node_modules", "@openai", "codex", "bin", "codex.js")}
}

// MinimalEnv is the environment the clients run with: PATH and the
// locale, nothing that could reach a real API.
func MinimalEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "LANG", "TMPDIR", "TERM"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// LastJSONLine returns the last line of b that starts a JSON object, or b.
func LastJSONLine(b []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if bytes.HasPrefix(bytes.TrimSpace(lines[i]), []byte("{")) {
			return lines[i]
		}
	}
	return b
}

// Tail returns the last 4,000 bytes of s, for failure messages.
func Tail(s string) string {
	if len(s) > 4000 {
		return "..." + s[len(s)-4000:]
	}
	return s
}

// SyncBuffer is a bytes.Buffer safe for a process's (or goroutine's)
// writes and another goroutine's reads: a child's stderr read while it
// runs.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
