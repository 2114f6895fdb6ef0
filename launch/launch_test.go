package launch_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentctx/agentctx/launch"
	"github.com/agentctx/agentctx/proxy"
)

// The test binary is its own fake client: run with LAUNCH_HELPER=1, it
// records its arguments, its environment and the MCP configuration it was
// given, sends one request to the proxy, and exits as told.
func TestMain(m *testing.M) {
	if os.Getenv("LAUNCH_HELPER") == "1" {
		os.Exit(helperClient())
	}
	os.Exit(m.Run())
}

// report is what the fake client saw.
type report struct {
	Args      []string `json:"args"`
	BaseURL   string   `json:"base_url"`
	Token     string   `json:"token"`
	MCPConfig string   `json:"mcp_config"`
	MCPMode   uint32   `json:"mcp_mode"`
	Status    int      `json:"status"`
}

func helperClient() int {
	args := os.Args[1:]
	if i := slices.Index(args, "--"); i >= 0 {
		args = args[i+1:]
	}
	r := report{Args: args, BaseURL: os.Getenv("ANTHROPIC_BASE_URL"), Token: os.Getenv("AGENTCTX_TOKEN")}
	path := "/v1/messages"
	if g := os.Getenv("GOOGLE_GEMINI_BASE_URL"); g != "" && r.BaseURL == "" {
		r.BaseURL, path = g, "/v1beta/models/gemini-2.5-flash:generateContent"
	}
	for _, a := range args {
		if p, ok := strings.CutPrefix(a, "--mcp-config="); ok {
			b, _ := os.ReadFile(p)
			r.MCPConfig = string(b)
			if fi, err := os.Stat(p); err == nil {
				r.MCPMode = uint32(fi.Mode().Perm())
			}
		}
		if p, ok := strings.CutPrefix(a, "model_providers.agentctx="); ok && r.BaseURL == "" {
			_, rest, _ := strings.Cut(p, `base_url = "`)
			r.BaseURL, _, _ = strings.Cut(rest, `/v1"`)
		}
	}
	if r.BaseURL != "" {
		if resp, err := http.Post(r.BaseURL+path, "application/json", strings.NewReader(`{}`)); err == nil {
			r.Status = resp.StatusCode
			resp.Body.Close()
		}
	}
	b, _ := json.Marshal(r)
	os.WriteFile(os.Getenv("LAUNCH_HELPER_OUT"), b, 0o644)
	if os.Getenv("LAUNCH_HELPER_WAIT") == "1" {
		time.Sleep(time.Minute) // until a signal ends it
	}
	code, _ := strconv.Atoi(os.Getenv("LAUNCH_HELPER_EXIT"))
	return code
}

// fakeProxy is a Server that records the paths it was asked for.
type fakeProxy struct {
	mu      sync.Mutex
	paths   []string
	stopped bool
}

func (f *fakeProxy) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.paths = append(f.paths, r.URL.Path)
		f.mu.Unlock()
		w.Write([]byte(`{}`))
	})}
	go func() { <-ctx.Done(); hs.Close() }()
	err := hs.Serve(ln)
	f.mu.Lock()
	f.stopped = true
	f.mu.Unlock()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// helperOptions are options that run the fake client, with its report
// written to the file it returns.
func helperOptions(t *testing.T, client launch.Client, env ...string) (launch.Options, string) {
	out := filepath.Join(t.TempDir(), "report.json")
	return launch.Options{
		Client:  client,
		Command: []string{os.Args[0], "-test.run=^$", "--"},
		Env:     append(os.Environ(), append([]string{"LAUNCH_HELPER=1", "LAUNCH_HELPER_OUT=" + out}, env...)...),
		TempDir: t.TempDir(),
	}, out
}

