// Package memtest measures what a structure keeps on the heap, for tests
// that hold a memory estimate to the truth. It is for tests only.
package memtest

import (
	"runtime"
	"testing"
)

// HeldBy returns the heap bytes drop lets go: the live heap after a
// collection, before drop, less the live heap after drop and another
// collection. The caller keeps alive (runtime.KeepAlive) what holds the
// rest, so that only what drop lets go is counted. What sync.Pools hold
// is let go before (a pool keeps its objects through one collection):
// it would be counted as drop's otherwise.
func HeldBy(drop func()) int64 {
	var with, without runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&with)
	drop()
	runtime.GC()
	runtime.ReadMemStats(&without)
	return int64(with.HeapAlloc) - int64(without.HeapAlloc)
}

// CheckEstimate fails t unless est, what name estimates it holds, is
// within a third of held, what it holds (HeldBy), either way.
func CheckEstimate(t testing.TB, name string, est, held int64) {
	t.Helper()
	t.Logf("%s: estimated %d bytes, held %d (%.2f)", name, est, held, float64(est)/float64(held))
	if held <= 0 || float64(est) < 0.75*float64(held) || float64(est) > 1.33*float64(held) {
		t.Errorf("%s estimates it holds %d bytes; it holds %d", name, est, held)
	}
}

// AllocatedBy returns the heap bytes f allocates (what it keeps and what
// it lets go).
func AllocatedBy(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}
