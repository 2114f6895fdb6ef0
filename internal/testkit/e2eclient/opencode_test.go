package e2eclient_test

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/testkit/e2eclient"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
)

// opencode with OpencodeEnv answers a one-line prompt from the fake and
// tries nothing beyond loopback; without the switches that keep it
// offline, the egress guard sees what it then fetches (the models.dev
// catalogue, its plugin package from the npm registry): the guard's
// silence in the end-to-end tests means something.
func TestOpencodeOffline(t *testing.T) {
	dir := e2eclient.InstallOpencode(t)
	fake := fakeupstream.New(fakeupstream.Options{Script: func(c *fakeupstream.Call) fakeupstream.Reply {
		return fakeupstream.Reply{Text: "PONG"}
	}})
	up := httptest.NewServer(fake)
	defer up.Close()
	offline := []string{"OPENCODE_DISABLE_MODELS_FETCH", "npm_config_offline"}
	for _, tc := range []struct {
		name    string
		offline bool
	}{{"offline", true}, {"without the switches", false}} {
		t.Run(tc.name, func(t *testing.T) {
			env, err := e2eclient.OpencodeEnv(t.TempDir(), up.URL, "fake-key")
			if err != nil {
				t.Fatal(err)
			}
			if !tc.offline {
				env = slices.DeleteFunc(env, func(kv string) bool { return slices.Contains(offline, strings.Split(kv, "=")[0]) })
			}
			guard := e2eclient.NewEgressGuard(t)
			argv := append(e2eclient.OpencodeCommand(dir), "run", "Say PONG.")
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.Dir, cmd.Env = t.TempDir(), guard.Env(env)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil || !strings.Contains(stdout.String(), "PONG") {
				t.Fatalf("opencode: %v\nstdout: %s\nstderr: %s", err, e2eclient.Tail(stdout.String()), e2eclient.Tail(stderr.String()))
			}
			seen := guard.Seen()
			t.Logf("the guard saw %q", seen)
			if tc.offline && len(seen) > 0 {
				t.Errorf("opencode tried to reach beyond loopback: %q", seen)
			}
			if !tc.offline && len(seen) == 0 {
				t.Error("without the offline switches the guard saw nothing: it would not catch a fetch either")
			}
			if bill := fake.Bill(); bill.Rejections != 0 {
				t.Errorf("the fake rejected %d requests", bill.Rejections)
			}
		})
	}
}

// OpencodeCommand runs the binary the postinstall script put in place of
// the wrapper's placeholder; without it (npm run with --ignore-scripts),
// the platform package's, the AVX2 build first.
func TestOpencodeCommand(t *testing.T) {
	arch := map[string]string{"amd64": "x64"}[runtime.GOARCH]
	if arch == "" {
		arch = runtime.GOARCH
	}
	base := "opencode-" + runtime.GOOS + "-" + arch
	placeholder := "echo \"Error: opencode-ai's postinstall script was not run.\" >&2\nexit 1\n"
	for _, tc := range []struct {
		name    string
		wrapper string // the wrapper's bin/opencode.exe
		pkgs    []string
		want    string
	}{
		{"postinstall ran", "\x7fELF...", []string{base, base + "-baseline"}, "opencode-ai/bin/opencode.exe"},
		{"no install scripts", placeholder, []string{base, base + "-baseline"}, base + "/bin/opencode"},
		{"only the baseline build", placeholder, []string{base + "-baseline"}, base + "-baseline/bin/opencode"},
	} {
		dir := t.TempDir()
		write := func(rel, content string) {
			p := filepath.Join(dir, "node_modules", rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		write("opencode-ai/bin/opencode.exe", tc.wrapper)
		for _, pkg := range tc.pkgs {
			write(pkg+"/bin/opencode", "\x7fELF...")
		}
		want := filepath.Join(dir, "node_modules", tc.want)
		if got := e2eclient.OpencodeCommand(dir); len(got) != 1 || got[0] != want {
			t.Errorf("%s: OpencodeCommand = %q, want [%q]", tc.name, got, want)
		}
	}
}
