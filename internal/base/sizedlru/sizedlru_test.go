package sizedlru

import (
	"fmt"
	"sync"
	"testing"
)

// TestBound puts values past the bound: the least recently used go first
// (a Get counts as a use), a replaced value's size is given back, a value
// larger than the bound is not kept and takes the old one under its key
// with it, and the sum of the sizes kept never passes the bound.
func TestBound(t *testing.T) {
	c := New[string, int](10)
	c.Put("a", 1, 4)
	c.Put("b", 2, 4)
	if v, ok := c.Get("a"); !ok || v != 1 {
		t.Fatalf("Get(a) = %d, %v", v, ok)
	}
	c.Put("c", 3, 4) // b is the least recently used
	if _, ok := c.Get("b"); ok {
		t.Error("b was kept past the bound")
	}
	if c.Len() != 2 || c.Bytes() != 8 {
		t.Errorf("len %d, bytes %d; want 2, 8", c.Len(), c.Bytes())
	}
	c.Put("a", 10, 2) // replaced: its old size given back
	if v, _ := c.Get("a"); v != 10 || c.Bytes() != 6 {
		t.Errorf("a = %d, bytes %d; want 10, 6", v, c.Bytes())
	}
	c.Put("c", 30, 11) // larger than the bound
	if _, ok := c.Get("c"); ok || c.Len() != 1 || c.Bytes() != 2 {
		t.Errorf("an oversize value: kept %v, len %d, bytes %d; want not kept, 1, 2", ok, c.Len(), c.Bytes())
	}
	c.Put("d", 4, 10) // everything else goes
	if _, ok := c.Get("a"); ok || c.Len() != 1 || c.Bytes() != 10 {
		t.Errorf("len %d, bytes %d; want only d, 10", c.Len(), c.Bytes())
	}
	var none *Cache[string, int]
	none.Put("x", 1, 1)
	if _, ok := none.Get("x"); ok || none.Len() != 0 || none.Bytes() != 0 {
		t.Error("a nil Cache kept something")
	}
}

// TestConcurrent puts and gets from many goroutines (run with -race): the
// bound holds throughout.
func TestConcurrent(t *testing.T) {
	c := New[string, int](100)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				k := fmt.Sprint(g, "-", i%20)
				c.Put(k, i, int64(1+i%7))
				c.Get(k)
				if b := c.Bytes(); b > 100 {
					t.Errorf("bytes %d past the bound", b)
					return
				}
			}
		})
	}
	wg.Wait()
}
