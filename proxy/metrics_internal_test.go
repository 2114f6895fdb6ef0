package proxy

import (
	"testing"
	"time"
)

// BenchmarkMetricsRecord is what the metrics add to a request (the budget
// is 50 µs; see BENCHMARKS.md).
func BenchmarkMetricsRecord(b *testing.B) {
	s, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	x := &exchange{api: APIAnthropic, status: 200, edited: true, overhead: 2 * time.Millisecond,
		prepared: &Prepared{TokensBefore: 50_000, TokensAfter: 20_000, PrefixChanged: true, Pruned: 3},
		bill:     exchangeBill{billed: true, cost: 0.01, costWithout: 0.02}}
	x.bill.usage.Input, x.bill.usage.CacheRead, x.bill.usage.Output = 100, 19_000, 300
	b.ReportAllocs()
	for b.Loop() {
		s.metrics.record(x)
	}
}
