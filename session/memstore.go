package session

import (
	"context"
	"sync"
	"time"
)

// MemStore keeps session states in memory, for one process. The zero value
// is not ready: use NewMemStore.
type MemStore struct {
	// Now is the clock of Info.Updated; nil means time.Now. Set it before
	// the first Save.
	Now    func() time.Time
	mu     sync.Mutex
	m      map[[2]string]memEntry
	closed bool
}

type memEntry struct {
	data    []byte
	version int64
	updated time.Time
}

var _ Store = (*MemStore)(nil)

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore { return &MemStore{m: make(map[[2]string]memEntry)} }

// Load implements Store.
func (s *MemStore) Load(ctx context.Context, ns, id string) ([]byte, int64, error) {
	if err := Check(ctx, "load", ns, id); err != nil {
		return nil, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, 0, &Error{Op: "load", Namespace: ns, ID: id, Err: ErrClosed}
	}
	e, ok := s.m[[2]string{ns, id}]
	if !ok {
		return nil, 0, &Error{Op: "load", Namespace: ns, ID: id, Err: ErrNotFound}
	}
	return append([]byte(nil), e.data...), e.version, nil
}

// Save implements Store.
func (s *MemStore) Save(ctx context.Context, ns, id string, data []byte, version int64) (int64, error) {
	if err := Check(ctx, "save", ns, id); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, &Error{Op: "save", Namespace: ns, ID: id, Err: ErrClosed}
	}
	k := [2]string{ns, id}
	if s.m[k].version != version {
		return 0, &Error{Op: "save", Namespace: ns, ID: id, Err: ErrConflict}
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	s.m[k] = memEntry{data: append([]byte(nil), data...), version: version + 1, updated: now()}
	return version + 1, nil
}

// Delete implements Store.
func (s *MemStore) Delete(ctx context.Context, ns, id string) error {
	if err := Check(ctx, "delete", ns, id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return &Error{Op: "delete", Namespace: ns, ID: id, Err: ErrClosed}
	}
	k := [2]string{ns, id}
	if _, ok := s.m[k]; !ok {
		return &Error{Op: "delete", Namespace: ns, ID: id, Err: ErrNotFound}
	}
	delete(s.m, k)
	return nil
}

// DeleteVersion implements Store.
func (s *MemStore) DeleteVersion(ctx context.Context, ns, id string, version int64) error {
	if err := Check(ctx, "delete", ns, id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return &Error{Op: "delete", Namespace: ns, ID: id, Err: ErrClosed}
	}
	k := [2]string{ns, id}
	e, ok := s.m[k]
	switch {
	case !ok:
		return &Error{Op: "delete", Namespace: ns, ID: id, Err: ErrNotFound}
	case e.version != version:
		return &Error{Op: "delete", Namespace: ns, ID: id, Err: ErrConflict}
	}
	delete(s.m, k)
	return nil
}

// Stat implements Store.
func (s *MemStore) Stat(ctx context.Context, ns, id string) (Info, error) {
	if err := Check(ctx, "stat", ns, id); err != nil {
		return Info{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Info{}, &Error{Op: "stat", Namespace: ns, ID: id, Err: ErrClosed}
	}
	e, ok := s.m[[2]string{ns, id}]
	if !ok {
		return Info{}, &Error{Op: "stat", Namespace: ns, ID: id, Err: ErrNotFound}
	}
	return Info{Namespace: ns, ID: id, Version: e.version, Size: int64(len(e.data)), Updated: e.updated}, nil
}

// List implements Store.
func (s *MemStore) List(ctx context.Context, ns string) ([]Info, error) {
	if err := CheckNamespace(ctx, ns); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, &Error{Op: "list", Namespace: ns, Err: ErrClosed}
	}
	var out []Info
	for k, e := range s.m {
		if ns == "" || k[0] == ns {
			out = append(out, Info{Namespace: k[0], ID: k[1], Version: e.version, Size: int64(len(e.data)), Updated: e.updated})
		}
	}
	SortInfos(out)
	return out, nil
}

// Close implements Store.
func (s *MemStore) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}
