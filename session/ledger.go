package session

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"
)

// Ledger keeps the money of answered requests, durably, beside the session
// states: one Entry per request a proxy answered (its usage, its bill and
// the estimate of the bill without agentctx), so that what agentctx saved
// outlives the process that saved it ("agentctx savings", package
// savings). A fleet of proxies sharing one store (PostgreSQL) shares one
// ledger.
//
// Contract, checked for every backend by sessiontest.RunLedger:
//
//   - Safe for concurrent use by goroutines (and, but for memsession, by
//     processes sharing the backend).
//   - Every method checks ctx first: with a cancelled ctx it returns an
//     error matching ctx.Err() and records nothing.
//   - Append records every entry given, or (on an error) possibly none of
//     them; an entry is never recorded twice by one call. Entries are kept
//     field for field (Time to the millisecond, in UTC; strings as valid
//     UTF-8 without NUL bytes, each invalid byte read as U+FFFD).
//   - Query returns the entries the filter selects, ordered by Time (the
//     order of Append for equal times within one store), none as an empty
//     result and no error; Scan yields the same entries, in any order.
//   - After the store's Close, methods fail with ErrClosed.
type Ledger interface {
	Append(ctx context.Context, entries []LedgerEntry) error
	Query(ctx context.Context, f LedgerFilter) ([]LedgerEntry, error)
	// Scan calls fn with each entry the filter selects, in no particular
	// order, holding none of them: what sums a large ledger (package
	// savings) reads with. An error of fn stops it and is returned.
	Scan(ctx context.Context, f LedgerFilter, fn func(LedgerEntry) error) error
}

