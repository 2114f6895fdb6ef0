//go:build race

package compact_test

// raceEnabled reports whether the race detector is on; it changes
// allocation figures, so memory tests skip under it.
const raceEnabled = true
