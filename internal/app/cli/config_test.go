package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func tempConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The precedence, end to end through a command: sessions ls reads the
// workspace that the strongest source names (flag > env > file > default).
func TestConfigPrecedenceEndToEnd(t *testing.T) {
	dir := t.TempDir()
	example, _ := filepath.Abs("../../../testdata/messages.jsonl")
	wss := map[string]string{}
	for _, name := range []string{"flag", "env", "file"} {
		wss[name] = filepath.Join(dir, name)
		if _, errOut, code := run(t, "", "prepare", "--workspace", wss[name], "--session", "from-"+name, "--dir", dir, example); code != 0 {
			t.Fatal(errOut)
		}
	}
	cfg := tempConfig(t, `{"workspace": "`+wss["file"]+`"}`)
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"file", map[string]string{"AGENTCTX_CONFIG": cfg}, nil, "from-file"},
		{"env over file", map[string]string{"AGENTCTX_CONFIG": cfg, "AGENTCTX_WORKSPACE": wss["env"]}, nil, "from-env"},
		{"flag over env", map[string]string{"AGENTCTX_CONFIG": cfg, "AGENTCTX_WORKSPACE": wss["env"]}, []string{"--workspace", wss["flag"]}, "from-flag"},
		{"--config over AGENTCTX_CONFIG", map[string]string{"AGENTCTX_CONFIG": "/nonexistent.json"}, []string{"--config", cfg}, "from-file"},
		{"XDG location", map[string]string{"XDG_CONFIG_HOME": filepath.Dir(filepath.Dir(xdgConfig(t, `{"sessions": {"workspace": "`+wss["file"]+`"}}`)))}, nil, "from-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runEnv(t, tc.env, append([]string{"sessions", "ls", "--json"}, tc.args...)...)
			if code != 0 || !strings.Contains(out, `"id":"`+tc.want+`"`) || strings.Count(out, `"id":`) != 1 {
				t.Fatalf("exit %d: %s %s; want only %s", code, out, errOut, tc.want)
			}
		})
	}
}

// xdgConfig writes body as $XDG_CONFIG_HOME/agentctx/config.json and
// returns its path.
func xdgConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "xdg", "agentctx", "config.json")
	os.MkdirAll(filepath.Dir(p), 0o700)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigCommand(t *testing.T) {
	cfg := tempConfig(t, `{"workspace": "/data/ws", "store": "postgres://me:s3cretpw@db/x?sslmode=disable&application_name=a", "proxy": {"listen": ":9000", "api-key": "sk-ant-verysecret", "token": "file-token-secret"},
		"sessions": {"prune": {"retain-age": "30d"}}}`)
	env := map[string]string{"AGENTCTX_CONFIG": cfg, "AGENTCTX_LIMIT": "99000", "AGENTCTX_TOKEN": "env-token-secret"}

	out, errOut, code := runEnv(t, env, "config")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"# configuration file: " + cfg + "\n",
		`workspace  = "/data/ws"  (file ` + cfg + `: workspace)`,
		`store      = "postgres://me:xxxxx@db/x?application_name=a&sslmode=disable"  (file ` + cfg + `: store)`,
		`limit      = "99000"  (env AGENTCTX_LIMIT)`,
		`namespace  = "default"  (default)`,
		// prepare's default summarizer is extractive, the proxy's upstream:
		// no one default is shown for every command.
		`summarizer = "extractive"  (default except claude: "upstream", codex: "upstream", gemini: "upstream", proxy: "upstream")`,
	} {
		squeeze := func(s string) string { return strings.Join(strings.Fields(s), " ") }
		if !strings.Contains(squeeze(out), squeeze(want)) {
			t.Errorf("config output lacks %q:\n%s", want, out)
		}
	}

	out, errOut, code = runEnv(t, env, "config", "--json", "proxy")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "s3cretpw") || strings.Contains(out, "verysecret") || strings.Contains(out, "token-secret") {
		t.Fatalf("a secret is printed: %s", out)
	}
	var rep configReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range rep.Settings {
		got[s.Name] = s.Value + " " + string(s.Source) + " " + s.Origin
	}
	for name, want := range map[string]string{
		"listen":  ":9000 file " + cfg + ": proxy.listen",
		"api-key": "xxxxx file " + cfg + ": proxy.api-key",
		"limit":   "99000 env AGENTCTX_LIMIT",
		// AGENTCTX_TOKEN is an environment variable like the others:
		// it wins over the file.
		"token": "xxxxx env AGENTCTX_TOKEN",
		// A count of tokens is not a secret.
		"input-tokens": "100000 default ",
	} {
		if got[name] != want {
			t.Errorf("%s = %q, want %q", name, got[name], want)
		}
	}
	if rep.Command != "proxy" || !rep.Found || rep.File != cfg {
		t.Errorf("report head = %+v", rep)
	}
	out, _, _ = runEnv(t, env, "config", "--json", "sessions", "prune")
	// As written (issue 48: 720h0m0s).
	if !strings.Contains(out, `{"name":"retain-age","value":"30d","source":"file","origin":"`+cfg+`: sessions.prune.retain-age"}`) {
		t.Errorf("sessions prune settings: %s", out)
	}
	out, _, _ = runEnv(t, map[string]string{"AGENTCTX_CONFIG": tempConfig(t, `{"ws": {"workspace": "/x"}}`)}, "config", "--json", "ws", "ls")
	if !strings.Contains(out, `{"name":"workspace","value":"/x","source":"file"`) {
		t.Errorf("a parent's persistent flag is not shown: %s", out)
	}
	if _, errOut, code := runEnv(t, env, "config", "nosuch"); code != 2 || !strings.Contains(errOut, "unknown command") {
		t.Errorf("config nosuch: exit %d %q", code, errOut)
	}
	out, _, code = runEnv(t, map[string]string{"HOME": t.TempDir()}, "config")
	if code != 0 || !strings.Contains(out, "(absent)") {
		t.Errorf("no file: exit %d %q", code, out)
	}
}

