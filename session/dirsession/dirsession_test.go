package dirsession_test

import (
	"testing"

	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/dirsession"
	"github.com/agentctx/agentctx/session/sessiontest"
)

func TestConformance(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T) session.Store {
		s, err := dirsession.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
