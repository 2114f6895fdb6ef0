package sessiontest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/session"
)

// RunLedger checks the contract of session.Ledger on the ledger a store
// keeps (session.LedgerOf). newStores returns two new stores over one new,
// empty backend (two processes sharing a directory, a SQLite file or a
// database; two stores over one memsession.Driver); RunLedger closes them.
func RunLedger(t *testing.T, newStores func(t *testing.T) (a, b session.Store)) {
	t.Helper()
	for _, r := range ledgerRules {
		t.Run(r.name, func(t *testing.T) {
			a, b := newStores(t)
			defer a.Close()
			defer b.Close()
			la, err := session.LedgerOf(a)
			if err != nil {
				t.Fatalf("LedgerOf: %v", err)
			}
			lb, err := session.LedgerOf(b)
			if err != nil {
				t.Fatalf("LedgerOf: %v", err)
			}
			r.run(t, ledgerPair{a, b, la, lb})
		})
	}
}

type ledgerPair struct {
	a, b   session.Store
	la, lb session.Ledger
}

type ledgerRule struct {
	name string
	run  func(t *testing.T, p ledgerPair)
}

// t0 is a time in a zone other than UTC, with nanoseconds.
var t0 = time.Date(2026, 12, 3, 14, 5, 6, 789_123_456, time.FixedZone("X", 3600))

func entry(i int, at time.Time, sess string) session.LedgerEntry {
	return session.LedgerEntry{Time: at, Session: sess, Namespace: "default", API: "anthropic", Model: "claude-sonnet-4-5",
		Client: "claude-code", Project: "/home/u/proj", InputTokens: int64(100 + i), CacheReadTokens: int64(2000 + i),
		CacheWriteTokens: int64(300 + i), OutputTokens: int64(40 + i), CostUSD: 0.0125 + float64(i)/1000,
		CostWithoutUSD: 0.03 + float64(i)/1000, Compacted: i%3 == 0, Edited: i%2 == 0}
}

func query(t *testing.T, l session.Ledger, f session.LedgerFilter) []session.LedgerEntry {
	t.Helper()
	got, err := l.Query(ctx, f)
	if err != nil {
		t.Fatalf("Query(%+v): %v", f, err)
	}
	if got == nil {
		t.Fatalf("Query(%+v) = nil, want an empty result", f)
	}
	return got
}

func ids(es []session.LedgerEntry) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.InputTokens - 100
	}
	return out
}

