// Package sizedlru is a map bounded by the estimated memory of its
// values: each value is put with its size, and putting one past the bound
// drops the least recently used values first. The proxy's and the SDK
// middleware's decode caches (internal/lib/decodecache) and the proxy's
// dashboard views are built on it.
package sizedlru

import (
	"container/list"
	"sync"
)

// Cache maps keys to values within max bytes, by the sizes the values
// were put with. A value larger than the bound is not kept. Get and Put
// make a key the most recently used. A nil *Cache keeps nothing. It is
// safe for concurrent use.
type Cache[K comparable, V any] struct {
	mu    sync.Mutex
	max   int64
	size  int64
	lru   list.List // of *entry[K, V], most recent first
	byKey map[K]*list.Element
}

type entry[K comparable, V any] struct {
	key  K
	v    V
	size int64
}

// New returns a Cache bounded to max bytes.
func New[K comparable, V any](max int64) *Cache[K, V] {
	return &Cache[K, V]{max: max, byKey: map[K]*list.Element{}}
}

// Get returns the value kept under key, and whether there is one.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	var zero V
	if c == nil {
		return zero, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.byKey[key]
	if el == nil {
		return zero, false
	}
	c.lru.MoveToFront(el)
	return el.Value.(*entry[K, V]).v, true
}

// Put keeps v of size bytes under key, replacing what was there, and drops
// the least recently used values beyond the bound. A value larger than the
// bound is not kept (what was under key goes all the same).
func (c *Cache[K, V]) Put(key K, v V, size int64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el := c.byKey[key]; el != nil {
		c.remove(el)
	}
	if size > c.max {
		return
	}
	for c.size+size > c.max {
		c.remove(c.lru.Back())
	}
	c.byKey[key] = c.lru.PushFront(&entry[K, V]{key: key, v: v, size: size})
	c.size += size
}

// remove drops the value of el. c.mu is held.
func (c *Cache[K, V]) remove(el *list.Element) {
	e := c.lru.Remove(el).(*entry[K, V])
	c.size -= e.size
	delete(c.byKey, e.key)
}

// Bytes reports the sizes of the values kept, summed.
func (c *Cache[K, V]) Bytes() int64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}

// Len reports the number of values kept.
func (c *Cache[K, V]) Len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byKey)
}
