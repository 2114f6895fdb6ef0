// Package e2eclient installs and runs the real agent clients the
// end-to-end tests drive: Claude Code, Codex, Gemini CLI and opencode,
// from npm, cached between runs. It is for tests only.
package e2eclient

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
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
	GeminiPackage = "@google/gemini-cli@0.61.0"
	// OpencodePackage is opencode: a wrapper whose optional dependency
	// per platform (opencode-linux-x64, ...) ships the native binary.
	OpencodePackage = "opencode-ai@1.18.33"
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
	installOnce.Do(func() { installDir, installErr = install(Cache(), ClaudePackage, CodexPackage) })
	if installErr != nil {
		t.Fatal(installErr)
	}
	return installDir
}

// InstallGemini installs Gemini CLI with npm into the directory Install
// uses (cached between runs, under the same lock) and returns it; it skips
// or fails as Install does. Its own stamp keeps the tests of the other
// clients from installing it.
func InstallGemini(t testing.TB) string {
	t.Helper()
	return installOne(t, "Gemini CLI", GeminiPackage)
}

// InstallOpencode installs opencode with npm into the directory Install
// uses (cached between runs, under the same lock, with its own stamp) and
// returns it; it skips or fails as InstallGemini does.
func InstallOpencode(t testing.TB) string {
	t.Helper()
	return installOne(t, "opencode", OpencodePackage)
}

// installOne installs one client's package pkg (named client in the
// messages) as InstallGemini and InstallOpencode do: skipped with -short
// or without npm and node, but in CI, where their absence fails the test.
// install checks its stamp first: after the first install on the machine,
// a call costs a stat.
func installOne(t testing.TB, client, pkg string) string {
	t.Helper()
	if testing.Short() && os.Getenv("CI") == "" {
		t.Skip("end-to-end test with real clients: skipped with -short")
	}
	for _, tool := range []string{"npm", "node"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is required in CI for the end-to-end tests with %s: %v", tool, client, err)
			}
			t.Skipf("%s not found: the end-to-end tests with %s need it", tool, client)
		}
	}
	dir, err := install(Cache(), pkg)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// install installs the packages pkgs into dir once per machine: test
// binaries run in parallel (go test ./... starts one per package), so the
// install runs under a lock file in dir that every process takes, and a
// stamp written after a complete install tells the others it is done.
func install(dir string, pkgs ...string) (string, error) {
	stamp := filepath.Join(dir, ".installed-"+strings.NewReplacer("/", "_", "@", "").Replace(strings.Join(pkgs, "+")))
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
	args := append([]string{"install", "--no-audit", "--no-fund", "--prefix", dir}, pkgs...)
	cmd := exec.CommandContext(ctx, "npm", args...)
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

// GeminiCommand returns the command that runs Gemini CLI installed in dir:
// its bundle's entry point, with node.
func GeminiCommand(dir string) []string {
	return []string{"node", filepath.Join(dir, "node_modules", "@google", "gemini-cli", "bundle", "gemini.js")}
}

// OpencodeCommand returns the command that runs opencode installed in dir:
// the native binary its postinstall script put in place of the wrapper's
// placeholder script, else (npm may not run install scripts) the binary of
// the platform package npm installed, the AVX2 build before the baseline
// one, as the postinstall script chooses.
func OpencodeCommand(dir string) []string {
	modules := filepath.Join(dir, "node_modules")
	if bin := filepath.Join(modules, "opencode-ai", "bin", "opencode.exe"); isBinary(bin) {
		return []string{bin}
	}
	arch := runtime.GOARCH
	if arch == "amd64" {
		arch = "x64"
	}
	base := "opencode-" + runtime.GOOS + "-" + arch
	for _, pkg := range []string{base, base + "-baseline", base + "-musl", base + "-baseline-musl"} {
		if bin := filepath.Join(modules, pkg, "bin", "opencode"); isBinary(bin) {
			return []string{bin}
		}
	}
	return []string{filepath.Join(modules, ".bin", "opencode")}
}

// isBinary reports a file that starts as an ELF, Mach-O or PE executable
// does: the wrapper's placeholder, a shell script, does not.
func isBinary(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 4)
	if _, err := io.ReadFull(f, head); err != nil {
		return false
	}
	for _, magic := range []string{"\x7fELF", "\xcf\xfa\xed\xfe", "\xca\xfe\xba\xbe", "MZ"} {
		if bytes.HasPrefix(head, []byte(magic)) {
			return true
		}
	}
	return false
}

