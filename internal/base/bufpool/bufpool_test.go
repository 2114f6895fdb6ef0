package bufpool

import "testing"

// A buffer comes back empty; one grown past MaxPooled is not kept (the
// pool returns what was last put, in one goroutine without the race
// detector, so a kept one would come back here).
func TestGetPut(t *testing.T) {
	p := Get()
	*p = append(*p, "some text to hash"...)
	Put(p)
	if q := Get(); len(*q) != 0 {
		t.Fatalf("a buffer came back holding %q", *q)
	} else {
		Put(q)
	}
	big := Get()
	*big = append(*big, make([]byte, MaxPooled+1)...)
	Put(big)
	if q := Get(); cap(*q) > MaxPooled {
		t.Errorf("a buffer of %d bytes was kept", cap(*q))
	}
}
