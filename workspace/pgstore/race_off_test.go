//go:build !race

package pgstore_test

const raceEnabled = false
