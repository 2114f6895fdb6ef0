package workspace

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Default byte budgets of the tool results a workspace stores (see
// Budget). A long Claude Code session stores a few MB of tool results;
// these bounds are two orders of magnitude above what a normal coding
// session reaches, and stop a runaway agent, or a web page posting to a
// proxy, from filling the disk.
const (
	// DefaultSessionBytes bounds the bytes of tool results one session
	// stores: 1 GiB.
	DefaultSessionBytes int64 = 1 << 30
	// DefaultTotalBytes bounds the bytes of tool results the store holds
	// in all: 10 GiB.
	DefaultTotalBytes int64 = 10 << 30
)

// budgetRecount is the least time between two counts of the store, made
// when a result would pass a budget (the store's content may have
// shrunk since: retention, a refused request's results removed).
const budgetRecount = time.Minute

// BudgetOptions configure a Budget. The zero value means the defaults.
type BudgetOptions struct {
	// SessionBytes bounds the bytes of the tool results stored for one
	// session (by namespace and session id); 0 means DefaultSessionBytes,
	// a negative value no bound.
	SessionBytes int64
	// TotalBytes bounds the bytes of the tool results the store holds,
	// every namespace and session together; 0 means DefaultTotalBytes, a
	// negative value no bound.
	TotalBytes int64
	// Now is the clock of the recounts; nil means time.Now.
	Now func() time.Time
	// Logger receives the WARN line, once per session, that a budget was
	// reached; nil discards it.
	Logger *slog.Logger
}

// Budget bounds the bytes of the tool results Workspaces store in one
// Store: per session and in total. A result that would pass a bound is
// not stored: OffloadToolResult leaves it in the context as it is
// (Offloaded.OverBudget), so nothing is lost nor half-written, and what
// was stored before stays readable.
//
// The bytes the store already holds are counted once, at the first write
// (or by Count), from its listings (the artifacts' sizes and session_id
// metadata), so that a store reopened after a restart is counted whole;
// after that each write adds its bytes, without another scan. When a
// result would pass a bound, the store is counted again (at most once a
// minute) before it is refused, so that what retention or a rolled-back
// request removed is not held against the budget.
//
// Share one Budget between the Workspaces over one store (a proxy's
// sessions) so that the total is theirs together. It is safe for
// concurrent use.
type Budget struct {
	store          Store
	session, total int64 // the bounds; < 0: none
	now            func() time.Time
	log            *slog.Logger

	mu        sync.Mutex
	counted   bool
	lastCount time.Time
	used      int64
	bySession map[budgetKey]int64
	warned    map[budgetKey]bool
}

type budgetKey struct{ namespace, session string }

// NewBudget returns a Budget over store. The zero BudgetOptions means
// the documented defaults.
func NewBudget(store Store, opts BudgetOptions) *Budget {
	b := &Budget{store: store, session: bound(opts.SessionBytes, DefaultSessionBytes), total: bound(opts.TotalBytes, DefaultTotalBytes),
		now: opts.Now, log: opts.Logger, bySession: map[budgetKey]int64{}, warned: map[budgetKey]bool{}}
	if b.now == nil {
		b.now = time.Now
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	return b
}

func bound(n, def int64) int64 {
	switch {
	case n == 0:
		return def
	case n < 0:
		return -1
	}
	return n
}

// Limits returns the budget's bounds, per session and in total; -1 means
// none.
func (b *Budget) Limits() (session, total int64) { return b.session, b.total }

// Used returns the bytes counted, for the session of namespace and in
// total (0, 0 before the store was counted).
func (b *Budget) Used(namespace, sessionID string) (session, total int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bySession[budgetKey{namespace, sessionID}], b.used
}

// Count counts the tool results the store holds, every namespace, from
// its listings, and makes them the budget's count. A Budget counts itself
// at its first write; Count lets a program do it at start, under its own
// deadline.
func (b *Budget) Count(ctx context.Context) error {
	if b.session < 0 && b.total < 0 {
		return nil
	}
	nss, err := b.store.Namespaces(ctx)
	if err != nil {
		return err
	}
	var used int64
	by := map[budgetKey]int64{}
	for _, ns := range nss {
		infos, err := b.store.Query(ctx, ns, Filter{Metadata: Metadata{KeyContextType: ContextToolResult}})
		if err != nil {
			return err
		}
		for _, in := range infos {
			used += int64(in.Bytes)
			by[budgetKey{ns, in.Metadata[KeySessionID]}] += int64(in.Bytes)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.counted, b.lastCount, b.used, b.bySession = true, b.now(), used, by
	return nil
}

// reserve takes n bytes of the budget for a result of the session about
// to be stored, and reports whether they fit; release gives them back
// when the write did not happen. The first reservation counts the store;
// a count that fails leaves the write allowed (a budget is no reason to
// refuse work) and is tried again at the next recount time.
func (b *Budget) reserve(ctx context.Context, namespace, sessionID string, n int64) bool {
	if b == nil || b.session < 0 && b.total < 0 {
		return true
	}
	k := budgetKey{namespace, sessionID}
	b.mu.Lock()
	due := !b.lastCount.IsZero() && b.now().Sub(b.lastCount) < budgetRecount
	first := !b.counted && !due
	b.mu.Unlock()
	if first {
		b.recount(ctx)
	}
	b.mu.Lock()
	over := b.over(k, n)
	if over != "" && b.now().Sub(b.lastCount) >= budgetRecount {
		b.mu.Unlock()
		b.recount(ctx)
		b.mu.Lock()
		over = b.over(k, n)
	}
	if over == "" {
		b.used += n
		b.bySession[k] += n
		b.mu.Unlock()
		return true
	}
	warn := !b.warned[k]
	b.warned[k] = true
	limit := b.session
	if over == "total" {
		limit = b.total
	}
	session, total := b.bySession[k], b.used
	b.mu.Unlock()
	if warn {
		b.log.WarnContext(ctx, "workspace: byte budget reached: tool results of this session stay in the context, not stored",
			"namespace", namespace, "session", sessionID, "budget", over, "budget_bytes", limit,
			"session_bytes", session, "total_bytes", total)
	}
	return false
}

// over names the bound n more bytes of session k would pass: "session",
// "total" or "" for none. b.mu is held.
func (b *Budget) over(k budgetKey, n int64) string {
	switch {
	case b.session >= 0 && b.bySession[k]+n > b.session:
		return "session"
	case b.total >= 0 && b.used+n > b.total:
		return "total"
	}
	return ""
}

// recount counts the store again; on failure it keeps the count it had
// and notes the time, so that it is not retried at every write.
func (b *Budget) recount(ctx context.Context) {
	if err := b.Count(ctx); err != nil {
		b.log.WarnContext(ctx, "workspace: cannot count the store's bytes for the byte budget", "error", err)
		b.mu.Lock()
		b.lastCount = b.now()
		b.mu.Unlock()
	}
}

// release gives back n bytes reserved for session k.
func (b *Budget) release(namespace, sessionID string, n int64) {
	if b == nil || b.session < 0 && b.total < 0 {
		return
	}
	k := budgetKey{namespace, sessionID}
	b.mu.Lock()
	b.used -= n
	b.bySession[k] -= n
	b.mu.Unlock()
}
