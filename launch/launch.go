// Package launch runs an agent client, Claude Code, Codex or Gemini CLI,
// through an agentctx proxy: one call starts the proxy (or checks that a running one
// answers), registers the proxy's read-back MCP server with the client for
// this run only, runs the client with the environment that sends its model
// requests through the proxy, forwards signals to it, stops the proxy once
// the client has exited, and returns the client's exit code.
//
// The user's own client configuration is never written:
//
//   - Claude Code gets ANTHROPIC_BASE_URL, --mcp-config FILE (a temporary
//     file, readable by the user only, removed afterwards) naming the
//     proxy's /mcp with the headers it needs (the proxy's token, and the
//     credentials of ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN, which a
//     proxy run with --tenants tells tenants apart by), and
//     --allowedTools mcp__agentctx (the read-back tools
//     only read what the agent was shown; allowing them lets a headless
//     run read back).
//   - Codex gets -c overrides: a model provider "agentctx" whose base_url
//     is the proxy (Responses API; the key from OPENAI_API_KEY when it is
//     set, else Codex's own login), selected as model_provider, and an MCP
//     server "agentctx" at the proxy's /mcp with the headers it needs (the
//     proxy's token from the environment, and OPENAI_API_KEY as the
//     bearer token, which a proxy run with --tenants tells tenants apart
//     by; with Codex's own login its MCP client has no credentials of the
//     model requests, and a --tenants proxy refuses its read-back).
//   - Gemini CLI gets GOOGLE_GEMINI_BASE_URL, the proxy (the Gemini API;
//     the key from its own configuration, GEMINI_API_KEY with the API key
//     auth: with a Google login it talks to Code Assist, which the proxy
//     does not serve). The proxy bills its requests and does not edit
//     them yet, so no read-back MCP server is registered.
//
// The arguments Run adds come first; Options.Args follow them unchanged.
//
// Quick start (the agentctx claude command does this with the proxy's
// flags):
//
//	srv, _ := proxy.New(proxy.Options{Engine: engine})
//	code, err := launch.Run(ctx, launch.Options{
//		Client: launch.Claude, Args: []string{"-p", "fix the test"},
//		Server: srv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
//	})
package launch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Client names an agent client Run can launch.
type Client string

// The clients Run knows.
const (
	Claude Client = "claude" // Claude Code (the claude command)
	Codex  Client = "codex"  // OpenAI Codex CLI (the codex command)
	Gemini Client = "gemini" // Google's Gemini CLI (the gemini command)
)

// Errors Run returns before the client runs; check them with errors.Is.
var (
	// ErrUnknownClient: Options.Client is not Claude, Codex or Gemini.
	ErrUnknownClient = errors.New("launch: unknown client")
	// ErrClientNotFound: the client's command is not on PATH.
	ErrClientNotFound = errors.New("launch: client not found")
	// ErrProxyUnavailable: the proxy at Options.ProxyURL does not answer
	// its statistics endpoint, or neither ProxyURL nor Server was given.
	ErrProxyUnavailable = errors.New("launch: no proxy")
)

// Server is a proxy Run serves while the client runs: *proxy.Server. Serve
// serves ln until ctx is done, then lets the requests in flight finish.
type Server interface {
	Serve(ctx context.Context, ln net.Listener) error
}

// Paths of the proxy Run relies on (proxy.StatsPath, proxy.MCPPath).
const (
	statsPath = "/agentctx/stats"
	mcpPath   = "/mcp"
)

// MCPServerName is the name the read-back MCP server is registered under:
// its tools reach the model as mcp__agentctx__<tool> in Claude Code.
const MCPServerName = "agentctx"

// DefaultStopTimeout is how long Run waits for the proxy to stop after
// the client exited, when Options.StopTimeout is 0.
const DefaultStopTimeout = 10 * time.Second

