//go:build load

package loadtest

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// TestFleetLoad is the full load test: 50 sessions × 20 requests over two
// replicas, and replica b killed with SIGKILL once half the requests are
// answered; replica a serves every session from then on, and every
// request still matches the control byte for byte.
//
//	go test -tags load -run TestFleetLoad -v -timeout 30m ./internal/testkit/loadtest
//
// All sessions run at once; AGENTCTX_LOAD_CONCURRENCY=N runs N at a time,
// AGENTCTX_LOAD_THINK=D pauses D between an answer and the next request,
// AGENTCTX_LOAD_NO_USAGE=1 strips the usage from the upstream's answers.
func TestFleetLoad(t *testing.T) {
	const sessions, requests = 50, 20
	conc, _ := strconv.Atoi(os.Getenv("AGENTCTX_LOAD_CONCURRENCY"))
	think, _ := time.ParseDuration(os.Getenv("AGENTCTX_LOAD_THINK"))
	runFleet(t, config{Sessions: sessions, Requests: requests, Limit: 6000, KillAt: sessions * requests / 2, Concurrency: conc, ThinkTime: think, NoUsage: os.Getenv("AGENTCTX_LOAD_NO_USAGE") != "", Seed: 17})
}
