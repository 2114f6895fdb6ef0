package workspace_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/driver"
	"github.com/agentctx/agentctx/workspace/memstore"
)

// recorder is a driver over memory that records what reaches it.
type recorder struct {
	*memstore.Driver
	calls []string
	block bool // Get waits for ctx
}

func (r *recorder) Put(ctx context.Context, ns string, a workspace.Artifact) (workspace.Info, error) {
	r.calls = append(r.calls, "put "+a.ID)
	if a.SHA256 == "" || a.Metadata == nil {
		return workspace.Info{}, errors.New("the artifact was not measured")
	}
	return r.Driver.Put(ctx, ns, a)
}

func (r *recorder) Get(ctx context.Context, ns, id string) (*workspace.Artifact, error) {
	r.calls = append(r.calls, "get "+id)
	if r.block {
		<-ctx.Done()
		return nil, errors.New("interrupted")
	}
	return r.Driver.Get(ctx, ns, id)
}

// The portable Store does what every backend would otherwise repeat: it
// checks ctx, keys, artifacts and Close before the driver sees a call,
// measures what is stored, bounds each call and wraps the driver's errors.
func TestPortableStore(t *testing.T) {
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, tc := range []struct {
		name string
		call func(s workspace.Store) error
		want error
	}{
		{"cancelled ctx", func(s workspace.Store) error { _, err := s.Get(cancelled, "ns", "a"); return err }, context.Canceled},
		{"empty id", func(s workspace.Store) error { _, err := s.Get(ctx, "ns", ""); return err }, workspace.ErrInvalidID},
		{"empty namespace", func(s workspace.Store) error { return s.Delete(ctx, "", "a") }, workspace.ErrInvalidNamespace},
		{"bad metadata", func(s workspace.Store) error {
			_, err := s.Put(ctx, "ns", workspace.Artifact{Info: workspace.Info{ID: "a", Metadata: workspace.Metadata{"": "x"}}})
			return err
		}, workspace.ErrInvalidMetadata},
		{"invalid UTF-8 id", func(s workspace.Store) error {
			_, err := s.Put(ctx, "ns", workspace.Artifact{Info: workspace.Info{ID: "\xff"}})
			return err
		}, workspace.ErrInvalidID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{Driver: memstore.NewDriver()}
			err := tc.call(workspace.NewStore(r, workspace.StoreOptions{}))
			var e *workspace.Error
			if !errors.Is(err, tc.want) || !errors.As(err, &e) {
				t.Fatalf("got %v, want an *Error matching %v", err, tc.want)
			}
			if len(r.calls) != 0 {
				t.Errorf("the driver was called: %v", r.calls)
			}
		})
	}

	t.Run("measured, errors wrapped", func(t *testing.T) {
		r := &recorder{Driver: memstore.NewDriver()}
		s := workspace.NewStore(r, workspace.StoreOptions{})
		info, err := s.Put(ctx, "ns", workspace.Artifact{Info: workspace.Info{ID: "a"}, Content: "x\ny\n"})
		if err != nil || info.Lines != 2 || info.SHA256 == "" {
			t.Fatalf("%+v, %v", info, err)
		}
		_, err = s.Get(ctx, "ns", "missing")
		var e *workspace.Error
		if !errors.Is(err, workspace.ErrNotFound) || !errors.As(err, &e) || e.Op != "get" || e.ID != "missing" || e.Namespace != "ns" {
			t.Fatalf("got %#v", err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		r := &recorder{Driver: memstore.NewDriver()}
		s := workspace.NewStore(r, workspace.StoreOptions{})
		s.Close()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, "ns", "a"); !errors.Is(err, workspace.ErrClosed) || len(r.calls) != 0 {
			t.Fatalf("Get after Close: %v, calls %v", err, r.calls)
		}
		if _, err := s.Namespaces(ctx); !errors.Is(err, workspace.ErrClosed) {
			t.Fatalf("Namespaces after Close: %v", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		s := workspace.NewStore(&recorder{Driver: memstore.NewDriver(), block: true}, workspace.StoreOptions{Timeout: 20 * time.Millisecond})
		if _, err := s.Get(ctx, "ns", "a"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a hung driver: %v, want DeadlineExceeded", err)
		}
	})
	t.Run("abilities follow the driver", func(t *testing.T) {
		s := workspace.NewStore(memstore.NewDriver(), workspace.StoreOptions{})
		if _, ok := s.(workspace.Pather); ok {
			t.Error("a memory store says it keeps files")
		}
		plain := workspace.NewStore(struct{ driver.Store }{memstore.NewDriver()}, workspace.StoreOptions{})
		k := plain.(interface {
			Location() string
		})
		if k.Location() != "" {
			t.Errorf("Location of a driver that has none: %q", k.Location())
		}
	})
}
