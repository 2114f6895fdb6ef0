package cli

import (
	"testing"

	"github.com/agentctx/agentctx/internal/pgtest"
)

// pgURL starts a throwaway PostgreSQL for the test and returns the URL of
// an empty database in it; it skips the test when PostgreSQL is not
// installed (and fails it in CI).
func pgURL(t *testing.T) string {
	t.Helper()
	s, err := pgtest.Start(t.Context(), nil)
	if err != nil {
		pgtest.Skip(t, err)
	}
	t.Cleanup(func() { s.Close() })
	u, err := s.NewDatabase(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestWSStoreNotPostgres(t *testing.T) {
	out, errOut, code := run(t, "", "ws", "ls", "--store", "mysql://x")
	if code != 2 || out != "" || errOut != "agentctx: --store must be a postgres:// URL\n" {
		t.Errorf("exit %d stdout %q stderr %q", code, out, errOut)
	}
}
