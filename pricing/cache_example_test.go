package pricing_test

import (
	"fmt"
	"time"

	"github.com/agentctx/agentctx/pricing"
)

// Two requests of a conversation with a breakpoint on the last message, a
// minute apart: the second reads what the first wrote.
func ExampleCache() {
	prices, _ := pricing.Default().Lookup("claude-sonnet-4-5")
	cache := pricing.NewCache(prices)

	// The caller chains the prefix keys block by block.
	var k pricing.Key
	system := pricing.Block{Prefix: k.Extend([]byte("system prompt")), Tokens: 3000}
	user1 := pricing.Block{Prefix: system.Prefix.Extend([]byte("user: fix the bug")), Tokens: 50, Breakpoint: true}
	t0 := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	u := cache.Bill(t0, []pricing.Block{system, user1}, 400)
	fmt.Printf("%+v $%.4f\n", u, prices.Cost(u))

	user1.Breakpoint = false
	answer := pricing.Block{Prefix: user1.Prefix.Extend([]byte("assistant: done")), Tokens: 400}
	user2 := pricing.Block{Prefix: answer.Prefix.Extend([]byte("user: thanks")), Tokens: 20, Breakpoint: true}
	u = cache.Bill(t0.Add(time.Minute), []pricing.Block{system, user1, answer, user2}, 10)
	fmt.Printf("%+v $%.4f\n", u, prices.Cost(u))
	// Output:
	// {Uncached:0 CacheRead:0 CacheWrite5m:3050 CacheWrite1h:0 Output:400} $0.0174
	// {Uncached:0 CacheRead:3050 CacheWrite5m:420 CacheWrite1h:0 Output:10} $0.0026
}
