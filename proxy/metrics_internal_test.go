package proxy

import (
	"fmt"
	"net/http"
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
	x.bill.usage.Uncached, x.bill.usage.CacheRead, x.bill.usage.Output = 100, 19_000, 300
	b.ReportAllocs()
	for b.Loop() {
		s.metrics.record(x)
	}
}

// A session's timeline keeps its last maxTimeline requests.
func TestTimelineBounded(t *testing.T) {
	st := &sessionStats{}
	t0 := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	for i := range maxTimeline + 50 {
		st.record(&exchange{api: APIAnthropic, start: t0.Add(time.Duration(i) * time.Second), status: 200,
			prepared: &Prepared{TokensBefore: i}}, "")
	}
	got := st.snapshot("s").Timeline
	if len(got) != maxTimeline || got[0].TokensClient != 50 || got[len(got)-1].TokensClient != maxTimeline+49 {
		t.Fatalf("%d points, first %+v", len(got), got[0])
	}
	if cap(st.Timeline) > 2*maxTimeline {
		t.Errorf("the timeline's array grows: cap %d", cap(st.Timeline))
	}
}

// BenchmarkSessionRecord is what the statistics, timeline included, add
// to a request once its session's timeline is full.
func BenchmarkSessionRecord(b *testing.B) {
	st := &sessionStats{}
	x := &exchange{api: APIAnthropic, status: 200, client: "claude-cli/2.0.0", prepared: &Prepared{TokensBefore: 50_000, TokensAfter: 20_000},
		bill: exchangeBill{model: "claude-sonnet-4-5", system: make([]byte, 20_000), tools: make([]byte, 80_000)}}
	for range maxTimeline {
		st.record(x, "")
	}
	b.ReportAllocs()
	for b.Loop() {
		st.record(x, "")
	}
}

// agentctx_session_errors_total reports the sessions with errors seen
// last, at most maxSessionSeries of them: a label per session, bounded
// however many sessions fail; a session without errors, or whose only
// trouble is its client hanging up, has no series.
func TestSessionErrorsBounded(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	n := maxSessionSeries + 20
	for i := range n {
		st := s.stats.get(fmt.Sprintf("s%03d", i))
		st.record(&exchange{api: APIAnthropic, start: t0.Add(time.Duration(i) * time.Second), status: http.StatusBadGateway}, "")
		if i%2 == 0 {
			st.record(&exchange{api: APIAnthropic, start: t0.Add(time.Duration(i) * time.Second), status: http.StatusInternalServerError}, "")
		}
	}
	s.stats.get("fine").record(&exchange{api: APIAnthropic, start: t0.Add(time.Hour), status: 200}, "")
	s.stats.get("cancelled").record(&exchange{api: APIAnthropic, start: t0.Add(time.Hour), status: StatusClientClosedRequest, cancelled: true}, "")
	s.stats.get("bad\xffkey").record(&exchange{api: APIAnthropic, start: t0.Add(time.Hour), status: 500}, "") // no label value: left out

	fams, err := s.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "agentctx_session_errors_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	if len(got) != maxSessionSeries {
		t.Fatalf("%d series, want %d", len(got), maxSessionSeries)
	}
	for i := n - maxSessionSeries; i < n; i++ { // the last seen
		want := 1.0
		if i%2 == 0 {
			want = 2
		}
		if k := fmt.Sprintf("s%03d", i); got[k] != want {
			t.Errorf("%s: %v errors, want %v", k, got[k], want)
		}
	}
}