// Options configure Run. The zero value of each field means the
// documented default; Client and one of ProxyURL or Server are required.
type Options struct {
	// Client is the client to run.
	Client Client
	// Command is the client's program and leading arguments. Empty: the
	// client's name ("claude", "codex", "gemini") looked up on PATH.
	Command []string
	// Args are the client's own arguments, after those Run adds.
	Args []string

	// ProxyURL is the base URL of a running proxy to use
	// (http://127.0.0.1:8787). Run checks that it answers GET
	// /agentctx/stats, and starts nothing.
	ProxyURL string
	// Server is the proxy Run serves on Listener while the client runs,
	// when ProxyURL is empty. It is stopped (the requests in flight
	// finish) once the client has exited.
	Server Server
	// Listener is where Server listens. Nil: a free port of 127.0.0.1.
	// Run closes it.
	Listener net.Listener
	// Token is the token the proxy's statistics and MCP endpoints
	// require (proxy.Options.Token), if any. The client gets it through a
	// file only the user can read (Claude Code) or an environment
	// variable (Codex), never on its command line.
	Token string

	// Env is the client's environment, to which Run adds its own
	// variables. Nil: the environment of this process.
	Env []string
	// Dir is the client's working directory. Empty: this process's.
	Dir string
	// Stdin, Stdout and Stderr are the client's streams; nil is the null
	// device (as in os/exec). Pass the *os.File of a terminal to run an
	// interactive client.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Signals are forwarded to the client as they arrive, until it exits.
	Signals <-chan os.Signal
	// StopTimeout bounds the wait for the proxy to stop after the client
	// exited, and the wait for the client to exit after ctx is done
	// (then it is killed). Zero: DefaultStopTimeout.
	StopTimeout time.Duration
	// HTTPClient checks ProxyURL. Nil: a client with a 5-second timeout.
	HTTPClient *http.Client
	// ReadDirs are directories outside the client's working directory it
	// is given read access to without a prompt: the workspace whose files
	// the references in edited requests name. Claude Code gets each as
	// --add-dir (it asks before reading outside its working directories,
	// and a headless run cannot answer); Codex reads everywhere already.
	ReadDirs []string
	// TempDir holds the temporary client configuration. Empty:
	// os.TempDir().
	TempDir string
	// Logger receives what Run does (debug) and a proxy that failed
	// (error). Nil discards.
	Logger *slog.Logger
}

// installHint says how to install a client, "" when unknown.
func installHint(c Client) string {
	switch c {
	case Claude:
		return "npm install -g @anthropic-ai/claude-code"
	case Codex:
		return "npm install -g @openai/codex"
	case Gemini:
		return "npm install -g @google/gemini-cli"
	}
	return ""
}

// LookPath returns the path of the client's command on PATH, or an error
// matching ErrClientNotFound that says how to install it (a program that
// runs it another way sets Options.Command).
func LookPath(c Client) (string, error) {
	path, err := exec.LookPath(string(c))
	if err != nil {
		if hint := installHint(c); hint != "" {
			return "", fmt.Errorf("%w: %s is not on PATH (install it: %s)", ErrClientNotFound, c, hint)
		}
		return "", fmt.Errorf("%w: %s is not on PATH", ErrClientNotFound, c)
	}
	return path, nil
}

