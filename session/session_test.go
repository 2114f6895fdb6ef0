package session_test

import (
	"testing"

	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/sessiontest"
)

func TestMemStore(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T) session.Store { return session.NewMemStore() })
}

func TestDirStore(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T) session.Store {
		s, err := session.OpenDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
