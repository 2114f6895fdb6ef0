package workspace_test

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/dirstore"
	"github.com/agentctx/agentctx/workspace/memstore"
)

// bigResult is a tool result of n bytes, over the inline limit when n is
// 40,000 or more.
func bigResult(tag string, n int) agentctx.Content {
	return agentctx.Text(tag + "\n" + strings.Repeat("x", n-len(tag)-1))
}

// offloadOne offloads one result and returns what goes in the context and
// what was stored.
func offloadOne(t *testing.T, ws *workspace.Workspace, id string, c agentctx.Content) (agentctx.Content, workspace.Offloaded) {
	t.Helper()
	got, off, err := ws.OffloadToolResult(ctx, workspace.ToolCall{ID: id, Name: "Bash"}, c)
	if err != nil {
		t.Fatalf("offload %s: %v", id, err)
	}
	return got, off
}

// warnLines returns the WARN lines of a text log.
func warnLines(log *bytes.Buffer) []string {
	var out []string
	for l := range strings.SplitSeq(log.String(), "\n") {
		if strings.Contains(l, "level=WARN") {
			out = append(out, l)
		}
	}
	return out
}

// TestBudgetSession: a session over its byte budget keeps its later big
// results in the context as they came (not stored, not referenced), its
// first results stay readable, one WARN line names the session and the
// budget, and another session of the same budget still stores.
func TestBudgetSession(t *testing.T) {
	for name, store := range backends(t) {
		t.Run(name, func(t *testing.T) {
			var log bytes.Buffer
			b := workspace.NewBudget(store, workspace.BudgetOptions{SessionBytes: 100_000, Now: now,
				Logger: slog.New(slog.NewTextHandler(&log, nil))})
			ws := workspace.New(store, workspace.Options{Namespace: "ns", SessionID: "s1", Now: now, Budget: b})
			first := bigResult("first", 60_000)
			got, off := offloadOne(t, ws, "t1", first)
			if !off.Indexed || off.OverBudget || got.AsText() == first.AsText() {
				t.Fatalf("first result: indexed %v, over budget %v; want stored and referenced", off.Indexed, off.OverBudget)
			}
			for _, id := range []string{"t2", "t3"} {
				later := bigResult(id, 60_000)
				got, off := offloadOne(t, ws, id, later)
				if !off.OverBudget || off.Indexed || off.ID != "" {
					t.Errorf("%s: over budget %v, indexed %v, id %q; want over budget, inline", id, off.OverBudget, off.Indexed, off.ID)
				}
				if got.AsText() != later.AsText() {
					t.Errorf("%s: the result in the context changed", id)
				}
				if _, err := store.Stat(ctx, "ns", workspace.ArtifactID(id)); err == nil {
					t.Errorf("%s: stored over the budget", id)
				}
			}
			a, err := ws.Get(ctx, workspace.ArtifactID("t1"))
			if err != nil || a.Content != first.AsText() {
				t.Fatalf("first result read back: %v", err)
			}
			// Small results of a session over its budget still fit while
			// they do.
			if _, off := offloadOne(t, ws, "small", agentctx.Text("ok")); off.OverBudget {
				t.Error("a small result within the budget was refused")
			}
			other := workspace.New(store, workspace.Options{Namespace: "ns", SessionID: "s2", Now: now, Budget: b})
			if _, off := offloadOne(t, other, "t4", bigResult("t4", 60_000)); off.OverBudget {
				t.Error("another session was refused by the first one's budget")
			}
			warns := warnLines(&log)
			if len(warns) != 1 {
				t.Fatalf("WARN lines %q, want one", warns)
			}
			for _, want := range []string{"session=s1", "budget=session", "budget_bytes=100000"} {
				if !strings.Contains(warns[0], want) {
					t.Errorf("WARN line %q lacks %q", warns[0], want)
				}
			}
			if strings.Contains(warns[0], "xxxx") {
				t.Errorf("WARN line %q holds content", warns[0])
			}
		})
	}
}

