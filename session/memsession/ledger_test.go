package memsession_test

import (
	"testing"

	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/memsession"
	"github.com/agentctx/agentctx/session/sessiontest"
)

func TestLedgerConformance(t *testing.T) {
	sessiontest.RunLedger(t, func(t *testing.T) (session.Store, session.Store) {
		d := memsession.NewDriver()
		return session.New(d, session.Options{}), session.New(d, session.Options{})
	})
}
