package pricing_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/pricing"
)

// blk is a block of a test request: its content names it (equal names
// before it and equal name, equal prefix), its tokens, and its breakpoint.
type blk struct {
	name   string
	tokens int
	bp     bool
	ttl    time.Duration
}

func bp(name string, tokens int) blk { return blk{name: name, tokens: tokens, bp: true} }
func b(name string, tokens int) blk  { return blk{name: name, tokens: tokens} }
func bp1h(name string, tokens int) blk {
	return blk{name: name, tokens: tokens, bp: true, ttl: time.Hour}
}

// many returns n blocks of 10 tokens named prefix0, prefix1, ...
func many(prefix string, n int) []blk {
	out := make([]blk, n)
	for i := range out {
		out[i] = b(fmt.Sprint(prefix, i), 10)
	}
	return out
}

func cat(parts ...[]blk) []blk {
	var out []blk
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func blocks(spec []blk) []pricing.Block {
	var k pricing.Key
	out := make([]pricing.Block, len(spec))
	for i, s := range spec {
		k = k.Extend([]byte(s.name))
		out[i] = pricing.Block{Prefix: k, Tokens: s.tokens, Breakpoint: s.bp, TTL: s.ttl}
	}
	return out
}

type step struct {
	at   time.Duration // since the start
	req  []blk
	want pricing.Usage
}

// Sonnet: a minimum of 1,024 tokens, 5 minutes. GPT-5: 1,024 tokens, 128
// increments, 10 minutes. Every usage below is computed by hand from the
// token counts; Output is always 7.
func TestCacheUsage(t *testing.T) {
	sonnet, _ := pricing.Default().Lookup("claude-sonnet-4-5")
	gpt, _ := pricing.Default().Lookup("gpt-5")
	sys := bp("system", 2000)
	for _, tc := range []struct {
		name   string
		prices pricing.Prices
		steps  []step
	}{
		{"no breakpoint: no read, no write", sonnet, []step{
			{0, []blk{b("system", 2000), b("u1", 500)}, pricing.Usage{Uncached: 2500}},
			{time.Second, []blk{b("system", 2000), b("u1", 500)}, pricing.Usage{Uncached: 2500}},
		}},
		{"hit at a later breakpoint", sonnet, []step{
			// writes through u1
			{0, []blk{sys, bp("u1", 500)}, pricing.Usage{CacheWrite5m: 2500}},
			// the system breakpoint hits 2,000, the last one (lookback
			// from a2 to u1) 2,500: the longest is read
			{time.Minute, []blk{sys, b("u1", 500), b("a1", 300), bp("u2", 200)}, pricing.Usage{CacheRead: 2500, CacheWrite5m: 500}},
			// tokens after the last breakpoint are input
			{2 * time.Minute, []blk{sys, b("u1", 500), b("a1", 300), bp("u2", 200), b("tail", 40)}, pricing.Usage{CacheRead: 3000, Uncached: 40}},
		}},
		{"lookback of 20 positions finds an entry 19 blocks back", sonnet, []step{
			{0, []blk{b("system", 2000), bp("m", 100)}, pricing.Usage{CacheWrite5m: 2100}},
			// blocks 0 (system), 1 (m), 2..20: the breakpoint is block 20,
			// the 20 positions checked are 20..1
			{time.Minute, cat([]blk{b("system", 2000), b("m", 100)}, many("x", 18), []blk{bp("x18", 10)}), pricing.Usage{CacheRead: 2100, CacheWrite5m: 190}},
		}},
		{"lookback beyond 20 blocks misses", sonnet, []step{
			{0, []blk{b("system", 2000), bp("m", 100)}, pricing.Usage{CacheWrite5m: 2100}},
			// the breakpoint is block 21: positions 21..2 are checked, m is
			// block 1: everything is written again
			{time.Minute, cat([]blk{b("system", 2000), b("m", 100)}, many("x", 19), []blk{bp("x19", 10)}), pricing.Usage{CacheWrite5m: 2300}},
		}},
		{"a breakpoint kept on the system prompt still hits past the lookback", sonnet, []step{
			{0, []blk{sys, bp("m", 100)}, pricing.Usage{CacheWrite5m: 2100}},
			{time.Minute, cat([]blk{sys, b("m", 100)}, many("x", 19), []blk{bp("x19", 10)}), pricing.Usage{CacheRead: 2000, CacheWrite5m: 300}},
		}},
		{"ttl expiry and refresh", sonnet, []step{
			{0, []blk{sys}, pricing.Usage{CacheWrite5m: 2000}},
			{4 * time.Minute, []blk{sys}, pricing.Usage{CacheRead: 2000}}, // refreshed to 9m
			{8 * time.Minute, []blk{sys}, pricing.Usage{CacheRead: 2000}}, // alive only by the refresh; now to 13m
			{13 * time.Minute, []blk{sys}, pricing.Usage{CacheWrite5m: 2000}},
		}},
		{"1h ttl", sonnet, []step{
			// 1-hour writes up to the 1-hour breakpoint, 5-minute after
			{0, []blk{bp1h("system", 2000), bp("u1", 500)}, pricing.Usage{CacheWrite1h: 2000, CacheWrite5m: 500}},
			// 30 minutes later u1 expired, the system did not
			{30 * time.Minute, []blk{bp1h("system", 2000), b("u1", 500), bp("u2", 300)}, pricing.Usage{CacheRead: 2000, CacheWrite5m: 800}},
			// a hit refreshes a 1-hour entry for an hour: 30m+1h-1s
			{89 * time.Minute, []blk{b("system", 2000), bp("u9", 10)}, pricing.Usage{CacheRead: 2000, CacheWrite5m: 10}},
		}},
		{"below the minimum not cached", sonnet, []step{
			{0, []blk{bp("system", 500), bp("u1", 300)}, pricing.Usage{Uncached: 800}},
			{time.Second, []blk{bp("system", 500), bp("u1", 300)}, pricing.Usage{Uncached: 800}},
			// the first breakpoint is short, the second long enough: one
			// write, of the whole prefix through it
			{2 * time.Second, []blk{bp("system", 500), b("u1", 300), bp("u2", 300)}, pricing.Usage{CacheWrite5m: 1100}},
			{3 * time.Second, []blk{bp("system", 500), b("u1", 300), b("u2", 300), bp("u3", 5), b("x", 1)}, pricing.Usage{CacheRead: 1100, CacheWrite5m: 5, Uncached: 1}},
		}},
		{"an edit in the middle rewrites from the last entry before it", sonnet, []step{
			{0, []blk{sys, b("m1", 400), b("m2", 400), bp("m3", 400)}, pricing.Usage{CacheWrite5m: 3200}},
			// m2 edited: m2, m3 and what follows have new prefixes; the
			// system entry is the longest one still valid
			{time.Minute, []blk{sys, b("m1", 400), b("m2 edited", 400), b("m3", 400), bp("m4", 100)}, pricing.Usage{CacheRead: 2000, CacheWrite5m: 1300}},
			// the unedited conversation is still cached
			{2 * time.Minute, []blk{sys, b("m1", 400), b("m2", 400), b("m3", 400), bp("m5", 100)}, pricing.Usage{CacheRead: 3200, CacheWrite5m: 100}},
		}},
		{"openai 128-token increments", gpt, []step{
			{0, []blk{b("system", 1500), b("u1", 100)}, pricing.Usage{Uncached: 1600}},
			// 1,500 shared: 1,024 + 3×128 = 1,408 read
			{time.Minute, []blk{b("system", 1500), b("u2", 200)}, pricing.Usage{CacheRead: 1408, Uncached: 292}},
			// the whole first request shared: 1,600 → 1,536
			{2 * time.Minute, []blk{b("system", 1500), b("u1", 100), b("u3", 50)}, pricing.Usage{CacheRead: 1536, Uncached: 114}},
			// breakpoints mean nothing; a prefix under 1,024 tokens is not read
			{3 * time.Minute, []blk{bp("other", 1000), b("u1", 100)}, pricing.Usage{Uncached: 1100}},
			{4 * time.Minute, []blk{b("other", 1000), b("u4", 100)}, pricing.Usage{Uncached: 1100}},
			// 10 minutes after its last use the system prefix is gone
			{12 * time.Minute, []blk{b("system", 1500), b("u1", 100)}, pricing.Usage{Uncached: 1600}},
		}},
		{"openai extended retention: blocks with a 24h ttl live a day", gpt, []step{
			{0, []blk{{name: "system", tokens: 1500, ttl: 24 * time.Hour}, b("u1", 100)}, pricing.Usage{Uncached: 1600}},
			// 6 hours later the 24h prefix is read, the 10-minute one is gone
			{6 * time.Hour, []blk{b("system", 1500), b("u1", 100)}, pricing.Usage{CacheRead: 1408, Uncached: 192}},
			// a hit refreshes it for its own day (an entry keeps the
			// longest ttl it was given): live 23 hours on, gone 25 hours
			// after that
			{29 * time.Hour, []blk{b("system", 1500), b("u2", 100)}, pricing.Usage{CacheRead: 1408, Uncached: 192}},
			{54 * time.Hour, []blk{b("system", 1500), b("u2", 100)}, pricing.Usage{Uncached: 1600}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := pricing.NewCache(tc.prices)
			t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
			for i, s := range tc.steps {
				want := s.want
				want.Output = 7
				bl := blocks(s.req)
				if got := c.Peek(t0.Add(s.at), bl, 7); got != want {
					t.Errorf("request %d: Peek %+v, want %+v", i+1, got, want)
				}
				if got := c.Bill(t0.Add(s.at), bl, 7); got != want {
					t.Errorf("request %d: usage %+v, want %+v", i+1, got, want)
				}
			}
		})
	}
}

// The bill of the "1h ttl" case's first request on Sonnet, by hand:
// 2,000 × $6 + 500 × $3.75 + 7 × $15 per million = $0.01398.
func TestCacheBill(t *testing.T) {
	sonnet, _ := pricing.Default().Lookup("claude-sonnet-4-5")
	c := pricing.NewCache(sonnet)
	u := c.Bill(time.Unix(0, 0), blocks([]blk{bp1h("system", 2000), bp("u1", 500)}), 7)
	if got := c.Prices().Cost(u); math.Abs(got-0.01398) > 1e-12 {
		t.Fatalf("cost %v, want 0.01398", got)
	}
}

func TestCacheConcurrent(t *testing.T) {
	sonnet, _ := pricing.Default().Lookup("claude-sonnet-4-5")
	c := pricing.NewCache(sonnet)
	now := time.Unix(1000, 0)
	c.Bill(now, blocks([]blk{bp("system", 2000)}), 0)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				u := c.Bill(now, blocks([]blk{b("system", 2000), bp(fmt.Sprint(i, "/", j), 10)}), 0)
				if u.CacheRead != 2000 || u.CacheWrite5m != 10 {
					t.Errorf("usage %+v", u)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := c.Len(now); n != 1+8*50 {
		t.Errorf("%d entries, want %d", n, 1+8*50)
	}
	if n := c.Len(now.Add(5 * time.Minute)); n != 0 {
		t.Errorf("%d entries alive after 5 minutes", n)
	}
}

// BenchmarkCacheBill bills a 400-block request (a long conversation at
// message granularity) whose prefix the previous request cached.
func BenchmarkCacheBill(b *testing.B) {
	sonnet, _ := pricing.Default().Lookup("claude-sonnet-4-5")
	c := pricing.NewCache(sonnet)
	spec := many("m", 400)
	spec[398].bp = true
	c.Bill(time.Unix(0, 0), blocks(spec[:399]), 0)
	spec[399].bp = true
	bl := blocks(spec)
	b.ResetTimer()
	for i := range b.N {
		c.Bill(time.Unix(int64(i%60), 0), bl, 0)
	}
}

// Extend is SHA-256 of the key followed by the block, truncated, for
// blocks on either side of the size hashed on the stack.
func TestExtendIsSHA256(t *testing.T) {
	k := pricing.Key{}.Extend([]byte("start"))
	for _, n := range []int{0, 1, 8, 111, 112, 113, 4096} {
		b := bytes.Repeat([]byte{'x'}, n)
		want := sha256.Sum256(append(append([]byte{}, k[:]...), b...))
		if got := k.Extend(b); !bytes.Equal(got[:], want[:16]) {
			t.Errorf("%d bytes: Extend = %x, want %x", n, got, want[:16])
		}
	}
}

// A message's key (an 8-byte hash extending the prefix) is computed
// without allocating: the bill extends one per message of every request.
func TestExtendSmallDoesNotAllocate(t *testing.T) {
	var k pricing.Key
	b := make([]byte, 8)
	if n := testing.AllocsPerRun(100, func() { k = k.Extend(b) }); n != 0 {
		t.Errorf("Extend of 8 bytes allocates %v times", n)
	}
}