func readReport(t *testing.T, path string) report {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the client did not run: %v", err)
	}
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// Claude Code gets the proxy as ANTHROPIC_BASE_URL, the proxy's /mcp in a
// --mcp-config file that is gone afterwards, the read-back tools allowed,
// and its own arguments after those; its requests reach the proxy, which
// is stopped once it exited.
func TestRunClaude(t *testing.T) {
	o, out := helperOptions(t, launch.Claude)
	o.Args = []string{"-p", "hello", "--model", "opus"}
	o.Token = "s3cret"
	fp := &fakeProxy{}
	o.Server = fp
	code, err := launch.Run(t.Context(), o)
	if err != nil || code != 0 {
		t.Fatalf("Run: %d, %v", code, err)
	}
	r := readReport(t, out)
	if !strings.HasPrefix(r.BaseURL, "http://127.0.0.1:") || r.Status != 200 {
		t.Errorf("ANTHROPIC_BASE_URL %q, request status %d", r.BaseURL, r.Status)
	}
	if len(r.Args) != 6 || !strings.HasPrefix(r.Args[0], "--mcp-config=") || r.Args[1] != "--allowedTools=mcp__agentctx" ||
		!slices.Equal(r.Args[2:], o.Args) {
		t.Errorf("args %q", r.Args)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Type, URL string
			Headers   map[string]string
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(r.MCPConfig), &cfg); err != nil {
		t.Fatalf("MCP config %q: %v", r.MCPConfig, err)
	}
	if s := cfg.MCPServers["agentctx"]; s.Type != "http" || s.URL != r.BaseURL+"/mcp" || s.Headers["X-Agentctx-Token"] != "s3cret" {
		t.Errorf("MCP config %s", r.MCPConfig)
	}
	if _, err := os.Stat(strings.TrimPrefix(r.Args[0], "--mcp-config=")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the MCP config file is still there: %v", err)
	}
	fp.mu.Lock()
	defer fp.mu.Unlock()
	if !fp.stopped || !slices.Contains(fp.paths, "/v1/messages") {
		t.Errorf("proxy stopped %v, paths %q", fp.stopped, fp.paths)
	}
	if _, err := http.Get(r.BaseURL + "/agentctx/stats"); err == nil {
		t.Errorf("the proxy still answers after the client exited")
	}
}

// Claude Code may read the workspace outside its working directory
// without a prompt: each of Options.ReadDirs is an --add-dir (a headless
// Claude Code cannot answer the prompt, and the workspace is in the
// user's state directory by default).
func TestRunClaudeReadDirs(t *testing.T) {
	o, out := helperOptions(t, launch.Claude)
	o.Args = []string{"-p", "hello"}
	o.ReadDirs = []string{"/state/agentctx/projects/p-1", "/state/offload"}
	o.Server = &fakeProxy{}
	if code, err := launch.Run(t.Context(), o); err != nil || code != 0 {
		t.Fatalf("Run: %d, %v", code, err)
	}
	r := readReport(t, out)
	want := []string{"--add-dir=/state/agentctx/projects/p-1", "--add-dir=/state/offload", "-p", "hello"}
	if len(r.Args) != 6 || !slices.Equal(r.Args[2:], want) {
		t.Errorf("args %q, want the MCP flags then %q", r.Args, want)
	}
}

// Codex gets -c overrides: the proxy as a Responses provider, selected,
// and its /mcp as an MCP server whose token is in the environment, not on
// the command line.
func TestRunCodex(t *testing.T) {
	for _, key := range []string{"", "sk-test"} {
		o, out := helperOptions(t, launch.Codex, "OPENAI_API_KEY="+key)
		o.Args = []string{"exec", "hi"}
		o.Token = "s3cret"
		o.Server = &fakeProxy{}
		if code, err := launch.Run(t.Context(), o); err != nil || code != 0 {
			t.Fatalf("Run: %d, %v", code, err)
		}
		r := readReport(t, out)
		if r.Status != 200 || r.Token != "s3cret" || len(r.Args) != 8 || !slices.Equal(r.Args[6:], o.Args) {
			t.Fatalf("status %d, token %q, args %q", r.Status, r.Token, r.Args)
		}
		joined := strings.Join(r.Args, " ")
		for _, want := range []string{
			`model_providers.agentctx={ name = "agentctx proxy", base_url = "` + r.BaseURL + `/v1", wire_api = "responses"`,
			`model_provider="agentctx"`,
			`mcp_servers.agentctx={ url = "` + r.BaseURL + `/mcp", `,
			`env_http_headers = { "X-Agentctx-Token" = "AGENTCTX_TOKEN" } }`,
		} {
			if !strings.Contains(joined, want) {
				t.Errorf("args lack %s: %q", want, r.Args)
			}
		}
		if auth := `env_key = "OPENAI_API_KEY"`; strings.Contains(joined, auth) != (key != "") {
			t.Errorf("OPENAI_API_KEY=%q: args %q", key, r.Args)
		}
		if strings.Contains(joined, "s3cret") {
			t.Errorf("the token is on the command line: %q", r.Args)
		}
	}
}

