package pipeline_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/stores"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/dirstore"
	"github.com/agentctx/agentctx/workspace/memstore"
	"github.com/agentctx/agentctx/workspace/sqlitestore"
)

// TestSessionsFollowTheWorkspace (issue 25): a Pipeline given a workspace
// store and no session store keeps its session state where the workspace
// keeps its artifacts, so a second Pipeline over the same store (a second
// process) resumes the session instead of starting it over and compacting
// again. Before, the state of a SQLite workspace (and of any given store)
// was kept in memory: the second Pipeline compacted again.
func TestSessionsFollowTheWorkspace(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T, dir string) workspace.Store // a new handle on the same store
	}{
		{"sqlite", func(t *testing.T, dir string) workspace.Store {
			s, err := sqlitestore.Open(context.Background(), filepath.Join(dir, "ws.db"), sqlitestore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}},
		{"directory", func(t *testing.T, dir string) workspace.Store {
			s, err := dirstore.Open(dir, dirstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			msgs := longHistory(14)
			grown := append(slices.Clone(msgs), exchange("toolu_new", "Read", "cat g", "small", false, now)...)
			sum := &countingSummarizer{}
			o := options(t)
			o.Compact.Limit, o.Compact.Summarizer = 3000, sum

			o.Store = tc.open(t, dir)
			first := mustPrepare(t, newPipeline(t, o), msgs)
			if !first.Report.Step(pipeline.StepCompact).Compact.Compacted {
				t.Fatal("the first request should compact")
			}
			o.Store = tc.open(t, dir) // the second process opens the store again
			second := mustPrepare(t, newPipeline(t, o), grown)
			if sum.calls.Load() != 1 || !startsWith(t, second.Messages, first.Messages) {
				t.Errorf("the second Pipeline started the session over: summarizer calls %d, prefix kept %v",
					sum.calls.Load(), startsWith(t, second.Messages, first.Messages))
			}
			if s := second.Report.Session; s == nil || s.Requests != 2 || s.Compactions != 1 {
				t.Errorf("session report %+v, want the second request of the session", s)
			}
		})
	}

	// A memory workspace keeps the session state in the same memory: two
	// Pipelines sharing one memstore share the session.
	t.Run("memory", func(t *testing.T) {
		sum := &countingSummarizer{}
		o := options(t)
		o.Compact.Limit, o.Compact.Summarizer = 3000, sum
		o.Store = memstore.New()
		msgs := longHistory(14)
		mustPrepare(t, newPipeline(t, o), msgs)
		second := mustPrepare(t, newPipeline(t, o), append(slices.Clone(msgs), exchange("toolu_new", "Read", "cat g", "small", false, now)...))
		if s := second.Report.Session; s == nil || s.Requests != 2 || sum.calls.Load() != 1 {
			t.Errorf("session report %+v, summarizer calls %d", s, sum.calls.Load())
		}
	})
}

// wrapped is a workspace store that does not say where it would keep
// session state.
type wrapped struct{ workspace.Store }

// A workspace store that keeps no session state, given without a session
// store, is refused with a clear typed error instead of a session kept in
// memory behind the program's back.
func TestSessionsMismatchIsRefused(t *testing.T) {
	o := options(t)
	o.Store = wrapped{memstore.New()}
	_, err := pipeline.New(o)
	if !errors.Is(err, stores.ErrNoSessions) {
		t.Fatalf("New with a store that keeps no sessions: %v, want ErrNoSessions", err)
	}
	o.Stateless = true // no state: nothing to keep
	p, err := pipeline.New(o)
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
}
