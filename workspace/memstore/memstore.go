// Package memstore is a workspace.Store that keeps artifacts in memory:
// for tests, examples and short-lived agents. It passes the storetest
// conformance suite like the persistent backends.
package memstore

import (
	"context"
	"slices"
	"sync"

	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/memsession"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/driver"
)

// Store is an in-memory workspace.Store. The zero value is not usable;
// call New.
type Store struct {
	mu       sync.RWMutex
	ns       map[string]map[string]*workspace.Artifact
	closed   bool
	sessions *memsession.Driver // see OpenSessions
}

var (
	_ workspace.Store = (*Store)(nil)
	_ session.Keeper  = (*Store)(nil)
)

// New returns an empty store.
func New() *Store {
	return &Store{ns: make(map[string]map[string]*workspace.Artifact), sessions: memsession.NewDriver()}
}

// OpenSessions implements session.Keeper: the session state is kept in
// memory as long as the store, and every store it returns sees the same
// states (closing one leaves them to the others).
func (s *Store) OpenSessions(ctx context.Context) (session.Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return session.New(s.sessions, nil), nil
}

func (s *Store) check(ctx context.Context, op, ns, id string, needID bool) error {
	if err := driver.Check(ctx, op, ns, id, needID); err != nil {
		return err
	}
	if s.closed {
		return &workspace.Error{Op: op, Namespace: ns, ID: id, Err: workspace.ErrClosed}
	}
	return nil
}

// Put implements workspace.Store.
func (s *Store) Put(ctx context.Context, ns string, a workspace.Artifact) (workspace.Info, error) {
	return s.put(ctx, "put", ns, a)
}

// Create implements workspace.Store: the check and the write are one step
// under the store's lock.
func (s *Store) Create(ctx context.Context, ns string, a workspace.Artifact) (workspace.Info, error) {
	return s.put(ctx, "create", ns, a)
}

func (s *Store) put(ctx context.Context, op, ns string, a workspace.Artifact) (workspace.Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx, op, ns, a.ID, true); err != nil {
		return workspace.Info{}, err
	}
	if err := driver.ValidateArtifact(&a); err != nil {
		return workspace.Info{}, &workspace.Error{Op: op, Namespace: ns, ID: a.ID, Err: err}
	}
	if _, taken := s.ns[ns][a.ID]; taken && op == "create" {
		return workspace.Info{}, &workspace.Error{Op: op, Namespace: ns, ID: a.ID, Err: workspace.ErrExists}
	}
	m := driver.Measure(a)
	if s.ns[ns] == nil {
		s.ns[ns] = make(map[string]*workspace.Artifact)
	}
	s.ns[ns][a.ID] = &m
	return m.Info.Clone(), nil
}

func (s *Store) get(ctx context.Context, op, ns, id string) (*workspace.Artifact, error) {
	if err := s.check(ctx, op, ns, id, true); err != nil {
		return nil, err
	}
	a := s.ns[ns][id]
	if a == nil {
		return nil, &workspace.Error{Op: op, Namespace: ns, ID: id, Err: workspace.ErrNotFound}
	}
	return a, nil
}

// Get implements workspace.Store.
func (s *Store) Get(ctx context.Context, ns, id string) (*workspace.Artifact, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	a, err := s.get(ctx, "get", ns, id)
	if err != nil {
		return nil, err
	}
	return &workspace.Artifact{Info: a.Info.Clone(), Content: a.Content}, nil
}

// Stat implements workspace.Store.
func (s *Store) Stat(ctx context.Context, ns, id string) (workspace.Info, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	a, err := s.get(ctx, "stat", ns, id)
	if err != nil {
		return workspace.Info{}, err
	}
	return a.Info.Clone(), nil
}

func (s *Store) query(ns string, f workspace.Filter) []workspace.Info {
	var list []workspace.Info
	for _, a := range s.ns[ns] {
		if f.Match(a.Metadata) {
			list = append(list, a.Info)
		}
	}
	driver.SortInfos(list)
	return list
}

// Query implements workspace.Store.
func (s *Store) Query(ctx context.Context, ns string, f workspace.Filter) ([]workspace.Info, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx, "query", ns, "", false); err != nil {
		return nil, err
	}
	list := driver.Page(s.query(ns, f), f)
	out := make([]workspace.Info, len(list))
	for i, info := range list {
		out[i] = info.Clone()
	}
	return out, nil
}

// Delete implements workspace.Store.
func (s *Store) Delete(ctx context.Context, ns, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.get(ctx, "delete", ns, id); err != nil {
		return err
	}
	delete(s.ns[ns], id)
	return nil
}

// Close implements workspace.Store. The artifacts are dropped.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.ns = nil
	return nil
}

// Namespaces implements workspace.Store.
func (s *Store) Namespaces(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, &workspace.Error{Op: "namespaces", Err: err}
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, &workspace.Error{Op: "namespaces", Err: workspace.ErrClosed}
	}
	out := []string{}
	for ns, m := range s.ns {
		if len(m) > 0 {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return out, nil
}