var ledgerRules = []ledgerRule{
	{"empty_query_is_empty", func(t *testing.T, p ledgerPair) {
		if got := query(t, p.la, session.LedgerFilter{}); len(got) != 0 {
			t.Fatalf("Query of an empty ledger = %d entries", len(got))
		}
	}},
	{"entries_kept_field_for_field", func(t *testing.T, p ledgerPair) {
		in := []session.LedgerEntry{entry(0, t0, "s1"), entry(1, t0.Add(time.Second), "s2")}
		in[1].Project, in[1].Namespace, in[1].Compacted, in[1].Edited = "", "", false, false
		if err := p.la.Append(ctx, in); err != nil {
			t.Fatal(err)
		}
		got := query(t, p.la, session.LedgerFilter{})
		want := append([]session.LedgerEntry(nil), in...)
		for i := range want {
			want[i].Time = want[i].Time.UTC().Truncate(time.Millisecond)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Query =\n%+v\nwant\n%+v", got, want)
		}
		if got[0].Time.Location() != time.UTC {
			t.Fatalf("Time in %v, want UTC", got[0].Time.Location())
		}
	}},
	{"text_valid_utf8_without_nul", func(t *testing.T, p ledgerPair) {
		e := entry(0, t0, "s\x00\xff1")
		e.Model = "m\xfe\x00x"
		if err := p.la.Append(ctx, []session.LedgerEntry{e}); err != nil {
			t.Fatal(err)
		}
		got := query(t, p.la, session.LedgerFilter{})
		if len(got) != 1 || got[0].Session != "s\uFFFD1" || got[0].Model != "m\uFFFDx" {
			t.Fatalf("Query = %+v, want session %q model %q", got, "s\uFFFD1", "m\uFFFDx")
		}
	}},
	{"ordered_by_time_then_append", func(t *testing.T, p ledgerPair) {
		batch := []session.LedgerEntry{entry(0, t0.Add(2*time.Hour), "s"), entry(1, t0, "s"), entry(2, t0.Add(time.Hour), "s")}
		if err := p.la.Append(ctx, batch); err != nil {
			t.Fatal(err)
		}
		for i := 3; i < 6; i++ { // equal times: the order of Append
			if err := p.la.Append(ctx, []session.LedgerEntry{entry(i, t0.Add(time.Hour), "s")}); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := ids(query(t, p.la, session.LedgerFilter{})), []int64{1, 2, 3, 4, 5, 0}; !reflect.DeepEqual(got, want) {
			t.Fatalf("order = %v, want %v", got, want)
		}
	}},
	{"filter_selects", func(t *testing.T, p ledgerPair) {
		var in []session.LedgerEntry
		for i := range 6 {
			in = append(in, entry(i, t0.Add(time.Duration(i)*time.Hour), fmt.Sprint("s", i%2)))
		}
		if err := p.la.Append(ctx, in); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			f    session.LedgerFilter
			want []int64
		}{
			{"all", session.LedgerFilter{}, []int64{0, 1, 2, 3, 4, 5}},
			{"since_inclusive", session.LedgerFilter{Since: t0.Add(3 * time.Hour)}, []int64{3, 4, 5}},
			{"until_exclusive", session.LedgerFilter{Until: t0.Add(2 * time.Hour)}, []int64{0, 1}},
			{"range", session.LedgerFilter{Since: t0.Add(time.Hour), Until: t0.Add(4 * time.Hour)}, []int64{1, 2, 3}},
			{"session", session.LedgerFilter{Session: "s1"}, []int64{1, 3, 5}},
			{"session_and_range", session.LedgerFilter{Session: "s0", Since: t0.Add(time.Hour)}, []int64{2, 4}},
			{"no_such_session", session.LedgerFilter{Session: "nobody"}, []int64{}},
		} {
			t.Run(c.name, func(t *testing.T) {
				// Since and Until truncated as times are (t0's milliseconds).
				f := c.f
				if !f.Since.IsZero() {
					f.Since = f.Since.Truncate(time.Millisecond)
				}
				if !f.Until.IsZero() {
					f.Until = f.Until.Truncate(time.Millisecond)
				}
				if got := ids(query(t, p.lb, f)); !reflect.DeepEqual(got, c.want) {
					t.Fatalf("Query(%+v) = %v, want %v", f, got, c.want)
				}
			})
		}
	}},
	{"scan_yields_what_query_returns", func(t *testing.T, p ledgerPair) {
		var in []session.LedgerEntry
		for i := range 6 {
			in = append(in, entry(i, t0.Add(time.Duration(5-i)*time.Hour), fmt.Sprint("s", i%2)))
		}
		if err := p.la.Append(ctx, in); err != nil {
			t.Fatal(err)
		}
		for _, f := range []session.LedgerFilter{{}, {Session: "s1"}, {Since: t0.Add(2 * time.Hour).Truncate(time.Millisecond)}, {Session: "nobody"}} {
			var got []session.LedgerEntry
			if err := p.lb.Scan(ctx, f, func(e session.LedgerEntry) error {
				got = append(got, e)
				return nil
			}); err != nil {
				t.Fatalf("Scan(%+v): %v", f, err)
			}
			want := query(t, p.lb, f)
			slices.SortStableFunc(got, func(a, b session.LedgerEntry) int { return a.Time.Compare(b.Time) })
			if len(got) != len(want) || len(want) > 0 && !reflect.DeepEqual(got, want) {
				t.Fatalf("Scan(%+v) yields %v, Query returns %v", f, ids(got), ids(want))
			}
		}
	}},
	{"scan_stops_at_the_callers_error", func(t *testing.T, p ledgerPair) {
		if err := p.la.Append(ctx, []session.LedgerEntry{entry(0, t0, "s"), entry(1, t0, "s"), entry(2, t0, "s")}); err != nil {
			t.Fatal(err)
		}
		stop := errors.New("enough")
		calls := 0
		err := p.la.Scan(ctx, session.LedgerFilter{}, func(session.LedgerEntry) error {
			calls++
			return stop
		})
		if !errors.Is(err, stop) || calls != 1 {
			t.Fatalf("Scan whose fn fails: %v after %d calls, want the fn's error after 1", err, calls)
		}
	}},
	{"shared_by_stores_over_one_backend", func(t *testing.T, p ledgerPair) {
		if err := p.la.Append(ctx, []session.LedgerEntry{entry(0, t0, "s")}); err != nil {
			t.Fatal(err)
		}
		if err := p.lb.Append(ctx, []session.LedgerEntry{entry(1, t0.Add(time.Second), "s")}); err != nil {
			t.Fatal(err)
		}
		for name, l := range map[string]session.Ledger{"a": p.la, "b": p.lb} {
			if got := ids(query(t, l, session.LedgerFilter{})); !reflect.DeepEqual(got, []int64{0, 1}) {
				t.Fatalf("store %s sees %v, want [0 1]", name, got)
			}
		}
	}},
	{"concurrent_appends_all_kept", func(t *testing.T, p ledgerPair) {
		const workers, each = 6, 10
		var wg sync.WaitGroup
		errs := make(chan error, workers*each)
		for w := range workers {
			l := []session.Ledger{p.la, p.lb}[w%2]
			wg.Go(func() {
				for i := range each {
					if err := l.Append(ctx, []session.LedgerEntry{entry(w*each+i, t0, "s")}); err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		got := ids(query(t, p.la, session.LedgerFilter{}))
		seen := map[int64]bool{}
		for _, id := range got {
			seen[id] = true
		}
		if len(got) != workers*each || len(seen) != workers*each {
			t.Fatalf("%d entries (%d distinct) after %d appends", len(got), len(seen), workers*each)
		}
	}},
	{"cancelled_ctx_records_nothing", func(t *testing.T, p ledgerPair) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := p.la.Append(cctx, []session.LedgerEntry{entry(0, t0, "s")}); !errors.Is(err, context.Canceled) {
			t.Fatalf("Append with a cancelled ctx: %v, want context.Canceled", err)
		}
		if _, err := p.la.Query(cctx, session.LedgerFilter{}); !errors.Is(err, context.Canceled) {
			t.Fatalf("Query with a cancelled ctx: %v, want context.Canceled", err)
		}
		if err := p.la.Scan(cctx, session.LedgerFilter{}, func(session.LedgerEntry) error { return nil }); !errors.Is(err, context.Canceled) {
			t.Fatalf("Scan with a cancelled ctx: %v, want context.Canceled", err)
		}
		if got := query(t, p.la, session.LedgerFilter{}); len(got) != 0 {
			t.Fatalf("%d entries recorded by a cancelled Append", len(got))
		}
	}},
	{"closed_store_fails", func(t *testing.T, p ledgerPair) {
		p.a.Close()
		if err := p.la.Append(ctx, []session.LedgerEntry{entry(0, t0, "s")}); !errors.Is(err, session.ErrClosed) {
			t.Fatalf("Append after Close: %v, want ErrClosed", err)
		}
		if _, err := p.la.Query(ctx, session.LedgerFilter{}); !errors.Is(err, session.ErrClosed) {
			t.Fatalf("Query after Close: %v, want ErrClosed", err)
		}
		if err := p.la.Scan(ctx, session.LedgerFilter{}, func(session.LedgerEntry) error { return nil }); !errors.Is(err, session.ErrClosed) {
			t.Fatalf("Scan after Close: %v, want ErrClosed", err)
		}
		if got := query(t, p.lb, session.LedgerFilter{}); len(got) != 0 {
			t.Fatalf("%d entries recorded after Close", len(got))
		}
	}},
}
