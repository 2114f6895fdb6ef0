package savings_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/agentctx/agentctx/savings"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/memsession"
)

var zone = time.FixedZone("X", -5*3600)

// now is 2026-12-03 10:00 in zone: today starts at 05:00 UTC.
var now = time.Date(2026, 12, 3, 10, 0, 0, 0, zone)

func ent(at time.Time, sess, model, client, project string, cost, without float64, compacted bool) session.LedgerEntry {
	return session.LedgerEntry{Time: at, Session: sess, Model: model, Client: client, Project: project,
		CostUSD: cost, CostWithoutUSD: without, Compacted: compacted, InputTokens: 10, OutputTokens: 1}
}

func ledger(t *testing.T) session.Ledger {
	s := memsession.New()
	t.Cleanup(func() { s.Close() })
	l, err := session.LedgerOf(s)
	if err != nil {
		t.Fatal(err)
	}
	err = l.Append(context.Background(), []session.LedgerEntry{
		ent(now.Add(-1*time.Hour), "a", "sonnet", "claude-code", "/p1", 0.25, 1.00, true),                      // today
		ent(time.Date(2026, 12, 3, 0, 30, 0, 0, zone), "a", "sonnet", "claude-code", "/p1", 0.25, 0.50, false), // today, early
		ent(time.Date(2026, 12, 2, 23, 59, 0, 0, zone), "b", "gpt-5", "codex", "/p2", 0.50, 0.50, false),       // yesterday
		ent(now.AddDate(0, 0, -6), "b", "gpt-5", "codex", "/p2", 1.00, 2.00, true),                             // 7d's first day
		ent(now.AddDate(0, 0, -7), "a", "sonnet", "claude-code", "/p1", 1.00, 1.00, false),                     // 30d only
		ent(now.AddDate(0, 0, -40), "c", "sonnet", "", "", 2.00, 1.00, false),                                  // all time only: cost more
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestRead(t *testing.T) {
	l := ledger(t)
	type tot struct {
		requests, compactions   int
		cost, without, saved, p float64
	}
	of := func(x savings.Totals) tot {
		return tot{x.Requests, x.Compactions, x.CostUSD, x.CostWithoutUSD, x.SavedUSD, x.SavedPct}
	}
	for _, c := range []struct {
		name    string
		opts    savings.Options
		periods map[string]tot
		models  []string
		days    map[string]tot
	}{
		{"every_session", savings.Options{},
			map[string]tot{
				"today": {2, 1, 0.5, 1.5, 1, 66.67},
				"7d":    {4, 2, 2, 4, 2, 50},
				"30d":   {5, 2, 3, 5, 2, 40},
				"all":   {6, 2, 5, 6, 1, 16.67},
			}, []string{"sonnet", "gpt-5"}, nil},
		{"one_session_daily", savings.Options{Session: "b", Daily: true},
			map[string]tot{
				"today": {}, "7d": {2, 1, 1.5, 2.5, 1, 40}, "30d": {2, 1, 1.5, 2.5, 1, 40}, "all": {2, 1, 1.5, 2.5, 1, 40},
			}, []string{"gpt-5"},
			map[string]tot{"2026-11-27": {1, 1, 1, 2, 1, 50}, "2026-12-02": {1, 0, 0.5, 0.5, 0, 0}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Now, c.opts.Location = func() time.Time { return now }, zone
			r, err := savings.Read(context.Background(), l, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Periods) != 4 {
				t.Fatalf("%d periods, want 4", len(r.Periods))
			}
			for _, p := range r.Periods {
				if got := of(p.Totals); got != c.periods[p.Name] {
					t.Errorf("%s = %+v, want %+v", p.Name, got, c.periods[p.Name])
				}
			}
			if s := r.Periods[1].Since; s == nil || !s.Equal(time.Date(2026, 11, 27, 0, 0, 0, 0, zone)) {
				t.Errorf("7d since %v, want 2026-11-27 00:00 in the zone", s)
			}
			var models []string
			for _, g := range r.ByModel {
				models = append(models, g.Name)
			}
			if !reflect.DeepEqual(models, c.models) {
				t.Errorf("by model %v, want %v (costliest without agentctx first)", models, c.models)
			}
			if c.days == nil && r.Days != nil {
				t.Errorf("days without Daily: %v", r.Days)
			}
			if c.days != nil {
				got := map[string]tot{}
				for _, d := range r.Days {
					got[d.Date] = of(d.Totals)
				}
				if !reflect.DeepEqual(got, c.days) {
					t.Errorf("days = %+v, want %+v", got, c.days)
				}
			}
		})
	}
}

func TestGroups(t *testing.T) {
	r, err := savings.Read(context.Background(), ledger(t), savings.Options{Now: func() time.Time { return now }, Location: zone})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"client":  {"claude-code", "codex", ""},
		"project": {"/p1", "/p2", ""},
	}
	for name, gs := range map[string][]savings.Group{"client": r.ByClient, "project": r.ByProject} {
		var got []string
		for _, g := range gs {
			got = append(got, g.Name)
		}
		if !reflect.DeepEqual(got, want[name]) {
			t.Errorf("by %s %v, want %v", name, got, want[name])
		}
	}
	if g := r.ByClient[0]; g.Requests != 3 || g.CostUSD != 1.5 || g.CostWithoutUSD != 2.5 || g.InputTokens != 30 {
		t.Errorf("claude-code = %+v, want 3 requests, $1.5 instead of $2.5, 30 input tokens", g)
	}
}
