// Package loadtest holds the fleet load test of issue 17: two `agentctx
// proxy` processes sharing one PostgreSQL (a throwaway server started by
// internal/testkit/pgtest) in front of one fake upstream, driven by many sessions
// whose requests land on either replica at random.
//
// TestFleetRacingWriters runs the replicas with racing writers on reused
// tool call ids (issue 24 item 3): sessions on both replicas store results
// of one tool call id at once, and every reference must resolve to its own
// session's output.
//
// TestFleetStoreHang hangs the database for one step of every session (a
// transaction holds an exclusive lock on the store's tables; issue 24 item
// 2): each request of that step reaches the upstream as sent within the
// store timeout and counts as a store timeout, and every later request is
// byte for byte what one replica alone sends without that step.
//
// The short form (TestFleetShort) runs with every `go test ./...`; the full
// form (TestFleetLoad: 50 sessions × 20 requests, then one replica killed
// with SIGKILL mid-run) needs the build tag:
//
//	go test -tags load -run TestFleetLoad -v ./internal/testkit/loadtest
//
// Knobs of the full form: AGENTCTX_LOAD_CONCURRENCY=N runs N sessions at a
// time (default all), AGENTCTX_LOAD_THINK=20ms pauses between an answer and
// the session's next request (default none), AGENTCTX_LOAD_NO_USAGE=1
// strips the usage from the upstream's answers. LOADTEST_DEBUG=DIR keeps the
// replicas' logs in DIR when a prepared request differs from the control.
// AGENTCTX_LOADTEST_BUGS=1 runs the reproducers of known open bugs, which
// otherwise skip.
//
// The package has no code of its own outside its tests.
package loadtest
