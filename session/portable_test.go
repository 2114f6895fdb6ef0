package session_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentctx/agentctx/session"
)

// recorder is a driver that records its calls and fails with err.
type recorder struct {
	calls  []string
	err    error
	closes int
	block  bool // Load waits for ctx
}

func (r *recorder) Load(ctx context.Context, ns, id string) ([]byte, int64, error) {
	r.calls = append(r.calls, "load "+ns+" "+id)
	if r.block {
		<-ctx.Done()
		return nil, 0, errors.New("interrupted")
	}
	return nil, 0, r.err
}
func (r *recorder) Save(_ context.Context, ns, id string, _ []byte, v int64) (int64, error) {
	r.calls = append(r.calls, "save "+ns+" "+id)
	return v + 1, r.err
}
func (r *recorder) Delete(_ context.Context, ns, id string) error {
	r.calls = append(r.calls, "delete "+ns+" "+id)
	return r.err
}
func (r *recorder) DeleteVersion(_ context.Context, ns, id string, _ int64) error {
	r.calls = append(r.calls, "delete "+ns+" "+id)
	return r.err
}
func (r *recorder) Stat(_ context.Context, ns, id string) (session.Info, error) {
	r.calls = append(r.calls, "stat "+ns+" "+id)
	return session.Info{}, r.err
}
func (r *recorder) List(_ context.Context, ns string) ([]session.Info, error) {
	r.calls = append(r.calls, "list "+ns)
	return []session.Info{{Namespace: "b", ID: "1"}, {Namespace: "a", ID: "2"}, {Namespace: "a", ID: "1"}}, r.err
}
func (r *recorder) Close() error { r.closes++; return nil }

// The portable Store does what every backend would otherwise repeat:
// it checks ctx, keys and Close before the driver sees a call, wraps the
// driver's errors, bounds each call and sorts listings.
func TestPortableStore(t *testing.T) {
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, tc := range []struct {
		name string
		call func(s session.Store) error
		want error
	}{
		{"cancelled ctx", func(s session.Store) error { _, _, err := s.Load(cancelled, "ns", "id"); return err }, context.Canceled},
		{"empty id", func(s session.Store) error { _, err := s.Save(ctx, "ns", "", nil, 0); return err }, session.ErrInvalidKey},
		{"empty namespace", func(s session.Store) error { return s.Delete(ctx, "", "id") }, session.ErrInvalidKey},
		{"invalid UTF-8", func(s session.Store) error { _, err := s.Stat(ctx, "ns", "\xff"); return err }, session.ErrInvalidKey},
		{"list invalid namespace", func(s session.Store) error { _, err := s.List(ctx, "\xff"); return err }, session.ErrInvalidKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{}
			err := tc.call(session.New(r, session.Options{}))
			var e *session.Error
			if !errors.Is(err, tc.want) || !errors.As(err, &e) {
				t.Fatalf("got %v, want an *Error matching %v", err, tc.want)
			}
			if len(r.calls) != 0 {
				t.Errorf("the driver was called: %v", r.calls)
			}
		})
	}

	t.Run("errors wrapped with the operation and key", func(t *testing.T) {
		s := session.New(&recorder{err: session.ErrConflict}, session.Options{})
		_, err := s.Save(ctx, "ns", "id", nil, 3)
		var e *session.Error
		if !errors.Is(err, session.ErrConflict) || !errors.As(err, &e) || e.Op != "save" || e.Namespace != "ns" || e.ID != "id" {
			t.Fatalf("got %#v", err)
		}
	})
	t.Run("list sorted, every namespace", func(t *testing.T) {
		r := &recorder{}
		list, err := session.New(r, session.Options{}).List(ctx, "")
		if err != nil || len(list) != 3 || list[0].Namespace != "a" || list[0].ID != "1" || list[2].Namespace != "b" {
			t.Fatalf("%+v, %v", list, err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		r := &recorder{}
		s := session.New(r, session.Options{})
		s.Close()
		s.Close()
		if _, _, err := s.Load(ctx, "ns", "id"); !errors.Is(err, session.ErrClosed) || len(r.calls) != 0 {
			t.Fatalf("Load after Close: %v, calls %v", err, r.calls)
		}
		if r.closes != 1 {
			t.Errorf("driver closed %d times, want once", r.closes)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		s := session.New(&recorder{block: true}, session.Options{Timeout: 20 * time.Millisecond})
		_, _, err := s.Load(ctx, "ns", "id")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a hung driver: %v, want DeadlineExceeded", err)
		}
	})
}