// Gemini CLI gets the proxy as GOOGLE_GEMINI_BASE_URL (in place of any
// the environment had) and its own arguments alone: no MCP server yet.
func TestRunGemini(t *testing.T) {
	o, out := helperOptions(t, launch.Gemini, "GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:9", "GEMINI_API_KEY=k")
	o.Args = []string{"-p", "hello", "-m", "gemini-2.5-flash"}
	fp := &fakeProxy{}
	o.Server = fp
	if code, err := launch.Run(t.Context(), o); err != nil || code != 0 {
		t.Fatalf("Run: %d, %v", code, err)
	}
	r := readReport(t, out)
	if !strings.HasPrefix(r.BaseURL, "http://127.0.0.1:") || strings.HasSuffix(r.BaseURL, ":9") || r.Status != 200 || !slices.Equal(r.Args, o.Args) {
		t.Errorf("GOOGLE_GEMINI_BASE_URL %q, request status %d, args %q", r.BaseURL, r.Status, r.Args)
	}
	fp.mu.Lock()
	defer fp.mu.Unlock()
	if !fp.stopped || !slices.Contains(fp.paths, "/v1beta/models/gemini-2.5-flash:generateContent") {
		t.Errorf("proxy stopped %v, paths %q", fp.stopped, fp.paths)
	}
}

// With --tenants the proxy's /mcp serves the artifacts of the tenant the
// request's credentials name (proxy.Tenant): Codex's MCP client sends
// OPENAI_API_KEY as its bearer token, as the model requests do, and the
// proxy's token in its own header; never a credential on the command line
// (issue 49: it sent the proxy's token as the bearer, a tenant of its
// own).
func TestRunCodexMCPTenantCredentials(t *testing.T) {
	for _, key := range []string{"sk-codex-key1", ""} {
		o, out := helperOptions(t, launch.Codex, "OPENAI_API_KEY="+key)
		o.Args = []string{"exec", "hi"}
		o.Token = "tok-s3cret"
		o.Server = &fakeProxy{}
		if code, err := launch.Run(t.Context(), o); err != nil || code != 0 {
			t.Fatalf("Run: %d, %v", code, err)
		}
		r := readReport(t, out)
		var server string
		for _, a := range r.Args {
			if v, ok := strings.CutPrefix(a, "mcp_servers.agentctx="); ok {
				server = v
			}
		}
		// The headers Codex's MCP client sends for this configuration,
		// from its environment (AGENTCTX_TOKEN as the client reported it).
		val := func(name string) string {
			if name == "AGENTCTX_TOKEN" {
				return r.Token
			}
			return envOf(o.Env, name)
		}
		mcp := http.Header{}
		if m := regexp.MustCompile(`bearer_token_env_var = "(\w+)"`).FindStringSubmatch(server); m != nil {
			mcp.Set("Authorization", "Bearer "+val(m[1]))
		}
		if m := regexp.MustCompile(`env_http_headers = \{ "([\w-]+)" = "(\w+)" \}`).FindStringSubmatch(server); m != nil {
			mcp.Set(m[1], val(m[2]))

		}
		if got := mcp.Get("X-Agentctx-Token"); got != "tok-s3cret" {
			t.Errorf("OPENAI_API_KEY=%q: the MCP client's token %q, want the proxy's (config %s)", key, got, server)
		}
		if key == "" {
			if a := mcp.Get("Authorization"); a != "" {
				t.Errorf("no key (Codex's login): the MCP client sends Authorization %q", a)
			}
			continue
		}
		want, _ := proxy.Tenant(http.Header{"Authorization": {"Bearer " + key}}) // the model requests'
		if tenant, ok := proxy.Tenant(mcp); !ok || tenant != want {
			t.Errorf("the MCP client's tenant %q (%v), the model requests' %q (config %s)", tenant, ok, want, server)
		}
		for _, a := range r.Args {
			if strings.Contains(a, key) || strings.Contains(a, "tok-s3cret") {
				t.Errorf("a credential on the command line: %q", a)
			}
		}
	}
}

