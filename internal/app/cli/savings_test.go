package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/savings"
)

// runProxy runs agentctx proxy over the store of loc against upstream up
// and returns its base URL and a stop that waits for it to exit.
func runProxy(t *testing.T, up string, loc []string) (string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	var errb bytes.Buffer
	done := make(chan int)
	go func() {
		args := append([]string{"proxy", "--listen", "127.0.0.1:0", "--upstream-anthropic", up, "--upstream-openai", up,
			"--dir", t.TempDir()}, loc...)
		code := Run(ctx, args, Streams{In: strings.NewReader(""), Out: pw, Err: &syncWriter{w: &errb}})
		pw.Close()
		done <- code
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("proxy: no first line: %v", err)
	}
	go io.Copy(io.Discard, pr)
	base := strings.TrimPrefix(strings.TrimSpace(line), "ANTHROPIC_BASE_URL=")
	return base, func() {
		cancel()
		if code := <-done; code != ExitInterrupted {
			t.Errorf("proxy exit %d", code)
		}
	}
}

// syncWriter is a writer safe for the proxy's concurrent log writes.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func postMessages(t *testing.T, base, ua string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/messages", strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", ua)
	req.Header.Set("X-Claude-Code-Session-Id", "cc-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

func sessionKeyOf(t *testing.T, base string) (string, proxy.TotalStats) {
	t.Helper()
	resp, err := http.Get(base + proxy.StatsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc proxy.StatsDocument
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || len(doc.Sessions) != 1 {
		t.Fatalf("stats: %v, %d sessions", err, len(doc.Sessions))
	}
	return doc.Sessions[0].Session, doc.Total
}

// TestSavingsEndToEnd: what two runs of the proxy billed, on each
// backend, is in agentctx savings after they exited, by model, client and
// project, per day and per session; the second run's total starts from
// the first's.
func TestSavingsEndToEnd(t *testing.T) {
	backends := map[string]func(t *testing.T) []string{
		"dir":    func(t *testing.T) []string { return []string{"--workspace", filepath.Join(t.TempDir(), "ws")} },
		"sqlite": func(t *testing.T) []string { return []string{"--workspace", filepath.Join(t.TempDir(), "ws.db")} },
		"postgres": func(t *testing.T) []string {
			if testing.Short() {
				t.Skip("-short: PostgreSQL")
			}
			return []string{"--store", pgURL(t)}
		},
	}
	wd, _ := os.Getwd()
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			up := httptest.NewServer(fakeupstream.New(fakeupstream.Options{}))
			defer up.Close()
			loc := open(t)
			base, stop := runProxy(t, up.URL, loc)
			postMessages(t, base, "claude-cli/2.0.31 (external, cli)")
			postMessages(t, base, "claude-cli/2.0.31 (external, cli)")
			key, total1 := sessionKeyOf(t, base)
			stop()
			base, stop = runProxy(t, up.URL, loc) // a restart: the ledger stays
			postMessages(t, base, "codex_cli_rs/0.50.0")
			_, total2 := sessionKeyOf(t, base)
			stop()

			report := func(args ...string) savings.Report {
				t.Helper()
				out, errOut, code := run(t, "", append(append([]string{"savings"}, args...), loc...)...)
				if code != 0 {
					t.Fatalf("savings %v: exit %d: %s", args, code, errOut)
				}
				var r savings.Report
				if err := json.Unmarshal([]byte(out), &r); err != nil {
					t.Fatalf("savings %v: %v\n%s", args, err, out)
				}
				return r
			}
			// The restarted proxy's total went on from the ledger.
			if total2.Requests != 3 || total2.CostUSD <= total1.CostUSD {
				t.Errorf("total after a restart: %+v, want 3 requests, more than the first run's $%v", total2, total1.CostUSD)
			}
			r := report("--daily")
			cost := total2.CostUSD
			for _, p := range r.Periods {
				if p.Requests != 3 || !nearUSD(p.CostUSD, cost) || p.CostUSD <= 0 {
					t.Errorf("%s: %d requests $%v, want 3 requests $%v", p.Name, p.Requests, p.CostUSD, cost)
				}
			}
			if len(r.ByModel) != 1 || r.ByModel[0].Name != "claude-sonnet-4-5" || r.ByModel[0].Requests != 3 {
				t.Errorf("by model: %+v", r.ByModel)
			}
			if len(r.ByClient) != 2 || r.ByClient[0].Name != "claude-code" || r.ByClient[0].Requests != 2 || r.ByClient[1].Name != "codex" {
				t.Errorf("by client: %+v", r.ByClient)
			}
			if len(r.ByProject) != 1 || r.ByProject[0].Name != wd {
				t.Errorf("by project: %+v, want %s", r.ByProject, wd)
			}
			if len(r.Days) != 1 || r.Days[0].Date != time.Now().Format(time.DateOnly) || r.Days[0].Requests != 3 {
				t.Errorf("days: %+v", r.Days)
			}
			if s := report("--session", key); s.Session != key || s.Periods[3].Requests != 3 || s.Days != nil {
				t.Errorf("--session %s: %+v", key, s)
			}
			if s := report("--session", "nobody"); s.Periods[3].Requests != 0 {
				t.Errorf("--session nobody: %+v", s.Periods[3])
			}
		})
	}
}

func nearUSD(a, b float64) bool { return a-b < 2e-6 && b-a < 2e-6 }

// TestSavingsBadUsage: bad input is one line and exit 2.
func TestSavingsBadUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"savings", "extra"}, "unknown command"},
		{[]string{"savings", "--session", ""}, "--session must not be empty"},
		{[]string{"savings", "--workspace", ""}, "--workspace must not be empty"},
		{[]string{"savings", "--store", "mysql://x"}, "--store must be a postgres:// URL"},
		{[]string{"savings", "--daily=maybe"}, "invalid argument"},
	} {
		out, errOut, code := run(t, "", c.args...)
		if code != 2 || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d stdout %q stderr %q; want exit 2 and one line with %q", c.args, code, out, errOut, c.want)
		}
	}
}

// TestSavingsEmpty: a workspace that does not exist reports zeros and is
// not created; a terminal gets a table.
func TestSavingsEmpty(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "none")
	out, errOut, code := run(t, "", "savings", "--workspace", ws)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r savings.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Periods) != 4 || r.Periods[3].Requests != 0 {
		t.Fatalf("report %v: %s", err, out)
	}
	if exists(ws) {
		t.Fatal("savings created the workspace")
	}
	var tty bytes.Buffer
	if code := Run(t.Context(), []string{"savings", "--workspace", ws}, Streams{In: strings.NewReader(""), Out: &tty, Err: io.Discard, OutIsTerminal: true}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(tty.String()), "\n")
	if len(lines) != 5 || !strings.Contains(lines[0], "PERIOD") || !strings.Contains(lines[0], "WITHOUT AGENTCTX") || !strings.Contains(lines[4], "all time") {
		t.Fatalf("table:\n%s", tty.String())
	}
}
