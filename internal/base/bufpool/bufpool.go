// Package bufpool keeps byte buffers for work that needs one for a moment
// on every message or result (writing a content's text to hash or compare
// it), so that a request of thousands does not make one each.
package bufpool

import "sync"

// MaxPooled bounds the capacity of a buffer put back: one that grew for a
// huge content is left to the collector.
const MaxPooled = 256 << 10

var pool = sync.Pool{New: func() any { return new([]byte) }}

// Get returns a buffer of length 0; give it back with Put.
func Get() *[]byte {
	p := pool.Get().(*[]byte)
	*p = (*p)[:0]
	return p
}

// Put gives back a buffer Get returned (with what was appended to it): it
// must not be used afterwards.
func Put(p *[]byte) {
	if cap(*p) <= MaxPooled {
		pool.Put(p)
	}
}
