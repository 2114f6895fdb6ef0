//go:build race

package pgstore_test

// raceEnabled: the race detector empties sync.Pools at random, so the
// driver allocates more and allocation counts mean nothing.
const raceEnabled = true
