package sqlitesession_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/sessiontest"
	"github.com/agentctx/agentctx/session/sqlitesession"
)

func TestLedgerConformance(t *testing.T) {
	open := func(t *testing.T, path string) session.Store {
		s, err := sqlitesession.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	sessiontest.RunLedger(t, func(t *testing.T) (session.Store, session.Store) {
		path := filepath.Join(t.TempDir(), "s.db")
		return open(t, path), open(t, path)
	})
}
