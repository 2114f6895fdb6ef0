package memsession_test

import (
	"testing"

	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/memsession"
	"github.com/agentctx/agentctx/session/sessiontest"
)

func TestConformance(t *testing.T) {
	sessiontest.RunDriver(t, func(t *testing.T) session.Driver { return memsession.NewDriver() })
}