// Run runs the client through the proxy and returns the client's exit
// code: its own, or 128 plus the signal's number when a signal ended it.
// The error is non-nil when the client could not run (its code is then
// -1): an unknown client, a client not on PATH, a proxy that does not
// answer or cannot listen, or a failure to start the process. When ctx is
// done the client gets SIGTERM, and is killed after StopTimeout.
func Run(ctx context.Context, o Options) (int, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = DefaultStopTimeout
	}
	if o.Client != Claude && o.Client != Codex && o.Client != Gemini {
		return -1, fmt.Errorf("%w %q: want %s, %s or %s", ErrUnknownClient, o.Client, Claude, Codex, Gemini)
	}
	argv := o.Command
	if len(argv) == 0 {
		path, err := LookPath(o.Client)
		if err != nil {
			return -1, err
		}
		argv = []string{path}
	}

	base, stopProxy, err := startProxy(ctx, &o)
	if err != nil {
		return -1, err
	}
	defer stopProxy()

	tmp, err := os.MkdirTemp(o.TempDir, "agentctx-launch-")
	if err != nil {
		return -1, fmt.Errorf("launch: %w", err)
	}
	defer os.RemoveAll(tmp)
	args, env, err := clientSetup(o.Client, base, o.Token, tmp, o.Env)
	if err != nil {
		return -1, err
	}
	if o.Client == Claude {
		for _, d := range o.ReadDirs {
			args = append(args, "--add-dir="+d)
		}
	}

	cmd := exec.Command(argv[0], append(append(append([]string(nil), argv[1:]...), args...), o.Args...)...)
	cmd.Env, cmd.Dir = env, o.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = o.Stdin, o.Stdout, o.Stderr
	cmd.WaitDelay = o.StopTimeout
	o.Logger.Debug("launch: starting the client", "client", o.Client, "proxy", base, "args", len(cmd.Args)-1)
	if err := cmd.Start(); err != nil {
		return -1, fmt.Errorf("launch: start %s: %w", o.Client, err)
	}
	done := make(chan struct{})
	go func() {
		stopping := ctx.Done()
		var killed <-chan time.Time
		for {
			select {
			case <-done:
				return
			case sig := <-o.Signals:
				cmd.Process.Signal(sig)
			case <-stopping:
				cmd.Process.Signal(syscall.SIGTERM)
				stopping, killed = nil, time.After(o.StopTimeout)
			case <-killed:
				cmd.Process.Kill()
			}
		}
	}()
	werr := cmd.Wait()
	close(done)
	code := exitCode(cmd.ProcessState)
	o.Logger.Debug("launch: the client exited", "client", o.Client, "code", code)
	if code < 0 {
		return -1, fmt.Errorf("launch: %s: %w", o.Client, werr)
	}
	return code, nil
}

// exitCode is the shell's code for how a process ended: its status, or
// 128 plus the number of the signal that ended it.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// startProxy checks the proxy at o.ProxyURL, or serves o.Server, and
// returns its base URL and what stops it.
func startProxy(ctx context.Context, o *Options) (string, func(), error) {
	if o.ProxyURL != "" {
		if o.Listener != nil {
			o.Listener.Close()
		}
		base := strings.TrimRight(o.ProxyURL, "/")
		if err := probe(ctx, o.HTTPClient, base, o.Token); err != nil {
			return "", nil, err
		}
		return base, func() {}, nil
	}
	if o.Server == nil {
		return "", nil, fmt.Errorf("%w: give a proxy URL or a server", ErrProxyUnavailable)
	}
	ln := o.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return "", nil, fmt.Errorf("launch: listen: %w", err)
		}
	}
	base := localURL(ln.Addr())
	// The proxy outlives ctx: it serves the client until the client has
	// exited, whatever stops the client.
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan error, 1)
	go func() { served <- o.Server.Serve(sctx, ln) }()
	return base, func() {
		stop()
		select {
		case err := <-served:
			if err != nil {
				o.Logger.Error("launch: the proxy stopped with an error", "err", err)
			}
		case <-time.After(o.StopTimeout):
			o.Logger.Error("launch: the proxy did not stop in time", "timeout", o.StopTimeout)
		}
	}, nil
}

// probe checks that a proxy answers GET base/agentctx/stats.
func probe(ctx context.Context, hc *http.Client, base, token string) error {
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Second}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+statsPath, nil)
	if err != nil {
		return fmt.Errorf("%w at %q: %v", ErrProxyUnavailable, base, err)
	}
	if token != "" {
		req.Header.Set("X-Agentctx-Token", token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%w at %s: %v", ErrProxyUnavailable, base, err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w at %s: GET %s answered %s", ErrProxyUnavailable, base, statsPath, resp.Status)
	}
	return nil
}

// localURL is the base URL a client on this machine reaches addr at: a
// loopback host in place of an unspecified one (0.0.0.0, ::).
func localURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// tokenEnv carries the proxy's token to Codex's MCP client.
const tokenEnv = "AGENTCTX_TOKEN"

