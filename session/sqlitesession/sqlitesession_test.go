package sqlitesession_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/sessiontest"
	"github.com/agentctx/agentctx/session/sqlitesession"
)

func TestConformance(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T) session.Store {
		s, err := sqlitesession.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