// envOf is key's value in env.
func envOf(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// The client's exit code is Run's, a signal's too (128+n); signals are
// forwarded.
func TestRunExitCodes(t *testing.T) {
	o, _ := helperOptions(t, launch.Claude, "LAUNCH_HELPER_EXIT=3")
	o.Server = &fakeProxy{}
	if code, err := launch.Run(t.Context(), o); err != nil || code != 3 {
		t.Errorf("a client that exits 3: %d, %v", code, err)
	}

	o, out := helperOptions(t, launch.Claude, "LAUNCH_HELPER_WAIT=1")
	o.Server = &fakeProxy{}
	sigs := make(chan os.Signal, 1)
	o.Signals = sigs
	go func() {
		for range 500 { // once the client runs
			if _, err := os.Stat(out); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		sigs <- syscall.SIGTERM
	}()
	if code, err := launch.Run(t.Context(), o); err != nil || code != 128+int(syscall.SIGTERM) {
		t.Errorf("a client ended by a forwarded SIGTERM: %d, %v; want %d", code, err, 128+int(syscall.SIGTERM))
	}

	// A cancelled ctx stops the client with SIGTERM.
	o, out = helperOptions(t, launch.Claude, "LAUNCH_HELPER_WAIT=1")
	o.Server = &fakeProxy{}
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for range 500 {
			if _, err := os.Stat(out); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	if code, err := launch.Run(ctx, o); err != nil || code != 128+int(syscall.SIGTERM) {
		t.Errorf("a client stopped by a cancelled context: %d, %v", code, err)
	}
}

// With ProxyURL, Run uses the running proxy that answers its statistics
// endpoint, and refuses one that does not.
func TestRunExistingProxy(t *testing.T) {
	var sawToken string
	running := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/agentctx/stats" {
			sawToken = r.Header.Get("X-Agentctx-Token")
		}
		w.Write([]byte(`{}`))
	}))
	defer running.Close()
	o, out := helperOptions(t, launch.Claude)
	o.ProxyURL, o.Token = running.URL+"/", "tok"
	if code, err := launch.Run(t.Context(), o); err != nil || code != 0 {
		t.Fatalf("Run: %d, %v", code, err)
	}
	if r := readReport(t, out); r.BaseURL != running.URL || r.Status != 200 || sawToken != "tok" {
		t.Errorf("base %q (want %q), status %d, token %q", r.BaseURL, running.URL, r.Status, sawToken)
	}

	notProxy := httptest.NewServer(http.NotFoundHandler())
	defer notProxy.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for _, url := range []string{notProxy.URL, closed.URL} {
		o, out := helperOptions(t, launch.Claude)
		o.ProxyURL = url
		if code, err := launch.Run(t.Context(), o); !errors.Is(err, launch.ErrProxyUnavailable) || code != -1 {
			t.Errorf("%s: %d, %v; want ErrProxyUnavailable", url, code, err)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: the client ran without a proxy", url)
		}
	}
}

