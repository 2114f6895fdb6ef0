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

// New returns an empty store in memory. Its session state (OpenSessions,
// session.Keeper) is kept in memory too, as long as the store.
func New() workspace.Store { return workspace.NewStore(NewDriver(), workspace.StoreOptions{}) }

// Driver is the driver.Store of New: artifacts in memory. The zero value
// is not usable; call NewDriver.
type Driver struct {
	mu       sync.RWMutex
	ns       map[string]map[string]*workspace.Artifact
	sessions *memsession.Driver // see OpenSessions
}

var (
	_ driver.Store   = (*Driver)(nil)
	_ session.Keeper = (*Driver)(nil)
)

// NewDriver returns an empty Driver.
func NewDriver() *Driver {
	return &Driver{ns: make(map[string]map[string]*workspace.Artifact), sessions: memsession.NewDriver()}
}

// OpenSessions implements session.Keeper: the session state is kept in
// memory as long as the store, and every store it returns sees the same
// states (closing one leaves them to the others).
func (s *Driver) OpenSessions(ctx context.Context) (session.Store, error) {
	return session.New(s.sessions, session.Options{}), nil
}

// Put implements driver.Store.
func (s *Driver) Put(_ context.Context, ns string, a workspace.Artifact) (workspace.Info, error) {
	return s.put(false, ns, a)
}

// Create implements driver.Store: the check and the write are one step
// under the store's lock.
func (s *Driver) Create(_ context.Context, ns string, a workspace.Artifact) (workspace.Info, error) {
	return s.put(true, ns, a)
}

func (s *Driver) put(create bool, ns string, a workspace.Artifact) (workspace.Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, taken := s.ns[ns][a.ID]; taken && create {
		return workspace.Info{}, workspace.ErrExists
	}
	if s.ns[ns] == nil {
		s.ns[ns] = make(map[string]*workspace.Artifact)
	}
	s.ns[ns][a.ID] = &a
	return a.Info.Clone(), nil
}

func (s *Driver) get(ns, id string) (*workspace.Artifact, error) {
	a := s.ns[ns][id]
	if a == nil {
		return nil, workspace.ErrNotFound
	}
	return a, nil
}

// Get implements driver.Store.
func (s *Driver) Get(_ context.Context, ns, id string) (*workspace.Artifact, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	a, err := s.get(ns, id)
	if err != nil {
		return nil, err
	}
	return &workspace.Artifact{Info: a.Info.Clone(), Content: a.Content}, nil
}

// Stat implements driver.Store.
func (s *Driver) Stat(_ context.Context, ns, id string) (workspace.Info, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	a, err := s.get(ns, id)
	if err != nil {
		return workspace.Info{}, err
	}
	return a.Info.Clone(), nil
}

// Query implements driver.Store.
func (s *Driver) Query(_ context.Context, ns string, f workspace.Filter) ([]workspace.Info, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var list []workspace.Info
	for _, a := range s.ns[ns] {
		if f.Match(a.Metadata) {
			list = append(list, a.Info)
		}
	}
	driver.SortInfos(list)
	list = driver.Page(list, f)
	out := make([]workspace.Info, len(list))
	for i, info := range list {
		out[i] = info.Clone()
	}
	return out, nil
}

// Delete implements driver.Store.
func (s *Driver) Delete(_ context.Context, ns, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.get(ns, id); err != nil {
		return err
	}
	delete(s.ns[ns], id)
	return nil
}

// Close implements driver.Store. The artifacts are dropped.
func (s *Driver) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ns = nil
	return nil
}

// Namespaces implements driver.Store.
func (s *Driver) Namespaces(context.Context) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := []string{}
	for ns, m := range s.ns {
		if len(m) > 0 {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return out, nil
}
