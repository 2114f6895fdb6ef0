// Package savings reports what agentctx saved, from the ledger the proxy
// keeps in the session store (session.Ledger): the requests, the bill,
// the estimate of the bill without agentctx and the saving, today, over 7
// and 30 days and all time, by model, client and project, and by day.
// "agentctx savings" prints it.
package savings

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"

	"github.com/agentctx/agentctx/session"
)

// Options configure Read. The zero value reports every session, days in
// the local time zone, on the wall clock.
type Options struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Location is the time zone of days ("today", Days); nil means
	// time.Local.
	Location *time.Location
	// Session, when set, reports that session key only.
	Session string
	// Daily asks for Report.Days.
	Daily bool
}

// Totals are the money of a set of requests.
type Totals struct {
	// Requests counts the answered requests.
	Requests int `json:"requests"`
	// Compactions counts the requests compacted for the first time.
	Compactions int `json:"compactions"`
	// CostUSD is the bill at list prices, summary requests included.
	CostUSD float64 `json:"cost_usd"`
	// CostWithoutUSD estimates the bill of the same requests sent as the
	// clients sent them, without summary requests.
	CostWithoutUSD float64 `json:"cost_without_usd"`
	// SavedUSD is CostWithoutUSD − CostUSD: negative when agentctx cost
	// more than it saved.
	SavedUSD float64 `json:"saved_usd"`
	// SavedPct is SavedUSD in percent of CostWithoutUSD (0 when that is 0).
	SavedPct float64 `json:"saved_pct"`
	// InputTokens counts the uncached input tokens billed.
	InputTokens int64 `json:"input_tokens"`
	// CacheReadTokens counts the input tokens read from the prompt cache.
	CacheReadTokens int64 `json:"cache_read_tokens"`
	// CacheWriteTokens counts the input tokens written to the prompt
	// cache (either lifetime).
	CacheWriteTokens int64 `json:"cache_write_tokens"`
	// OutputTokens counts the output tokens billed.
	OutputTokens int64 `json:"output_tokens"`
}

// Add adds an entry to t; Finish then sets SavedUSD and SavedPct.
func (t *Totals) Add(e session.LedgerEntry) {
	t.Requests++
	if e.Compacted {
		t.Compactions++
	}
	t.CostUSD += e.CostUSD
	t.CostWithoutUSD += e.CostWithoutUSD
	t.InputTokens += e.InputTokens
	t.CacheReadTokens += e.CacheReadTokens
	t.CacheWriteTokens += e.CacheWriteTokens
	t.OutputTokens += e.OutputTokens
}

// Finish rounds the amounts to a millionth of a dollar (the percentage to
// a hundredth) and sets SavedUSD and SavedPct.
func (t *Totals) Finish() {
	t.SavedUSD = round(t.CostWithoutUSD-t.CostUSD, 1e6)
	t.SavedPct = 0
	if t.CostWithoutUSD > 0 {
		t.SavedPct = round(100*(t.CostWithoutUSD-t.CostUSD)/t.CostWithoutUSD, 100)
	}
	t.CostUSD, t.CostWithoutUSD = round(t.CostUSD, 1e6), round(t.CostWithoutUSD, 1e6)
}

func round(v, unit float64) float64 { return math.Round(v*unit) / unit }

// Period is the totals since a time.
type Period struct {
	// Name is today, 7d, 30d or all.
	Name string `json:"name"`
	// Since is the start of the period, a midnight in Options.Location;
	// absent for all.
	Since *time.Time `json:"since,omitempty"`
	Totals
}

// Group is the totals, all time, of the requests that share a model, a
// client or a project.
type Group struct {
	// Name is the model, client or project ("" when the ledger did not
	// know it).
	Name string `json:"name"`
	Totals
}

// Day is the totals of one day.
type Day struct {
	Date string `json:"date"` // YYYY-MM-DD in Options.Location
	Totals
}

