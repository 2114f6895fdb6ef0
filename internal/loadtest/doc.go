// Package loadtest holds the fleet load test of issue 17: two `agentctx
// proxy` processes sharing one PostgreSQL (a throwaway server started by
// internal/pgtest) in front of one fake upstream, driven by many sessions
// whose requests land on either replica at random.
//
// The short form (TestFleetShort) runs with every `go test ./...`; the full
// form (TestFleetLoad: 50 sessions × 20 requests, then one replica killed
// with SIGKILL mid-run) needs the build tag:
//
//	go test -tags load -run TestFleetLoad -v ./internal/loadtest
//
// The package has no code of its own outside its tests.
package loadtest
