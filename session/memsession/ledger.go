package memsession

import (
	"context"
	"slices"

	"github.com/agentctx/agentctx/session"
)

var _ session.LedgerDriver = (*Driver)(nil)

// AppendLedger implements session.LedgerDriver: the entries in memory,
// seen by every store over the Driver.
func (d *Driver) AppendLedger(_ context.Context, entries []session.LedgerEntry) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ledger = append(d.ledger, entries...)
	return nil
}

// ScanLedger implements session.LedgerDriver, over a snapshot.
func (d *Driver) ScanLedger(_ context.Context, f session.LedgerFilter, fn func(session.LedgerEntry) error) error {
	d.mu.Lock()
	all := slices.Clone(d.ledger)
	d.mu.Unlock()
	for _, e := range all {
		if !f.Match(e) {
			continue
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}
