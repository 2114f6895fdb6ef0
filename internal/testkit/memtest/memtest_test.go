package memtest

import (
	"runtime"
	"testing"
)

// TestHeldBy measures a slice of 8 MB let go: HeldBy counts it (within a
// megabyte: the runtime allocates and frees a little meanwhile), and the
// estimate of its size passes CheckEstimate while half of it fails.
func TestHeldBy(t *testing.T) {
	b := make([]byte, 8<<20)
	for i := range b {
		b[i] = byte(i)
	}
	held := HeldBy(func() { b = nil })
	runtime.KeepAlive(b)
	if held < 7<<20 || held > 9<<20 {
		t.Fatalf("held %d bytes, want about 8 MB", held)
	}
	CheckEstimate(t, "the slice", 8<<20, held)
	ft := &fakeT{}
	CheckEstimate(ft, "half", 4<<20, held)
	if !ft.failed {
		t.Error("an estimate of half the truth passed")
	}
}

// fakeT records whether a check failed.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Logf(string, ...any)   {}
func (f *fakeT) Errorf(string, ...any) { f.failed = true }
