package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/bench/internal/tracereplay"
	"github.com/agentctx/agentctx/internal/testkit/testbin"
)

// The meta.json a trace holds is what tracereplay reads: the arm's
// directories and the task's clock, which a replay works in and writes
// the model's commands with.
func TestTraceMetaReplays(t *testing.T) {
	dir := t.TempDir()
	tw, err := newTraceWriter(dir, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Close()
	want := traceMeta{ProxyDir: "/t/proxy", Workspace: "/t/home/.local/state/agentctx/projects/proxy-0123456789ab", ClientDir: "/t/work",
		ClockSpeed: 20, SlowBuild: regimeOf("warm").slowBuild.String()}
	if err := tw.writeMeta(want); err != nil {
		t.Fatal(err)
	}
	got, err := tracereplay.ReadMeta(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.ProxyDir != want.ProxyDir || got.Workspace != want.Workspace || got.ClientDir != want.ClientDir ||
		got.ClockSpeed != 20 || time.Duration(got.SlowBuild) != time.Minute {
		t.Errorf("tracereplay reads %+v, costsim wrote %+v", got, want)
	}
}

// proxyWorkspace, recorded in a trace's meta.json, is the workspace the
// arm's proxy keeps: a --workspace of the proxy flags, else the project's
// default, in the arm's home; none with a --store.
func TestProxyWorkspace(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	env := proxyEnv(home)
	def := proxyWorkspace(nil, dir, env)
	if !strings.HasPrefix(def, home+string(filepath.Separator)) {
		t.Errorf("the default workspace %s is not in the arm's home %s", def, home)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--threshold", "0.5"}, def},
		{[]string{"--workspace", "ws"}, filepath.Join(dir, "ws")},
		{[]string{"--workspace=/abs/ws", "--threshold", "0.5"}, "/abs/ws"},
		{[]string{"--workspace", "a", "--workspace", "b"}, filepath.Join(dir, "b")},
		{[]string{"--store", "sqlite:x.db"}, ""},
	} {
		if got := proxyWorkspace(c.args, dir, env); got != c.want {
			t.Errorf("proxyWorkspace(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

// The workspace a trace records is the one the arm's proxy serves its
// stored results from: a replay keeps its own there, so that the paths of
// its references, and the client's reads of them, are the recorded ones.
func TestProxyWorkspaceIsTheProxys(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentctx proxy")
	}
	bin := testbin.Agentctx(t)
	tmp := t.TempDir()
	dir, home := filepath.Join(tmp, "proxy"), filepath.Join(tmp, "home")
	for _, d := range []string{dir, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p, err := startProxy(t.Context(), config{Bin: bin, ClockSpeed: 1}, dir, home, "http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	want := proxyWorkspace(nil, dir, proxyEnv(home))
	stored := regexp.MustCompile(`stored results under (\S+);`)
	var got string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := stored.FindStringSubmatch(p.log.String()); m != nil {
			got = m[1]
			break
		}
	}
	p.stop(os.Stderr, false)
	if got != want {
		t.Errorf("the proxy stores its results under %q, the trace records %q\n%s", got, want, p.log.String())
	}
}
