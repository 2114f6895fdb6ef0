package loadtest

import (
	"os"
	"testing"

	"github.com/agentctx/agentctx/internal/testkit/pgtest"
)

// sharedPG is the package's throwaway PostgreSQL, started by the first
// pgServer and stopped by TestMain: the tests share the server, each in
// databases of its own (a lock one test takes holds nothing of another's).
var sharedPG pgtest.Shared

// TestMain stops the PostgreSQL server the tests shared, if one started.
func TestMain(m *testing.M) {
	code := m.Run()
	sharedPG.Close()
	os.Exit(code)
}

// pgServer returns the package's PostgreSQL server (started on first use;
// the test makes its own databases in it), or skips the test when
// PostgreSQL is not installed (fails it in CI).
func pgServer(t *testing.T) *pgtest.Server {
	t.Helper()
	return sharedPG.Get(t)
}
