// Package memsession is the session.Store kept in memory, for one process:
// tests, and the session state of a memory workspace (workspace/memstore).
package memsession

import (
	"context"
	"sync"
	"time"

	"github.com/agentctx/agentctx/session"
)

// New returns an empty session store in memory.
func New() session.Store { return session.New(NewDriver(), session.Options{}) }

// Driver is the session.Driver of New: states in memory. Every
// session.New over one Driver sees the same states, and closing one of
// those stores leaves the others (a memory workspace hands out stores over
// its own Driver this way). The zero value is not ready: use NewDriver.
type Driver struct {
	// Now is the clock of Info.Updated; nil means time.Now. Set it before
	// the first Save.
	Now func() time.Time
	mu  sync.Mutex
	m   map[[2]string]entry

	ledger []session.LedgerEntry // ledger.go
}

type entry struct {
	data    []byte
	version int64
	updated time.Time
}

var _ session.Driver = (*Driver)(nil)

// NewDriver returns an empty Driver.
func NewDriver() *Driver { return &Driver{m: make(map[[2]string]entry)} }

// Load implements session.Driver.
func (d *Driver) Load(_ context.Context, ns, id string) ([]byte, int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.m[[2]string{ns, id}]
	if !ok {
		return nil, 0, session.ErrNotFound
	}
	return append([]byte(nil), e.data...), e.version, nil
}

// Save implements session.Driver.
func (d *Driver) Save(_ context.Context, ns, id string, data []byte, version int64) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := [2]string{ns, id}
	if d.m[k].version != version {
		return 0, session.ErrConflict
	}
	now := time.Now
	if d.Now != nil {
		now = d.Now
	}
	d.m[k] = entry{data: append([]byte(nil), data...), version: version + 1, updated: now()}
	return version + 1, nil
}

// Delete implements session.Driver.
func (d *Driver) Delete(_ context.Context, ns, id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := [2]string{ns, id}
	if _, ok := d.m[k]; !ok {
		return session.ErrNotFound
	}
	delete(d.m, k)
	return nil
}

// DeleteVersion implements session.Driver.
func (d *Driver) DeleteVersion(_ context.Context, ns, id string, version int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := [2]string{ns, id}
	e, ok := d.m[k]
	switch {
	case !ok:
		return session.ErrNotFound
	case e.version != version:
		return session.ErrConflict
	}
	delete(d.m, k)
	return nil
}

// Stat implements session.Driver.
func (d *Driver) Stat(_ context.Context, ns, id string) (session.Info, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.m[[2]string{ns, id}]
	if !ok {
		return session.Info{}, session.ErrNotFound
	}
	return session.Info{Namespace: ns, ID: id, Version: e.version, Size: int64(len(e.data)), Updated: e.updated}, nil
}

// List implements session.Driver.
func (d *Driver) List(_ context.Context, ns string) ([]session.Info, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []session.Info
	for k, e := range d.m {
		if ns == "" || k[0] == ns {
			out = append(out, session.Info{Namespace: k[0], ID: k[1], Version: e.version, Size: int64(len(e.data)), Updated: e.updated})
		}
	}
	return out, nil
}

// Close implements session.Driver: the states stay for the other stores
// over the Driver.
func (d *Driver) Close() error { return nil }