// OpencodeConfig is the user config file
// ($XDG_CONFIG_HOME/opencode/opencode.json) that runs opencode 1.18
// headless against an Anthropic-compatible base URL (%[1]s, with its /v1)
// with the API key %[2]s: the Anthropic provider's model, every tool
// allowed without asking, no auto-update or sharing, no LSP servers or
// formatters, no snapshots (git) of the working directory; its own
// context management off (no compaction, no pruning of old tool outputs)
// and its cut of a tool's output raised far past the 50 KB default, so
// that what the agent's history holds is the proxy's doing.
const OpencodeConfig = `{
  "$schema": "https://opencode.ai/config.json",
  "model": "anthropic/claude-sonnet-4-5",
  "small_model": "anthropic/claude-sonnet-4-5",
  "autoupdate": false,
  "share": "disabled",
  "lsp": false,
  "formatter": false,
  "snapshot": false,
  "permission": {"*": "allow"},
  "compaction": {"auto": false, "prune": false},
  "tool_output": {"max_lines": 100000, "max_bytes": 10000000},
  "provider": {"anthropic": {"options": {"baseURL": %[1]q, "apiKey": %[2]q}}}
}
`

// OpencodeEnv writes OpencodeConfig for baseURL (the API's root, without
// /v1) and key into home's config directory and returns the environment
// that runs opencode with it: MinimalEnv, HOME and the XDG directories in
// home, and the switches that keep it offline: no fetch of the models.dev
// catalogue (the one built in serves), no update check, no sharing, no LSP
// download, no default plugins, and npm offline (opencode installs its
// plugin package into the config directory with npm's code at start).
func OpencodeEnv(home, baseURL, key string) ([]string, error) {
	dir := filepath.Join(home, ".config", "opencode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	config := fmt.Sprintf(OpencodeConfig, strings.TrimSuffix(baseURL, "/")+"/v1", key)
	if err := os.WriteFile(filepath.Join(dir, "opencode.json"), []byte(config), 0o644); err != nil {
		return nil, err
	}
	return append(MinimalEnv(), "HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"), "XDG_STATE_HOME="+filepath.Join(home, ".local", "state"),
		"OPENCODE_DISABLE_MODELS_FETCH=true", "OPENCODE_DISABLE_AUTOUPDATE=true", "OPENCODE_DISABLE_SHARE=true",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=true", "OPENCODE_DISABLE_DEFAULT_PLUGINS=true",
		"npm_config_offline=true"), nil
}

// GeminiSettings is the user settings file (~/.gemini/settings.json) that
// keeps Gemini CLI 0.61 offline and headless: the API key auth (so that
// no Google login or Code Assist setup runs), no usage statistics
// (Clearcut logging) or telemetry, no update check or notification, no
// IDE integration, no folder-trust prompt.
const GeminiSettings = `{
  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "ide": {"enabled": false},
  "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}}
}
`

// GeminiEnv writes GeminiSettings into home and returns the environment
// that runs Gemini CLI against baseURL with the API key key (MinimalEnv
// and HOME, GEMINI_API_KEY, GOOGLE_GEMINI_BASE_URL; GEMINI_CLI_NO_RELAUNCH
// keeps it one process, which a test's context can stop, instead of a
// parent that relaunches itself as a child with a larger heap).
func GeminiEnv(home, baseURL, key string) ([]string, error) {
	dir := filepath.Join(home, ".gemini")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(GeminiSettings), 0o644); err != nil {
		return nil, err
	}
	return append(MinimalEnv(), "HOME="+home, "GEMINI_API_KEY="+key, "GOOGLE_GEMINI_BASE_URL="+baseURL,
		"GEMINI_CLI_NO_RELAUNCH=true"), nil
}

// EgressGuard is a loopback HTTP proxy that refuses every request (403)
// and records what it was asked for: a client run with Env's proxy
// variables (loopback exempt) shows there every connection it tries beyond
// this machine, if it honours them (Bun's fetch and npm's code do, which
// is what opencode fetches with).
type EgressGuard struct {
	// URL is the guard's address.
	URL string

	mu   sync.Mutex
	seen []string
}

// NewEgressGuard starts an EgressGuard, closed when the test ends.
func NewEgressGuard(t testing.TB) *EgressGuard {
	g := &EgressGuard{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.seen = append(g.seen, r.Method+" "+r.Host+r.URL.Path)
		g.mu.Unlock()
		http.Error(w, "no traffic beyond loopback in the tests", http.StatusForbidden)
	}))
	t.Cleanup(srv.Close)
	g.URL = srv.URL
	return g
}

// Env returns env with the proxy variables, both spellings, that send all
// but loopback traffic to the guard.
func (g *EgressGuard) Env(env []string) []string {
	env = slices.Clip(env)
	for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY"} {
		env = append(env, k+"="+g.URL, strings.ToLower(k)+"="+g.URL)
	}
	return append(env, "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost")
}

// Seen returns the requests the guard refused: "CONNECT host:443" for
// HTTPS, the method, host and path for HTTP.
func (g *EgressGuard) Seen() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.seen...)
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
