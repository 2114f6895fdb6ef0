package pricing

import (
	"math/rand/v2"
	"testing"
	"time"
)

// anthropicUsageWithSums is anthropicUsage as it was written first, over a
// list of the running sums: what the allocation-free one must agree with.
func anthropicUsageWithSums(c *Cache, now time.Time, blocks []Block) (u Usage, hit int) {
	hit = -1
	total, last, last1h := 0, -1, -1
	cum := make([]int, len(blocks))
	for i, b := range blocks {
		total += b.Tokens
		cum[i] = total
	}
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
	for i, b := range blocks {
		if b.Breakpoint && i > hit && cum[i] >= c.prices.MinCacheable {
			last = i
			if c.ttl(b) > c.prices.TTL {
				last1h = i
			}
		}
	}
	read := 0
	if hit >= 0 {
		read = cum[hit]
	}
	u.CacheRead = read
	if last1h >= 0 {
		u.CacheWrite1h = cum[last1h] - read
	}
	if last >= 0 {
		u.CacheWrite5m = cum[last] - read - u.CacheWrite1h
	}
	u.Uncached = total - read - u.CacheWrite5m - u.CacheWrite1h
	return u, hit
}

// TestAnthropicUsageIsTheSumsRule holds anthropicUsage to the rule over
// running sums on random requests (breakpoints, 1-hour ones, live
// prefixes, the minimum cacheable), and to no allocation: a bill of
// 100,000 messages made two lists of 0.8 MB (issue 24, item 7).
func TestAnthropicUsageIsTheSumsRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	hits, writes1h := 0, 0
	for trial := range 2000 {
		c := NewCache(Prices{MinCacheable: rng.IntN(3000)})
		blocks := make([]Block, rng.IntN(60))
		var k Key
		for i := range blocks {
			k = k.Extend([]byte{byte(rng.IntN(4))})
			blocks[i] = Block{Prefix: k, Tokens: rng.IntN(500), Breakpoint: rng.IntN(4) == 0}
			if rng.IntN(5) == 0 {
				blocks[i].TTL = time.Hour
			}
			if rng.IntN(6) == 0 {
				c.touch(now.Add(-time.Duration(rng.IntN(10))*time.Minute), k, blocks[i].TTL)
			}
		}
		gotU, gotHit := c.anthropicUsage(now, blocks)
		wantU, wantHit := anthropicUsageWithSums(c, now, blocks)
		if gotU != wantU || gotHit != wantHit {
			t.Fatalf("trial %d: usage %+v hit %d, want %+v hit %d", trial, gotU, gotHit, wantU, wantHit)
		}
		if gotHit >= 0 {
			hits++
		}
		if gotU.CacheWrite1h > 0 {
			writes1h++
		}
	}
	if hits < 200 || writes1h < 200 {
		t.Fatalf("the trials read %d prefixes and wrote %d 1-hour ones: too few to test the rule", hits, writes1h)
	}
	blocks := make([]Block, 1000)
	for i := range blocks {
		blocks[i] = Block{Tokens: 10, Breakpoint: i%100 == 99}
	}
	c := NewCache(Prices{})
	if n := testing.AllocsPerRun(10, func() { c.anthropicUsage(now, blocks) }); n > 0 {
		t.Errorf("anthropicUsage allocates %.0f times", n)
	}
}
