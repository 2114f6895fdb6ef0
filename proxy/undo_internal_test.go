package proxy

import (
	"context"
	"errors"
	"testing"

	"github.com/agentctx/agentctx/session/memsession"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/memstore"
)

// A rollback takes back only what it can take back whole: a session
// another request saved since, or an artifact another request found in
// the meantime, stays (their state may name it).
func TestUndoKeepsWhatOthersUse(t *testing.T) {
	art := func(id string) workspace.Artifact {
		return workspace.Artifact{Info: workspace.Info{ID: id, Type: workspace.TypeText}, Content: "content of " + id}
	}
	for _, c := range []struct {
		name string
		// between runs between the request's writes and its rollback.
		between func(ctx context.Context, ws workspace.Store, ss interface {
			Save(context.Context, string, string, []byte, int64) (int64, error)
		}, v int64)
		rolledBack bool // the session state is back to before
		removed    []string
		kept       []string
	}{
		{"alone", nil, true, []string{"new_1", "new_2"}, []string{"old"}},
		{"the session saved since by another request", func(ctx context.Context, _ workspace.Store, ss interface {
			Save(context.Context, string, string, []byte, int64) (int64, error)
		}, v int64) {
			if _, err := ss.Save(ctx, "ns", "s", []byte(`{"other":true}`), v); err != nil {
				t.Fatal(err)
			}
		}, false, nil, []string{"old", "new_1", "new_2"}},
		{"an artifact found by another request", func(ctx context.Context, ws workspace.Store, _ interface {
			Save(context.Context, string, string, []byte, int64) (int64, error)
		}, _ int64) {
			other := withUndo(ctx, &undoLog{})
			if _, err := ws.Stat(other, "ns", "new_2"); err != nil {
				t.Fatal(err)
			}
		}, true, []string{"new_1"}, []string{"old", "new_2"}},
	} {
		ctx := t.Context()
		ws, ss := undoStores(memstore.New(), memsession.New())
		if _, err := ws.Create(ctx, "ns", art("old")); err != nil {
			t.Fatal(err)
		}
		v0, err := ss.Save(ctx, "ns", "s", []byte(`{"before":true}`), 0)
		if err != nil {
			t.Fatal(err)
		}
		u := &undoLog{}
		rctx := withUndo(ctx, u)
		if _, _, err := ss.Load(rctx, "ns", "s"); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"new_1", "new_2"} {
			if _, err := ws.Create(rctx, "ns", art(id)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := ws.Put(rctx, "ns", art("old")); err != nil { // existed: not the request's
			t.Fatal(err)
		}
		v1, err := ss.Save(rctx, "ns", "s", []byte(`{"after":true}`), v0)
		if err != nil {
			t.Fatal(err)
		}
		if c.between != nil {
			c.between(ctx, ws, ss, v1)
		}
		n, err := u.rollback(ctx)
		data, _, _ := ss.Load(ctx, "ns", "s")
		if back := string(data) == `{"before":true}`; back != c.rolledBack || (err == nil) != c.rolledBack {
			t.Errorf("%s: state %s, rollback error %v", c.name, data, err)
		}
		if n != len(c.removed) {
			t.Errorf("%s: %d removed, want %d", c.name, n, len(c.removed))
		}
		for _, id := range c.removed {
			if _, err := ws.Stat(ctx, "ns", id); !errors.Is(err, workspace.ErrNotFound) {
				t.Errorf("%s: %s not removed: %v", c.name, id, err)
			}
		}
		for _, id := range c.kept {
			if _, err := ws.Stat(ctx, "ns", id); err != nil {
				t.Errorf("%s: %s removed: %v", c.name, id, err)
			}
		}
	}
}

// A session the request created is deleted by its rollback.
func TestUndoNewSession(t *testing.T) {
	ctx := t.Context()
	_, ss := undoStores(memstore.New(), memsession.New())
	u := &undoLog{}
	rctx := withUndo(ctx, u)
	if _, _, err := ss.Load(rctx, "ns", "s"); err == nil {
		t.Fatal("a session before any save")
	}
	if _, err := ss.Save(rctx, "ns", "s", []byte(`{}`), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := u.rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ss.Load(ctx, "ns", "s"); err == nil {
		t.Error("the session the refused request created is still there")
	}
}
