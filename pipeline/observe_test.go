package pipeline_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pricing"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/memsession"
)

// countingSessions is a session.Store that counts the calls and the bytes
// saved.
type countingSessions struct {
	session.Store
	mu           sync.Mutex
	loads, saves int
	saved        int
}

func (c *countingSessions) Load(ctx context.Context, ns, id string) ([]byte, int64, error) {
	c.mu.Lock()
	c.loads++
	c.mu.Unlock()
	return c.Store.Load(ctx, ns, id)
}

func (c *countingSessions) Save(ctx context.Context, ns, id string, data []byte, v int64) (int64, error) {
	c.mu.Lock()
	c.saves++
	c.saved += len(data)
	c.mu.Unlock()
	return c.Store.Save(ctx, ns, id, data, v)
}

func (c *countingSessions) take() (loads, saves, saved int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	loads, saves, saved = c.loads, c.saves, c.saved
	c.loads, c.saves, c.saved = 0, 0, 0
	return loads, saves, saved
}

// TestObserveOneStoreCall: after a Prepare, Observe records the usage with
// one Save and no Load (the state Prepare saved is known, with its
// version), not a second load–decode–save cycle of the whole state; when
// another writer saved in between, it loads and retries; and the state
// saved is byte for byte the one the full cycle saves.
func TestObserveOneStoreCall(t *testing.T) {
	ctx := context.Background()
	run := func(fresh bool) []byte {
		store := &countingSessions{Store: memsession.New()}
		o := options(t)
		o.NoCompact = true
		o.Sessions = store
		p := newPipeline(t, o)
		msgs := history(user("go", now))
		for i := range 4 {
			msgs = append(msgs, exchange("toolu_"+string(rune('a'+i)), "Read", "cat", strings.Repeat("alpha beta ", 300*(i+1)), false, now)...)
			r := mustPrepare(t, p, msgs)
			obs := p
			if fresh {
				// A Pipeline that did not prepare the request (another
				// process): the full cycle.
				obs = newPipeline(t, o)
			}
			store.take()
			if err := obs.Observe(ctx, pricing.Usage{Uncached: 1000 + r.Report.TokensAfter*12/10}, 0); err != nil {
				t.Fatal(err)
			}
			loads, saves, saved := store.take()
			if !fresh && (loads != 0 || saves != 1) {
				t.Errorf("request %d: Observe made %d loads and %d saves (%d bytes), want 0 and 1", i, loads, saves, saved)
			}
		}
		data, _, err := store.Load(ctx, "default", "default")
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	if fast, full := run(false), run(true); string(fast) != string(full) {
		t.Errorf("state after Observe:\n%s\nwant (the full cycle):\n%s", fast, full)
	}

	// Another writer saved between the Prepare and the Observe: the
	// Observe loads its state and records the usage in it.
	store := &countingSessions{Store: memsession.New()}
	o := options(t)
	o.NoCompact = true
	o.Sessions = store
	p, q := newPipeline(t, o), newPipeline(t, o)
	msgs := history(user("go", now), exchange("toolu_a", "Read", "cat", strings.Repeat("alpha beta ", 300), false, now))
	mustPrepare(t, p, msgs)
	r := mustPrepare(t, q, msgs)
	store.take()
	if err := p.Observe(ctx, pricing.Usage{Uncached: 2 * r.Report.TokensAfter}, 0); err != nil {
		t.Fatal(err)
	}
	if loads, saves, _ := store.take(); loads != 1 || saves != 2 {
		t.Errorf("after a conflict: %d loads and %d saves, want 1 and 2", loads, saves)
	}
	r = mustPrepare(t, q, msgs)
	if !r.Report.Session.Calibrated || r.Report.EstimatedTokens != 2*r.Report.TokensAfter {
		t.Errorf("after a conflict: calibrated %v, estimate %d for count %d, want twice the count", r.Report.Session.Calibrated, r.Report.EstimatedTokens, r.Report.TokensAfter)
	}
}

// BenchmarkPrepareObserve is one request of a warm session through the
// session engine: Prepare, then Observe of its usage, over an in-memory
// session store whose calls and bytes saved it reports per request.
func BenchmarkPrepareObserve(b *testing.B) {
	store := &countingSessions{Store: memsession.New()}
	o := pipeline.Options{WorkspaceDir: b.TempDir(), NoCompact: true, Sessions: store, Now: func() time.Time { return now }}
	p, err := pipeline.New(o)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	msgs := history(user("go", now))
	for i := range 200 {
		msgs = append(msgs, exchange(fmt.Sprint("toolu_", i), "Read", "cat", strings.Repeat("alpha beta ", 100*(1+i%20)), false, now)...)
	}
	if _, err := p.Prepare(ctx, msgs); err != nil {
		b.Fatal(err)
	}
	store.take()
	var loads, saves, saved int
	b.ReportAllocs()
	for b.Loop() {
		r, err := p.Prepare(ctx, msgs)
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Observe(ctx, pricing.Usage{Uncached: r.Report.TokensAfter}, 0); err != nil {
			b.Fatal(err)
		}
		l, s, n := store.take()
		loads, saves, saved = loads+l, saves+s, saved+n
	}
	b.ReportMetric(float64(loads)/float64(b.N), "loads/req")
	b.ReportMetric(float64(saves)/float64(b.N), "saves/req")
	b.ReportMetric(float64(saved)/float64(b.N), "saved-B/req")
}