// TestBudgetTotal: the total budget is shared by the sessions of one
// Budget: the second session's result that would pass it stays inline.
func TestBudgetTotal(t *testing.T) {
	for _, tc := range []struct {
		name     string
		total    int64
		wantOver bool
	}{
		{"bounded", 100_000, true},
		{"no bound", -1, false},
		{"default", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			store := memstore.New()
			b := workspace.NewBudget(store, workspace.BudgetOptions{TotalBytes: tc.total, Now: now,
				Logger: slog.New(slog.NewTextHandler(&log, nil))})
			s1 := workspace.New(store, workspace.Options{SessionID: "s1", Now: now, Budget: b})
			s2 := workspace.New(store, workspace.Options{SessionID: "s2", Now: now, Budget: b})
			if _, off := offloadOne(t, s1, "a", bigResult("a", 60_000)); off.OverBudget {
				t.Fatal("first session refused")
			}
			res := bigResult("b", 60_000)
			got, off := offloadOne(t, s2, "b", res)
			if off.OverBudget != tc.wantOver {
				t.Fatalf("second session: over budget %v, want %v", off.OverBudget, tc.wantOver)
			}
			if tc.wantOver {
				if got.AsText() != res.AsText() {
					t.Error("the refused result changed")
				}
				if w := warnLines(&log); len(w) != 1 || !strings.Contains(w[0], "session=s2") || !strings.Contains(w[0], "budget=total") {
					t.Errorf("WARN lines %q, want one naming s2 and the total budget", w)
				}
			}
		})
	}
}

// TestBudgetCountsStoreAtRestart: a directory store reopened after a
// restart is counted whole: what the last run stored counts toward the
// new run's budgets, per session and in total.
func TestBudgetCountsStoreAtRestart(t *testing.T) {
	for _, tc := range []struct {
		name          string
		opts          workspace.Options
		session, want string
	}{
		{"total", workspace.Options{TotalBytes: 100_000}, "s2", "total"},
		{"session", workspace.Options{SessionBytes: 100_000}, "s1", "session"},
		{"other session", workspace.Options{SessionBytes: 100_000}, "s2", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "ws")
			st, err := dirstore.Open(root, dirstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			ws := workspace.New(st, workspace.Options{SessionID: "s1", Now: now})
			offloadOne(t, ws, "a", bigResult("a", 60_000))
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}

			st, err = dirstore.Open(root, dirstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			o := tc.opts
			o.SessionID, o.Now = tc.session, func() time.Time { return clock.Add(time.Hour) }
			ws = workspace.New(st, o)
			_, off := offloadOne(t, ws, "b", bigResult("b", 60_000))
			if off.OverBudget != (tc.want != "") {
				t.Fatalf("after the restart: over budget %v, want %v", off.OverBudget, tc.want != "")
			}
			if _, err := ws.Get(ctx, workspace.ArtifactID("a")); err != nil {
				t.Errorf("the first run's artifact: %v", err)
			}
		})
	}
}

// TestBudgetRecount: bytes removed from the store (retention, a refused
// request rolled back) stop counting at the next recount, a minute after
// the last at the earliest.
func TestBudgetRecount(t *testing.T) {
	store := memstore.New()
	at := clock
	b := workspace.NewBudget(store, workspace.BudgetOptions{TotalBytes: 100_000, Now: func() time.Time { return at }})
	ws := workspace.New(store, workspace.Options{SessionID: "s1", Now: now, Budget: b})
	offloadOne(t, ws, "a", bigResult("a", 60_000))
	if err := store.Delete(ctx, workspace.DefaultNamespace, workspace.ArtifactID("a")); err != nil {
		t.Fatal(err)
	}
	if _, off := offloadOne(t, ws, "b", bigResult("b", 60_000)); !off.OverBudget {
		t.Fatal("recounted sooner than a minute")
	}
	at = at.Add(time.Minute)
	if _, off := offloadOne(t, ws, "c", bigResult("c", 60_000)); off.OverBudget {
		t.Fatal("the removed artifact still counts after a minute")
	}
}

// TestBudgetOffloadList: Offload keeps a result over the budget in the
// list as it came and lists only what it stored.
func TestBudgetOffloadList(t *testing.T) {
	store := memstore.New()
	ws := workspace.New(store, workspace.Options{SessionID: "s1", Now: now, SessionBytes: 100_000})
	msgs := anthropic(t, "Bash", `{}`, bigResult("a", 60_000), bigResult("b", 60_000))
	res, err := ws.Offload(ctx, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if res.Indexed != 1 || res.Inlined != 1 || len(res.Artifacts) != 1 || res.Artifacts[0].ID != workspace.ArtifactID("toolu_01") {
		t.Fatalf("indexed %d, inlined %d, artifacts %+v; want a stored, b inline", res.Indexed, res.Inlined, res.Artifacts)
	}
	var got agentctx.Content
	for r := range agentctx.ToolResults(res.Messages) {
		if r.ID == "toolu_02" {
			got = r.Content
		}
	}
	if got.AsText() != bigResult("b", 60_000).AsText() {
		t.Error("the result over the budget changed in the list")
	}
}
