package proxy

import (
	"strings"
	"testing"
)

// A session's bill keeps no count of the messages the Engine counted (the
// PipelineEngine counts every message of a request): its memo holds the
// messages only the proxy counted, such as those the Engine changed. It
// held a count of each message of the session before (3.5 MB for a
// request of 100,000 messages, beside the Engine's own).
func TestBillKeepsNoCountTheEngineMade(t *testing.T) {
	small := make([]string, 500)
	for i := range small {
		small[i] = smallPair(i)
	}
	body := anthropicBody(`[{"role":"user","content":"start"},` + strings.Join(small, ",") + `]`)
	s, _ := sessionServer(t, PipelineOptions{}, discardTransport{})
	for range 2 {
		sendSession(t, s, "billed", body)
	}
	st := s.stats.get("billed")
	st.billing.mu.Lock()
	n := len(st.billing.counts)
	st.billing.mu.Unlock()
	if n != 0 {
		t.Errorf("the bill remembers %d counts of %d messages the Engine counted", n, 2*len(small)+1)
	}
	if got := s.Stats(); len(got) != 1 || got[0].CostUSD <= 0 || got[0].CostWithoutUSD != got[0].CostUSD {
		t.Errorf("stats %+v: want a bill, the same without agentctx", got)
	}
}