// An unknown key, a bad value, bad JSON and a missing explicit file stop
// every command with one line and exit 2, before it does anything.
func TestConfigErrors(t *testing.T) {
	for name, tc := range map[string]struct{ body, want string }{
		"unknown key":     {`{"bogus": 1}`, `key "bogus": unknown setting`},
		"unknown section": {`{"nope": {"limit": 1}}`, `key "nope": unknown command section`},
		"misplaced flag":  {`{"count": {"listen": ":1"}}`, `key "count.listen": unknown setting`},
		"bad value":       {`{"limit": "lots"}`, `key "limit": invalid value for --limit`},
		"bad nested":      {`{"proxy": {"max-sessions": true}}`, `key "proxy.max-sessions": invalid value`},
		"bad persistent":  {`{"sessions": {"all": "maybe"}}`, `key "sessions.all": invalid value for --all`},
		"bad json":        {`{"limit": 1,}`, "not a JSON object: unexpected '}' looking for beginning of object key string at line 1, column 13"},
		"null":            {`{"limit": null}`, "null is not a value"},
		// In the user's words, not the parser's (issue 48).
		"not a number":   {`{"limit": "lots"}`, `invalid value for --limit: want a whole number`},
		"not a duration": {`{"proxy": {"timeout": "soon"}}`, `invalid value for --timeout: want a duration such as 90s, 5m or 1h`},
		"out of range":   {`{"limit": 99999999999999999999999}`, `invalid value for --limit: out of range`},
		"ends early":     {"{\"limit\": 1", "not a JSON object: it ends early"},
		"stray bracket":  {`{"limit": 1}}`, "not a JSON object: more after its end, at line 1, column 13"},
		"an array":       {`[1]`, "not a JSON object: the file holds a JSON array"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := tempConfig(t, tc.body)
			for _, args := range [][]string{{"count", "-"}, {"config"}, {"sessions", "ls"}} {
				out, errOut, code := runEnv(t, map[string]string{"AGENTCTX_CONFIG": cfg}, args...)
				if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, cfg) ||
					strings.Contains(errOut, "strconv.") || strings.Contains(errOut, "time: ") {
					t.Errorf("%v: exit %d stdout %q stderr %q; want exit 2 and %q", args, code, out, errOut, tc.want)
				}
			}
		})
	}
	out, errOut, code := run(t, "", "count", "--config", "/nonexistent/agentctx.json", "-")
	if code != 2 || out != "" || !strings.Contains(errOut, "no such file") {
		t.Errorf("missing --config file: exit %d %q %q", code, out, errOut)
	}
	out, errOut, code = runEnv(t, map[string]string{"AGENTCTX_LIMIT": "many"}, "prepare", "-")
	if code != 2 || out != "" || !strings.Contains(errOut, `AGENTCTX_LIMIT="many": invalid value for --limit`) {
		t.Errorf("bad env: exit %d %q %q", code, out, errOut)
	}
}

// The file's proxy section reaches agentctx claude and codex, which run a
// proxy with its flags (issue 48): their own section wins, and --listen
// (a standing proxy's address) is not taken. Sizes and durations are
// shown as written.
func TestConfigProxySectionReachesLaunchers(t *testing.T) {
	cfg := tempConfig(t, `{"limit": 90000, "proxy": {"limit": 50000, "threshold": 0.5, "listen": "127.0.0.1:9999", "retain-size": "2GiB"},
		"codex": {"limit": 70000}}`)
	env := map[string]string{"AGENTCTX_CONFIG": cfg}
	for _, tc := range []struct {
		cmd  string
		want map[string]string
	}{
		{"claude", map[string]string{"limit": "50000 proxy.limit", "threshold": "0.5 proxy.threshold", "listen": "127.0.0.1:0 ", "retain-size": "2GiB proxy.retain-size"}},
		{"codex", map[string]string{"limit": "70000 codex.limit", "threshold": "0.5 proxy.threshold", "listen": "127.0.0.1:0 "}},
		{"proxy", map[string]string{"limit": "50000 proxy.limit", "listen": "127.0.0.1:9999 proxy.listen"}},
		{"prepare", map[string]string{"limit": "90000 limit"}},
	} {
		out, errOut, code := runEnv(t, env, "config", "--json", tc.cmd)
		if code != 0 {
			t.Fatalf("config %s: exit %d: %s", tc.cmd, code, errOut)
		}
		var rep configReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, s := range rep.Settings {
			got[s.Name] = s.Value + " " + strings.TrimPrefix(s.Origin, cfg+": ")
		}
		for name, want := range tc.want {
			if got[name] != want {
				t.Errorf("%s --%s = %q, want %q", tc.cmd, name, got[name], want)
			}
		}
	}
}