// tokenHeader is the header the proxy's token goes in to its /mcp (the
// proxy's httpguard.TokenHeader), which leaves Authorization to the
// credentials a proxy run with --tenants tells tenants apart by.
const tokenHeader = "X-Agentctx-Token"

// clientSetup returns the arguments that point the client at the proxy at
// base, and its environment (env, or this process's, with the client's
// variables set).
func clientSetup(c Client, base, token, tmp string, env []string) ([]string, []string, error) {
	if env == nil {
		env = os.Environ()
	}
	switch c {
	case Claude:
		server := map[string]any{"type": "http", "url": base + mcpPath}
		if h := claudeMCPHeaders(env, token); len(h) > 0 {
			server["headers"] = h
		}
		b, err := json.Marshal(map[string]any{"mcpServers": map[string]any{MCPServerName: server}})
		if err != nil {
			return nil, nil, err
		}
		path := filepath.Join(tmp, "mcp.json")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return nil, nil, fmt.Errorf("launch: write the MCP configuration: %w", err)
		}
		// The "=" forms: both options take several values, and would
		// take the client's own arguments after them as more.
		args := []string{"--mcp-config=" + path, "--allowedTools=mcp__" + MCPServerName}
		return args, setEnv(env, "ANTHROPIC_BASE_URL", base), nil
	case Codex:
		provider := `{ name = "agentctx proxy", base_url = ` + strconv.Quote(base+"/v1") + `, wire_api = "responses", supports_websockets = false`
		if v, ok := lookup(env, "OPENAI_API_KEY"); ok && v != "" {
			provider += `, env_key = "OPENAI_API_KEY"`
		} else {
			provider += `, requires_openai_auth = true`
		}
		provider += " }"
		server := `{ url = ` + strconv.Quote(base+mcpPath)
		if v, ok := lookup(env, "OPENAI_API_KEY"); ok && v != "" {
			// The credentials of the model requests (Authorization:
			// Bearer), so that a proxy run with --tenants finds the
			// tenant whose artifacts /mcp serves (issue 49: Codex's MCP
			// client sent only the proxy's token, and read-back was
			// refused).
			server += `, bearer_token_env_var = "OPENAI_API_KEY"`
		}
		if token != "" {
			server += `, env_http_headers = { "` + tokenHeader + `" = "` + tokenEnv + `" }`
			env = setEnv(env, tokenEnv, token)
		}
		server += " }"
		args := []string{
			"-c", "model_providers." + MCPServerName + "=" + provider,
			"-c", `model_provider="` + MCPServerName + `"`,
			"-c", "mcp_servers." + MCPServerName + "=" + server,
		}
		return args, env, nil
	case Gemini:
		// The Gen AI SDK adds the API version (/v1beta) to the base URL.
		return nil, setEnv(env, "GOOGLE_GEMINI_BASE_URL", base), nil
	}
	return nil, nil, fmt.Errorf("%w %q", ErrUnknownClient, c)
}

// claudeMCPHeaders returns the headers Claude Code's MCP client sends the
// proxy's /mcp: the proxy's token, and the credentials Claude Code's model
// requests carry when they come from its environment (ANTHROPIC_API_KEY as
// X-Api-Key, ANTHROPIC_AUTH_TOKEN as Authorization: Bearer), so that a
// proxy run with --tenants finds the tenant whose artifacts it serves
// (proxy.Tenant). They are written only to the MCP configuration file,
// which only the user can read.
func claudeMCPHeaders(env []string, token string) map[string]string {
	h := map[string]string{}
	if token != "" {
		h[tokenHeader] = token
	}
	if v, ok := lookup(env, "ANTHROPIC_API_KEY"); ok && v != "" {
		h["X-Api-Key"] = v
	}
	if v, ok := lookup(env, "ANTHROPIC_AUTH_TOKEN"); ok && v != "" {
		h["Authorization"] = "Bearer " + v
	}
	return h
}

// setEnv returns env with key set to value, in place of any earlier value.
func setEnv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != key {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}

// lookup finds key in env.
func lookup(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}
