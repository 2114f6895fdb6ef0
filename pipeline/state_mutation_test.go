package pipeline

import (
	"math"
	"testing"

	"github.com/agentctx/agentctx/pricing"
)

// Tests that each kill a mutation of the session state no other test
// caught (issue 24 item 8).

// TestStateMemoComparesBytes: the memo answers only for the very JSON it
// remembered; another state of the same length is decoded, not taken for
// the remembered one.
func TestStateMemoComparesBytes(t *testing.T) {
	p := &Pipeline{}
	a := []byte(`{"requests":1}`)
	b := []byte(`{"requests":2}`) // same length
	p.rememberState(a, &state{Requests: 1})
	if st := p.memoState(a); st == nil || st.Requests != 1 {
		t.Fatalf("memo of its own JSON: %+v", st)
	}
	if st := p.memoState(b); st != nil {
		t.Fatalf("memo answered %+v for other JSON of the same length", st)
	}
}

// TestCalibrationRules pins observe: the first slope between two reports
// replaces the initial ratio, later slopes are blended 70/30, and a count
// that shrinks (a compaction, a prune batch) fits a slope like one that
// grows.
func TestCalibrationRules(t *testing.T) {
	const initial = 1.0
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	t.Run("first slope replaces, later ones blend", func(t *testing.T) {
		st := newState()
		st.observe(pricing.Usage{Uncached: 15_000}, 10_000, initial) // ratio stays the guess
		st.observe(pricing.Usage{Uncached: 16_200}, 11_000, initial) // slope 1.2
		if !near(st.Usage.Ratio, 1.2) {
			t.Fatalf("after the first slope: ratio %v, want 1.2", st.Usage.Ratio)
		}
		st.observe(pricing.Usage{Uncached: 18_200}, 12_000, initial) // slope 2.0
		if want := 0.7*1.2 + 0.3*2.0; !near(st.Usage.Ratio, want) {
			t.Fatalf("after the second slope: ratio %v, want %v", st.Usage.Ratio, want)
		}
	})
	t.Run("shrinking count", func(t *testing.T) {
		st := newState()
		st.observe(pricing.Usage{Uncached: 25_000}, 20_000, initial)
		st.observe(pricing.Usage{Uncached: 13_000}, 10_000, initial) // slope 12,000/10,000
		if !near(st.Usage.Ratio, 1.2) {
			t.Fatalf("ratio %v after a shrink, want 1.2", st.Usage.Ratio)
		}
		if got, want := st.estimate(9_000, initial), 13_000-1_200; got != want {
			t.Errorf("estimate %d, want %d", got, want)
		}
	})
}
