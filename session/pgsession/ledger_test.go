package pgsession_test

import (
	"testing"

	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/sessiontest"
)

// TestLedgerConformance: two replicas of a fleet over one database share
// one ledger.
func TestLedgerConformance(t *testing.T) {
	sessiontest.RunLedger(t, func(t *testing.T) (session.Store, session.Store) {
		u := newURL(t)
		return open(t, u), open(t, u)
	})
}
