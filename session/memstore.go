package session

import (
	"context"
	"sync"
)

// MemStore keeps session states in memory, for one process. The zero value
// is not ready: use NewMemStore.
type MemStore struct {
	mu     sync.Mutex
	m      map[[2]string]memEntry
	closed bool
}

type memEntry struct {
	data    []byte
	version int64
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
	s.m[k] = memEntry{data: append([]byte(nil), data...), version: version + 1}
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

// Close implements Store.
func (s *MemStore) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}
