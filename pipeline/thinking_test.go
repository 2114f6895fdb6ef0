package pipeline_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pricing"
	"github.com/agentctx/agentctx/session/memsession"
)

// TestThinkingMemoryInState: the thinking blocks a Record reports are in
// the session state, so that another Pipeline of the session (another
// process) reads them after its own Prepare; the memory is bounded, the
// oldest entries going first, and an entry of a known key is updated.
func TestThinkingMemoryInState(t *testing.T) {
	ctx := context.Background()
	o := options(t)
	o.NoCompact = true
	o.Sessions = memsession.New()
	p, q := newPipeline(t, o), newPipeline(t, o)
	msgs := history(user("go", now), exchange("toolu_a", "Read", "cat", strings.Repeat("alpha ", 50), false, now))
	mustPrepare(t, p, msgs)
	u := pricing.Usage{Uncached: 100}
	if err := p.Record(ctx, pipeline.Observation{Usage: &u, Known: []pipeline.ThinkingEntry{{Key: 1, Prefix: 10}}, Sent: []pipeline.ThinkingEntry{{Key: 2, Prefix: 20}}}); err != nil {
		t.Fatal(err)
	}
	if q.Thinking() != nil {
		t.Fatal("a Pipeline that loaded nothing remembers thinking")
	}
	r := mustPrepare(t, q, msgs)
	m := q.Thinking()
	if h, ok := m.Known(1); !ok || h != 10 {
		t.Errorf("Known(1) = %d, %v; want 10", h, ok)
	}
	if h, ok := m.Sent(2); !ok || h != 20 {
		t.Errorf("Sent(2) = %d, %v; want 20", h, ok)
	}
	if _, ok := m.Known(2); ok {
		t.Error("Known(2): a block only sent is known")
	}
	if !r.Report.Session.Calibrated {
		t.Error("the usage of the Record was not recorded")
	}

	// Bounded: MaxThinking+10 more blocks push out the first ones.
	var add []pipeline.ThinkingEntry
	for k := range pipeline.MaxThinking + 10 {
		add = append(add, pipeline.ThinkingEntry{Key: uint64(100 + k), Prefix: uint64(k)})
	}
	add = append(add, pipeline.ThinkingEntry{Key: 100 + pipeline.MaxThinking + 9, Prefix: 7})
	if err := q.Record(ctx, pipeline.Observation{Known: add}); err != nil {
		t.Fatal(err)
	}
	mustPrepare(t, p, msgs)
	m = p.Thinking()
	if n, _ := m.Len(); n != pipeline.MaxThinking {
		t.Errorf("%d blocks remembered, want %d", n, pipeline.MaxThinking)
	}
	if _, ok := m.Known(1); ok {
		t.Error("the oldest block is still remembered")
	}
	if h, ok := m.Known(100 + pipeline.MaxThinking + 9); !ok || h != 7 {
		t.Errorf("updated entry: %d, %v; want 7", h, ok)
	}
	if h, ok := m.Sent(2); !ok || h != 20 {
		t.Errorf("Sent(2) = %d, %v after more known blocks; want 20", h, ok)
	}
}

// TestThinkingMemoryUnreadable: a state whose thinking memory does not
// parse is an unreadable state (an error), not a memory silently lost.
func TestThinkingMemoryUnreadable(t *testing.T) {
	for _, bad := range []string{`["12"]`, `["12:zz"]`, `["x:1"]`, `[1]`} {
		store := memsession.New()
		if _, err := store.Save(context.Background(), "default", "default", []byte(`{"schema":1,"requests":1,"results":{},"counted":0,"compactions":0,"breaks":0,"thinking":{"known":`+bad+`}}`), 0); err != nil {
			t.Fatal(err)
		}
		o := options(t)
		o.Sessions = store
		p := newPipeline(t, o)
		if _, err := p.Prepare(context.Background(), history(user("go", now))); err == nil || !strings.Contains(err.Error(), "unreadable state") {
			t.Errorf("known %s: %v, want an unreadable state", bad, err)
		}
	}
}
