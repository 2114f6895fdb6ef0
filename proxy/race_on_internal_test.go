//go:build race

package proxy

// raceEnabled reports whether the race detector is on: sync.Pool then
// drops what it is given at random, so allocation checks of pooled work
// are left out.
const raceEnabled = true