func TestRunErrors(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, tc := range []struct {
		o    launch.Options
		want error
	}{
		{launch.Options{Client: "no-such-client", Server: &fakeProxy{}}, launch.ErrUnknownClient},
		{launch.Options{Client: launch.Gemini, Server: &fakeProxy{}}, launch.ErrClientNotFound},
		{launch.Options{Client: launch.Claude, Server: &fakeProxy{}}, launch.ErrClientNotFound},
		{launch.Options{Client: launch.Codex, Server: &fakeProxy{}}, launch.ErrClientNotFound},
		{launch.Options{Client: launch.Codex, Command: []string{"true"}}, launch.ErrProxyUnavailable},
	} {
		if code, err := launch.Run(t.Context(), tc.o); !errors.Is(err, tc.want) || code != -1 {
			t.Errorf("%+v: %d, %v; want %v", tc.o, code, err, tc.want)
		}
	}
}

// With --tenants the proxy's /mcp serves the artifacts of the tenant the
// request's credentials name (proxy.Tenant): Claude Code's MCP
// configuration carries the credentials its model requests carry, from
// ANTHROPIC_API_KEY and ANTHROPIC_AUTH_TOKEN, in the file only the user
// reads, never on the command line (issue 49).
func TestRunClaudeMCPTenantCredentials(t *testing.T) {
	tests := []struct {
		name    string
		env     []string
		model   http.Header // what Claude Code's model requests carry
		headers map[string]string
	}{
		{"api key", []string{"ANTHROPIC_API_KEY=sk-ant-key1"}, http.Header{"X-Api-Key": {"sk-ant-key1"}},
			map[string]string{"X-Api-Key": "sk-ant-key1"}},
		{"auth token", []string{"ANTHROPIC_AUTH_TOKEN=tok2"}, http.Header{"Authorization": {"Bearer tok2"}},
			map[string]string{"Authorization": "Bearer tok2"}},
		{"both", []string{"ANTHROPIC_API_KEY=sk-ant-key3", "ANTHROPIC_AUTH_TOKEN=tok3"},
			http.Header{"X-Api-Key": {"sk-ant-key3"}, "Authorization": {"Bearer tok3"}},
			map[string]string{"X-Api-Key": "sk-ant-key3", "Authorization": "Bearer tok3"}},
		{"none (a login, not the environment)", nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, out := helperOptions(t, launch.Claude)
			o.Env = slices.DeleteFunc(o.Env, func(kv string) bool {
				return strings.HasPrefix(kv, "ANTHROPIC_API_KEY=") || strings.HasPrefix(kv, "ANTHROPIC_AUTH_TOKEN=")
			})
			o.Env = append(o.Env, tt.env...)
			o.Server = &fakeProxy{}
			if code, err := launch.Run(t.Context(), o); err != nil || code != 0 {
				t.Fatalf("Run: %d, %v", code, err)
			}
			r := readReport(t, out)
			var cfg struct {
				MCPServers map[string]struct {
					Headers map[string]string
				} `json:"mcpServers"`
			}
			if err := json.Unmarshal([]byte(r.MCPConfig), &cfg); err != nil {
				t.Fatalf("MCP config %q: %v", r.MCPConfig, err)
			}
			got := cfg.MCPServers["agentctx"].Headers
			if len(got) != len(tt.headers) {
				t.Errorf("MCP headers %q, want %q", got, tt.headers)
			}
			for k, v := range tt.headers {
				if got[k] != v {
					t.Errorf("MCP header %s = %q, want %q", k, got[k], v)
				}
			}
			if tt.model != nil {
				mcp := http.Header{}
				for k, v := range got {
					mcp.Set(k, v)
				}
				want, _ := proxy.Tenant(tt.model)
				if tenant, ok := proxy.Tenant(mcp); !ok || tenant != want {
					t.Errorf("the MCP client's tenant %q (%v), the model requests' %q", tenant, ok, want)
				}
			}
			if r.MCPMode != 0o600 {
				t.Errorf("MCP config mode %o, want 600", r.MCPMode)
			}
			for _, a := range r.Args {
				for _, kv := range tt.env {
					if _, v, _ := strings.Cut(kv, "="); strings.Contains(a, v) {
						t.Errorf("a credential on the command line: %q", a)
					}
				}
			}
		})
	}
}