// Report is what agentctx saved.
type Report struct {
	// Session is the session key reported (--session, Options.Session);
	// absent when the report covers every session.
	Session string `json:"session,omitempty"`
	// Periods are today, the last 7 and 30 days (today included) and
	// all time.
	Periods []Period `json:"periods"`
	// ByModel groups all time by the request's model, the costliest
	// without agentctx first.
	ByModel []Group `json:"by_model"`
	// ByClient groups all time by the client's family (claude-code,
	// codex, or its User-Agent's product), the costliest without agentctx
	// first.
	ByClient []Group `json:"by_client"`
	// ByProject groups all time by the directory the client worked in,
	// the costliest without agentctx first.
	ByProject []Group `json:"by_project"`
	// Days has a row per day with requests, oldest first (Options.Daily
	// only).
	Days []Day `json:"days,omitempty"`
}

// Read reads the ledger and reports what it holds. The zero Options means
// the documented defaults.
// The ledger is read once (Scan), none of its entries held.
func Read(ctx context.Context, l session.Ledger, opts Options) (Report, error) {
	sum := newSummary(opts)
	if err := l.Scan(ctx, session.LedgerFilter{Session: opts.Session}, func(e session.LedgerEntry) error {
		sum.add(e)
		return nil
	}); err != nil {
		return Report{}, err
	}
	return sum.report(), nil
}

// Summarize reports what entries hold (Read over entries already read).
func Summarize(entries []session.LedgerEntry, opts Options) Report {
	sum := newSummary(opts)
	for _, e := range entries {
		sum.add(e)
	}
	return sum.report()
}

// summary is a Report being summed.
type summary struct {
	opts                      Options
	loc                       *time.Location
	r                         Report
	models, clients, projects map[string]*Totals
	days                      map[string]*Totals
}

func newSummary(opts Options) *summary {
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	loc := opts.Location
	if loc == nil {
		loc = time.Local
	}
	t := now().In(loc)
	midnight := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
	r := Report{Session: opts.Session}
	for _, p := range []struct {
		name string
		days int
	}{{"today", 0}, {"7d", 6}, {"30d", 29}, {"all", -1}} {
		per := Period{Name: p.name}
		if p.days >= 0 {
			since := midnight.AddDate(0, 0, -p.days)
			per.Since = &since
		}
		r.Periods = append(r.Periods, per)
	}
	return &summary{opts: opts, loc: loc, r: r, models: map[string]*Totals{}, clients: map[string]*Totals{},
		projects: map[string]*Totals{}, days: map[string]*Totals{}}
}

func (s *summary) add(e session.LedgerEntry) {
	add := func(m map[string]*Totals, k string) {
		if m[k] == nil {
			m[k] = &Totals{}
		}
		m[k].Add(e)
	}
	for i := range s.r.Periods {
		if since := s.r.Periods[i].Since; since == nil || !e.Time.Before(*since) {
			s.r.Periods[i].Add(e)
		}
	}
	add(s.models, e.Model)
	add(s.clients, e.Client)
	add(s.projects, e.Project)
	if s.opts.Daily {
		add(s.days, e.Time.In(s.loc).Format(time.DateOnly))
	}
}

func (s *summary) report() Report {
	r := s.r
	for i := range r.Periods {
		r.Periods[i].Finish()
	}
	r.ByModel, r.ByClient, r.ByProject = groups(s.models), groups(s.clients), groups(s.projects)
	if s.opts.Daily {
		r.Days = []Day{}
		for d, tot := range s.days {
			tot.Finish()
			r.Days = append(r.Days, Day{Date: d, Totals: *tot})
		}
		slices.SortFunc(r.Days, func(a, b Day) int { return cmp.Compare(a.Date, b.Date) })
	}
	return r
}

func groups(m map[string]*Totals) []Group {
	out := make([]Group, 0, len(m))
	for k, t := range m {
		t.Finish()
		out = append(out, Group{Name: k, Totals: *t})
	}
	slices.SortFunc(out, func(a, b Group) int {
		return cmp.Or(cmp.Compare(b.CostWithoutUSD, a.CostWithoutUSD), cmp.Compare(a.Name, b.Name))
	})
	return out
}
