package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/internal/testkit/pgtest"
)

// sharedPG is the package's throwaway PostgreSQL, started by the first
// pgURL and stopped by TestMain: one server for the package, each test a
// fresh database in it.
var sharedPG pgtest.Shared

// TestMain stops the PostgreSQL server the tests shared, if one started.
func TestMain(m *testing.M) {
	code := m.Run()
	sharedPG.Close()
	os.Exit(code)
}

// pgURL returns the URL of an empty database in the package's throwaway
// PostgreSQL (started on first use); it skips the test when PostgreSQL is
// not installed (and fails it in CI).
func pgURL(t *testing.T) string {
	t.Helper()
	u, err := sharedPG.Get(t).NewDatabase(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestWSStoreNotPostgres(t *testing.T) {
	for _, args := range [][]string{{"prepare", "--store", "mysql://x", "-"}, {"replay", "--store", "mysql://x", "-"}, {"proxy", "--store", "mysql://x"}, {"mcp", "--store", "mysql://x"}} {
		out, errOut, code := run(t, `[{"role":"user","content":"hi"},{"role":"assistant","content":"ok"}]`, args...)
		if code != 2 || out != "" || !strings.Contains(errOut, "--store must be a postgres:// URL") {
			t.Errorf("%v: exit %d stdout %q stderr %q", args, code, out, errOut)
		}
	}
	out, errOut, code := run(t, "", "ws", "ls", "--store", "mysql://x")
	if code != 2 || out != "" || errOut != "agentctx: --store must be a postgres:// URL, got \"mysql://x\"\n" {
		t.Errorf("exit %d stdout %q stderr %q", code, out, errOut)
	}
}
