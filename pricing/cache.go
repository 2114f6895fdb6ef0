package pricing

import (
	"crypto/sha256"
	"sync"
	"time"
)

// Lookback is how many block boundaries Anthropic checks for a cache hit
// per breakpoint, counting the breakpoint itself as the first: an entry
// written Lookback or more blocks before a breakpoint is not found from it
// (the documented "about 20 blocks" lookback).
const Lookback = 20

// CacheIncrement is the granularity of OpenAI's prompt cache: past
// Prices.MinCacheable (1,024 tokens), a prefix is cached in steps of 128
// tokens.
const CacheIncrement = 128

// Key identifies a prefix of a request: everything from its start through
// one block. Equal prefixes must have equal keys and different ones
// different keys; compute them incrementally with Key.Extend.
type Key [16]byte

// Extend returns the key of the prefix made of k's prefix followed by a
// block whose content is b (SHA-256 of both, truncated). The zero Key is
// the empty prefix.
//
// The content should hold what the provider reads and nothing it ignores:
// for Anthropic, the block without its cache_control (moving a breakpoint
// does not change the prefix), with the role of its message where the
// block starts one.
func (k Key) Extend(b []byte) Key {
	var sum [sha256.Size]byte
	if len(b) <= extendInline {
		// The common case (a message's 8-byte hash): hashed from the
		// stack, without a digest on the heap.
		var buf [len(Key{}) + extendInline]byte
		copy(buf[:], k[:])
		n := copy(buf[len(k):], b)
		sum = sha256.Sum256(buf[:len(k)+n])
	} else {
		h := sha256.New()
		h.Write(k[:])
		h.Write(b)
		h.Sum(sum[:0])
	}
	return Key(sum[:len(Key{})])
}

// extendInline is the longest block content Extend hashes without a
// heap-allocated digest.
const extendInline = 112

// Block is one block of a request as the prompt cache sees it, in the
// order the provider reads them (Anthropic: tools, system, then the
// content blocks of each message).
type Block struct {
	// Prefix is the key of the request's prefix through this block.
	Prefix Key
	// Tokens is the block's input tokens.
	Tokens int
	// Breakpoint marks a block that carries a cache_control breakpoint
	// (Anthropic; OpenAI ignores breakpoints). For Anthropic's automatic
	// caching (a top-level cache_control) the caller marks the request's
	// last cacheable block.
	Breakpoint bool
	// TTL is the breakpoint's lifetime: 0 means the provider's default
	// (Prices.TTL); Anthropic's cache_control.ttl "1h" is time.Hour. For
	// OpenAI it is the lifetime of the prefix through the block (24 hours
	// with extended retention).
	TTL time.Duration
}

// A Cache simulates a provider's prompt cache for the requests of one
// cache scope (an organisation or API key, and a model): which prefixes
// the earlier requests left cached, and so the usage each request is
// billed. It follows the providers' documentation:
//
// Anthropic caches, on a request, the prefix through each breakpoint (at
// most 4 per request; the caller passes what it has) that is at least
// Prices.MinCacheable tokens long. A request reads the longest cached
// prefix found at its breakpoints or at the Lookback-1 block boundaries
// before each; it is billed that prefix as cache_read_input_tokens, the
// tokens from there to its last cacheable breakpoint as
// cache_creation_input_tokens (1-hour writes up to its last 1-hour
// breakpoint, 5-minute writes after), and the rest as input_tokens.
// A request without breakpoints neither reads nor writes. An entry lives
// its TTL (the breakpoint's, else Prices.TTL) from its last write or read:
// a hit refreshes it.
//
// OpenAI (Prices.Provider OpenAI), and Google's implicit caching (Google),
// cache every request's prefixes without breakpoints: a request reads the
// longest prefix, ended at one of its block boundaries, that an earlier
// live request shared, if it is at least
// Prices.MinCacheable tokens, rounded down to a multiple of CacheIncrement
// past it. Nothing is billed as a write; every request refreshes its
// prefixes for their blocks' TTL (a request with extended retention,
// "prompt_cache_retention": "24h"), else Prices.TTL.
//
// Prefixes match at block granularity: two requests that share half of a
// block share only the blocks before it.
//
// A Cache is safe for concurrent use. Requests are billed in the order of
// the Bill calls; now need not increase between calls, though a simulation
// whose clock goes back sees entries live longer.
type Cache struct {
	prices Prices

	mu        sync.Mutex
	entries   map[Key]entry
	lastSweep time.Time
}

type entry struct {
	expires time.Time
	ttl     time.Duration
}

// NewCache returns an empty cache that follows p: p.Provider chooses the
// rules, p.MinCacheable and p.TTL parameterize them. A zero TTL means 5
// minutes.
func NewCache(p Prices) *Cache {
	if p.TTL <= 0 {
		p.TTL = 5 * time.Minute
	}
	return &Cache{prices: p, entries: map[Key]entry{}}
}

// Prices returns the prices the cache was made with.
func (c *Cache) Prices() Prices { return c.prices }

