package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/app/cli"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/internal/testkit/otlptest"
)

// --otel with an OTLP protocol the exporter does not speak is a usage
// error, one line, before anything listens; so is --otel with only an
// exporter the proxy does not have.
func TestProxyOtelProtocolRefused(t *testing.T) {
	for _, env := range [][2]string{{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"}, {"OTEL_TRACES_EXPORTER", "zipkin"}} {
		t.Run(env[0], func(t *testing.T) {
			t.Setenv(env[0], env[1])
			t.Chdir(t.TempDir())
			code, out, errs := runCLI(t, "", "proxy", "--otel", "--listen", "127.0.0.1:0")
			if code != cli.ExitUsage || out != "" || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, env[0]) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2, one line naming the variable", code, out, errs)
			}
		})
	}
}

// agentctx proxy exports its traces to the OTLP collector the standard
// variables name (here a receiver on the loopback interface), when --otel
// or OTEL_TRACES_EXPORTER=otlp turns tracing on, and sends nothing by
// default, an endpoint set or not. The last spans are flushed when the
// proxy stops.
func TestProxyOtelExportsOverOTLP(t *testing.T) {
	for _, tc := range []struct {
		name     string
		flag     bool
		exporter string
		want     bool
	}{
		{"default", false, "", false},
		{"--otel", true, "", true},
		{"OTEL_TRACES_EXPORTER=otlp", false, "otlp", true},
		{"--otel OTEL_TRACES_EXPORTER=none", true, "none", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rcv := otlptest.Start(t)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
			t.Setenv("OTEL_TRACES_EXPORTER", tc.exporter)
			t.Setenv("OTEL_SERVICE_NAME", "")
			args := []string{"proxy", "--listen", "127.0.0.1:0"}
			if tc.flag {
				args = append(args, "--otel")
			}
			serveOneRequest(t, args)
			spans := rcv.Spans()
			if !tc.want {
				if n := rcv.Posts(); n != 0 {
					t.Fatalf("%d exports received, want none (%v)", n, spans)
				}
				return
			}
			names := map[string]int{}
			trace := ""
			for _, sp := range spans {
				names[sp.Name]++
				if sp.Service != "agentctx" {
					t.Errorf("span %s of service %q", sp.Name, sp.Service)
				}
				if sp.Name == "agentctx.request" {
					trace = sp.TraceID
				}
			}
			for _, n := range []string{"agentctx.request", "agentctx.decode", "agentctx.prepare", "agentctx.upstream", "agentctx.store", "agentctx.step.offload"} {
				if names[n] != 1 {
					t.Errorf("%d spans %s, want 1 (%v)", names[n], n, names)
				}
			}
			// The session state's reads and writes (proxy.TraceSessions).
			if names["agentctx.store.load"] == 0 || names["agentctx.store.save"] == 0 {
				t.Errorf("no span of the session state's load and save: %v", names)
			}
			for _, sp := range spans {
				if sp.TraceID != trace {
					t.Errorf("span %s in trace %s, the request's is %s", sp.Name, sp.TraceID, trace)
				}
			}
		})
	}
}

// serveOneRequest runs agentctx proxy with args (and a fake upstream, a
// workspace of the test's), sends it one model request and stops it.
func serveOneRequest(t *testing.T, args []string) {
	t.Helper()
	base, stop := startProxy(t, args)
	postMessages(t, base, "")
	stop()
}

// startProxy runs agentctx proxy with args, a fake upstream and a
// workspace of the test's; it returns the proxy's base URL and a stop
// that cancels it and checks it exits as interrupted.
func startProxy(t *testing.T, args []string) (base string, stop func()) {
	t.Helper()
	up := httptest.NewServer(fakeupstream.New(fakeupstream.Options{}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	pr, pw := io.Pipe()
	errb := &lockedBuffer{b: &bytes.Buffer{}}
	done := make(chan int, 1)
	go func() {
		code := cli.Run(ctx, append(args, "--upstream-anthropic", up.URL, "--upstream-openai", up.URL,
			"--workspace", dir+"/ws", "--dir", dir+"/archive"), cli.Streams{In: strings.NewReader(""), Out: pw, Err: errb})
		pw.Close()
		done <- code
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no first line: %v\n%s", err, errb.String())
	}
	go io.Copy(io.Discard, pr)
	base = strings.TrimPrefix(strings.TrimSpace(line), "ANTHROPIC_BASE_URL=")
	return base, func() {
		t.Helper()
		cancel()
		select {
		case code := <-done:
			if code != cli.ExitInterrupted {
				t.Errorf("exit %d after cancel, want %d\n%s", code, cli.ExitInterrupted, errb.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the proxy did not stop after its context was cancelled")
		}
	}
}

// postMessages sends one Anthropic request through the proxy at base, in
// the Claude Code session named (none: "").
func postMessages(t *testing.T, base, session string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/v1/messages", strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if session != "" {
		req.Header.Set("X-Claude-Code-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("through the proxy: %d", resp.StatusCode)
	}
}

// So is a value of an OTLP exporter variable that cannot be used.
func TestProxyOtelBadVariable(t *testing.T) {
	for k, v := range map[string]string{
		"OTEL_EXPORTER_OTLP_TIMEOUT":         "5s",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "collector:4318",
		"OTEL_EXPORTER_OTLP_COMPRESSION":     "zstd",
	} {
		t.Run(k, func(t *testing.T) {
			t.Setenv(k, v)
			t.Chdir(t.TempDir())
			code, out, errs := runCLI(t, "", "proxy", "--otel", "--listen", "127.0.0.1:0")
			if code != cli.ExitUsage || out != "" || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, v) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2, one line naming the value", code, out, errs)
			}
		})
	}
}
