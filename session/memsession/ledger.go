package memsession

import (
	"context"
	"slices"
	"sort"

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

// QueryLedger implements session.LedgerDriver.
func (d *Driver) QueryLedger(_ context.Context, f session.LedgerFilter) ([]session.LedgerEntry, error) {
	d.mu.Lock()
	out := slices.DeleteFunc(slices.Clone(d.ledger), func(e session.LedgerEntry) bool { return !f.Match(e) })
	d.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, nil
}