// Len returns the number of prefixes cached and live at now.
func (c *Cache) Len(now time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, e := range c.entries {
		if now.Before(e.expires) {
			n++
		}
	}
	return n
}

// Bill returns the usage of a request made at now of the given blocks and
// output tokens, and records what it writes to and reads from the cache.
func (c *Cache) Bill(now time.Time, blocks []Block, output int) Usage {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweep(now)
	var u Usage
	if c.prices.Provider.implicitCache() {
		u = c.openai(now, blocks)
	} else {
		u = c.anthropic(now, blocks)
	}
	u.Output = output
	return u
}

// Peek returns the usage Bill would return for the blocks at now, without
// recording anything.
func (c *Cache) Peek(now time.Time, blocks []Block, output int) Usage {
	c.mu.Lock()
	defer c.mu.Unlock()
	var u Usage
	if c.prices.Provider.implicitCache() {
		u, _ = c.openaiUsage(now, blocks)
	} else {
		u, _ = c.anthropicUsage(now, blocks)
	}
	u.Output = output
	return u
}

func (c *Cache) live(now time.Time, k Key) (entry, bool) {
	e, ok := c.entries[k]
	return e, ok && now.Before(e.expires)
}

// touch makes k live for ttl from now, or longer if it already was.
func (c *Cache) touch(now time.Time, k Key, ttl time.Duration) {
	e := c.entries[k]
	if !now.Before(e.expires) {
		e = entry{} // expired: the entry is new
	}
	e.ttl = max(e.ttl, ttl)
	if exp := now.Add(e.ttl); exp.After(e.expires) {
		e.expires = exp
	}
	c.entries[k] = e
}

// sweep drops expired entries, at most once a minute of the clock.
func (c *Cache) sweep(now time.Time) {
	if now.Sub(c.lastSweep) < time.Minute && !now.Before(c.lastSweep) {
		return
	}
	c.lastSweep = now
	for k, e := range c.entries {
		if !now.Before(e.expires) {
			delete(c.entries, k)
		}
	}
}

func (c *Cache) ttl(b Block) time.Duration {
	if b.TTL > 0 {
		return b.TTL
	}
	return c.prices.TTL
}

// anthropicUsage computes a request's usage; hit is the index of the block
// the read prefix ends at, or -1.
func (c *Cache) anthropicUsage(now time.Time, blocks []Block) (u Usage, hit int) {
	hit = -1
	for i, b := range blocks {
		if !b.Breakpoint {
			continue
		}
		for j := i; j >= 0 && j > i-Lookback && j > hit; j-- {
			if _, ok := c.live(now, blocks[j].Prefix); ok {
				hit = j
				break
			}
		}
	}
	// The tokens through the hit and through the last (1-hour) breakpoint
	// written, summed as they come: no list of the sums (a request of
	// 100,000 messages made two of 0.8 MB for each bill).
	total, read, write, write1h := 0, 0, -1, -1
	for i, b := range blocks {
		total += b.Tokens
		if i == hit {
			read = total
		}
		if b.Breakpoint && i > hit && total >= c.prices.MinCacheable {
			write = total
			if c.ttl(b) > c.prices.TTL {
				write1h = total
			}
		}
	}
	u.CacheRead = read
	if write1h >= 0 {
		u.CacheWrite1h = write1h - read
	}
	if write >= 0 {
		u.CacheWrite5m = write - read - u.CacheWrite1h
	}
	u.Uncached = total - read - u.CacheWrite5m - u.CacheWrite1h
	return u, hit
}

func (c *Cache) anthropic(now time.Time, blocks []Block) Usage {
	u, hit := c.anthropicUsage(now, blocks)
	if hit >= 0 {
		e, _ := c.live(now, blocks[hit].Prefix)
		c.touch(now, blocks[hit].Prefix, e.ttl)
	}
	cum := 0
	for _, b := range blocks {
		cum += b.Tokens
		if b.Breakpoint && cum >= c.prices.MinCacheable {
			c.touch(now, b.Prefix, c.ttl(b))
		}
	}
	return u
}

// openaiUsage computes a request's usage; n is the number of tokens of
// the longest live prefix.
func (c *Cache) openaiUsage(now time.Time, blocks []Block) (u Usage, n int) {
	total := 0
	for _, b := range blocks {
		total += b.Tokens
	}
	cum := total
	for i := len(blocks) - 1; i >= 0; i-- {
		if cum < c.prices.MinCacheable {
			break
		}
		if _, ok := c.live(now, blocks[i].Prefix); ok {
			n = cum
			break
		}
		cum -= blocks[i].Tokens
	}
	if n >= c.prices.MinCacheable && n > 0 {
		u.CacheRead = n - (n-c.prices.MinCacheable)%CacheIncrement
	}
	u.Uncached = total - u.CacheRead
	return u, n
}

func (c *Cache) openai(now time.Time, blocks []Block) Usage {
	u, _ := c.openaiUsage(now, blocks)
	cum := 0
	for _, b := range blocks {
		cum += b.Tokens
		if cum >= c.prices.MinCacheable && cum > 0 {
			c.touch(now, b.Prefix, c.ttl(b))
		}
	}
	return u
}