// LedgerEntry is one answered request in a Ledger.
type LedgerEntry struct {
	// Time is when the request arrived.
	Time time.Time `json:"time"`
	// Session is the proxy's session key of the conversation; Namespace
	// the workspace namespace it served ("" when the proxy did not say).
	Session   string `json:"session"`
	Namespace string `json:"namespace,omitempty"`
	// API is the wire format (anthropic, openai-chat, openai-responses),
	// Model the request's model.
	API   string `json:"api"`
	Model string `json:"model"`
	// Client is the family of the client's User-Agent (claude-code,
	// codex, or the User-Agent's product name); Project the directory the
	// client worked in, when the proxy knew it ("" otherwise).
	Client  string `json:"client"`
	Project string `json:"project,omitempty"`
	// The tokens billed, summary requests included: uncached input, read
	// from the prompt cache, written to it (either lifetime), and output.
	InputTokens      int64 `json:"input_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	// CostUSD is the request's bill at list prices, its summary requests
	// included; CostWithoutUSD the estimate of the bill of the request
	// sent as the client sent it (see package proxy, "Money").
	CostUSD        float64 `json:"cost_usd"`
	CostWithoutUSD float64 `json:"cost_without_usd"`
	// Compacted says the request was sent compacted for the first time
	// (a compaction made on it); Edited that it was sent changed.
	Compacted bool `json:"compacted,omitempty"`
	Edited    bool `json:"edited,omitempty"`
}

// SavedUSD is CostWithoutUSD − CostUSD: negative when agentctx cost more
// than it saved.
func (e LedgerEntry) SavedUSD() float64 { return e.CostWithoutUSD - e.CostUSD }

// LedgerFilter selects entries of a Ledger. The zero value selects every
// entry.
type LedgerFilter struct {
	// Since and Until bound Time: Since ≤ Time < Until; a zero bound is
	// no bound.
	Since, Until time.Time
	// Session, when set, selects the entries of that session key only.
	Session string
}

// Match reports whether the filter selects e.
func (f LedgerFilter) Match(e LedgerEntry) bool {
	if !f.Since.IsZero() && e.Time.Before(f.Since) {
		return false
	}
	if !f.Until.IsZero() && !e.Time.Before(f.Until) {
		return false
	}
	return f.Session == "" || e.Session == f.Session
}

// LedgerDriver is what a backend's Driver implements to keep a Ledger:
// the I/O, called by the portable Store with a live ctx bounded by
// Options.Timeout, never after Close. Entries reach it with Time in UTC,
// truncated to the millisecond.
type LedgerDriver interface {
	AppendLedger(ctx context.Context, entries []LedgerEntry) error
	// ScanLedger calls fn with each entry f selects, in the order of
	// Append where it knows it (Query sorts them by Time, stably), Time
	// in UTC; it stops at fn's first error and returns it.
	ScanLedger(ctx context.Context, f LedgerFilter, fn func(LedgerEntry) error) error
}

// ErrNoLedger is matched by LedgerOf's error for a store that keeps no
// ledger (a driver that is no LedgerDriver).
var ErrNoLedger = errors.New("the session store keeps no ledger")

// ledgerKeeper is what LedgerOf looks for: the portable Store.
type ledgerKeeper interface{ ledger() (Ledger, bool) }

// Unwrapper is implemented by a Store that wraps another (a tracing
// wrapper, a store that closes its workspace too): LedgerOf finds the
// ledger of the store it wraps.
type Unwrapper interface{ Unwrap() Store }

// LedgerOf returns the ledger a Store keeps beside its sessions (every
// backend of this module keeps one: memsession, dirsession, sqlitesession,
// pgsession), looking through wrappers that implement Unwrapper. A store
// that keeps none is an error matching ErrNoLedger.
func LedgerOf(s Store) (Ledger, error) {
	for range 16 { // wrappers, not a cycle
		switch v := s.(type) {
		case ledgerKeeper:
			if l, ok := v.ledger(); ok {
				return l, nil
			}
			return nil, ErrNoLedger
		case Unwrapper:
			s = v.Unwrap()
		default:
			return nil, ErrNoLedger
		}
	}
	return nil, ErrNoLedger
}

// portableLedger is the Ledger of a portable Store over a LedgerDriver.
type portableLedger struct {
	s *portable
	d LedgerDriver
}

func (s *portable) ledger() (Ledger, bool) {
	d, ok := s.d.(LedgerDriver)
	if !ok {
		return nil, false
	}
	return portableLedger{s, d}, true
}

func (l portableLedger) Append(ctx context.Context, entries []LedgerEntry) error {
	ctx, cancel, err := l.s.begin(ctx, "ledger append", "", "", true)
	if err != nil {
		return err
	}
	defer cancel()
	if len(entries) == 0 {
		return nil
	}
	out := make([]LedgerEntry, len(entries))
	for i, e := range entries {
		e.Time = e.Time.UTC().Truncate(time.Millisecond)
		for _, p := range []*string{&e.Session, &e.Namespace, &e.API, &e.Model, &e.Client, &e.Project} {
			*p = cleanText(*p)
		}
		out[i] = e
	}
	return wrap(ctx, l.d.AppendLedger(ctx, out), "ledger append", "", "")
}

func (l portableLedger) Query(ctx context.Context, f LedgerFilter) ([]LedgerEntry, error) {
	out := []LedgerEntry{}
	err := l.Scan(ctx, f, func(e LedgerEntry) error {
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b LedgerEntry) int { return a.Time.Compare(b.Time) })
	return out, nil
}

func (l portableLedger) Scan(ctx context.Context, f LedgerFilter, fn func(LedgerEntry) error) error {
	ctx, cancel, err := l.s.begin(ctx, "ledger query", "", "", true)
	if err != nil {
		return err
	}
	defer cancel()
	var fnErr error
	err = l.d.ScanLedger(ctx, f, func(e LedgerEntry) error {
		if fnErr = fn(e); fnErr != nil {
			return fnErr
		}
		return nil
	})
	if err != nil && fnErr != nil && errors.Is(err, fnErr) {
		return fnErr // the caller's, as it made it
	}
	return wrap(ctx, err, "ledger query", "", "")
}

// cleanText is s as every backend keeps text: valid UTF-8, no NUL.
func cleanText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}
