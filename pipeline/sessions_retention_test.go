package pipeline

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/memsession"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/memstore"
)

// retentionFixture is a namespace with sessions of several ages and the
// artifacts they own or name, on a clock the test holds.
type retentionFixture struct {
	now time.Time
	ws  workspace.Store
	ss  session.Store
	s   *Sessions
}

func newRetentionFixture(t *testing.T) *retentionFixture {
	t.Helper()
	f := &retentionFixture{now: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC), ws: memstore.New()}
	d := memsession.NewDriver()
	d.Now = func() time.Time { return f.now }
	f.ss = session.New(d, session.Options{})
	f.s = &Sessions{Workspace: f.ws, Sessions: f.ss, Now: func() time.Time { return f.now }}
	ago := func(d time.Duration) time.Time { return f.now.Add(-d) }
	day := 24 * time.Hour
	// old: idle 40 days; owns old-own and its archive, and shared, which
	// live names in its state. mid: idle 2 days. live: a minute ago.
	f.state(t, "old", ago(40*day), map[string]string{"r1": "old-own"}, "compact_old")
	f.state(t, "mid", ago(2*day), map[string]string{"r1": "mid-own"}, "")
	f.state(t, "live", ago(time.Minute), map[string]string{"r1": "live-own", "r2": "shared"}, "")
	f.art(t, "old-own", "old", ago(40*day), 1000)
	f.art(t, "compact_old", "old", ago(40*day), 2000)
	f.art(t, "shared", "old", ago(40*day), 500)
	f.art(t, "mid-own", "mid", ago(2*day), 3000)
	f.art(t, "live-own", "live", ago(time.Minute), 100)
	f.art(t, "orphan-old", "", ago(40*day), 700)
	f.art(t, "orphan-gone-session", "vanished", ago(3*day), 800)
	f.art(t, "orphan-new", "", ago(time.Minute), 900)
	return f
}

func (f *retentionFixture) state(t *testing.T, id string, last time.Time, results map[string]string, archive string) {
	t.Helper()
	st := newState()
	st.Requests, st.LastAt = 3, last
	for k, a := range results {
		st.Results[k] = &resultState{Artifact: a, Action: actionOffloaded}
	}
	if archive != "" {
		st.Compaction = &compactionState{Archive: archive, Summary: "s"}
		st.Compactions = 1
	}
	data, _ := json.Marshal(st)
	saved := f.now
	f.now = last
	if _, err := f.ss.Save(context.Background(), "default", id, data, 0); err != nil {
		t.Fatal(err)
	}
	f.now = saved
}

func (f *retentionFixture) art(t *testing.T, id, sessionID string, created time.Time, size int) {
	t.Helper()
	md := workspace.Metadata{}
	if sessionID != "" {
		md[workspace.KeySessionID] = sessionID
	}
	content := make([]byte, size)
	for i := range content {
		content[i] = 'x'
	}
	if _, err := f.ws.Put(context.Background(), "default", workspace.Artifact{Info: workspace.Info{ID: id, Created: created, Metadata: md}, Content: string(content)}); err != nil {
		t.Fatal(err)
	}
}

func (f *retentionFixture) left(t *testing.T) (sessions, artifacts []string) {
	t.Helper()
	ss, _ := f.ss.List(context.Background(), "")
	for _, s := range ss {
		sessions = append(sessions, s.ID)
	}
	arts, _ := f.ws.Query(context.Background(), "default", workspace.Filter{})
	for _, a := range arts {
		artifacts = append(artifacts, a.ID)
	}
	slices.Sort(artifacts)
	return sessions, artifacts
}

func TestRetention(t *testing.T) {
	day := 24 * time.Hour
	for _, tc := range []struct {
		name          string
		r             Retention
		sessions      []string
		artifacts     []string
		skippedOrNone []string
	}{
		{"nothing", Retention{}, []string{"live", "mid", "old"},
			[]string{"compact_old", "live-own", "mid-own", "old-own", "orphan-gone-session", "orphan-new", "orphan-old", "shared"}, nil},
		// By age: old goes with what it owns, except shared (live names
		// it); the old artifact of no session goes, the new one stays.
		{"age 30d", Retention{MaxAge: 30 * day}, []string{"live", "mid"},
			[]string{"live-own", "mid-own", "orphan-gone-session", "orphan-new", "shared"}, nil},
		{"age 1d", Retention{MaxAge: day}, []string{"live"},
			[]string{"live-own", "orphan-new", "shared"}, nil},
		// By size: the idlest sessions first, then the oldest artifacts of
		// no session, never what was active within Live (an hour).
		{"size 0.1 KB", Retention{MaxBytes: 100}, []string{"live"},
			[]string{"live-own", "orphan-new", "shared"}, nil},
		{"size fits after old", Retention{MaxBytes: 7000}, []string{"live", "mid"},
			[]string{"live-own", "mid-own", "orphan-gone-session", "orphan-new", "orphan-old", "shared"}, nil},
		{"size without live protection", Retention{MaxBytes: 1, Live: -1}, nil, nil, nil},
		{"dry run", Retention{MaxAge: day, MaxBytes: 1, Live: -1, DryRun: true}, []string{"live", "mid", "old"},
			[]string{"compact_old", "live-own", "mid-own", "old-own", "orphan-gone-session", "orphan-new", "orphan-old", "shared"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRetentionFixture(t)
			rep, err := f.s.Prune(context.Background(), "default", tc.r)
			if err != nil {
				t.Fatal(err)
			}
			sessions, artifacts := f.left(t)
			if !slices.Equal(sessions, tc.sessions) || !slices.Equal(artifacts, tc.artifacts) {
				t.Fatalf("left sessions %q artifacts %q; want %q %q (report %+v)", sessions, artifacts, tc.sessions, tc.artifacts, rep)
			}
			if !tc.r.DryRun && tc.r.MaxBytes > 0 && rep.Remaining > tc.r.MaxBytes && tc.r.Live < 0 {
				t.Fatalf("remaining %d over %d with nothing protected", rep.Remaining, tc.r.MaxBytes)
			}
		})
	}
}

// A session saved between the moment Prune judged it and its deletion is
// left whole: its state and every artifact it owns.
type saveOnDelete struct {
	session.Store
	fired bool
}

func (s *saveOnDelete) DeleteVersion(ctx context.Context, ns, id string, v int64) error {
	if !s.fired {
		s.fired = true
		data, ver, _ := s.Load(ctx, ns, id)
		s.Save(ctx, ns, id, data, ver)
	}
	return s.Store.DeleteVersion(ctx, ns, id, v)
}

func TestRetentionSkipsASessionSavedMeanwhile(t *testing.T) {
	f := newRetentionFixture(t)
	f.s.Sessions = &saveOnDelete{Store: f.ss}
	rep, err := f.s.Prune(context.Background(), "default", Retention{MaxAge: 30 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Skipped) != 1 || rep.Skipped[0] != "default/old" || len(rep.Sessions) != 0 {
		t.Fatalf("report %+v: want old skipped", rep)
	}
	sessions, artifacts := f.left(t)
	if !slices.Contains(sessions, "old") || !slices.Contains(artifacts, "old-own") || !slices.Contains(artifacts, "compact_old") {
		t.Fatalf("old touched: %q %q", sessions, artifacts)
	}
	if slices.Contains(artifacts, "orphan-old") {
		t.Fatal("the old artifact of no session was kept")
	}
}

// When a state cannot be read, what it names is unknown: no artifact of
// no session is deleted in its namespace.
func TestRetentionUnreadableStateProtects(t *testing.T) {
	f := newRetentionFixture(t)
	if _, err := f.ss.Save(context.Background(), "default", "future", []byte(`{"schema": 99}`), 0); err != nil {
		t.Fatal(err)
	}
	list, err := f.s.List(context.Background(), "default")
	if err != nil || len(list) != 4 || list[0].ID != "future" || list[0].Unreadable == "" {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if _, err := f.s.Prune(context.Background(), "default", Retention{MaxAge: 30 * 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	_, artifacts := f.left(t)
	if !slices.Contains(artifacts, "orphan-old") {
		t.Fatal("an artifact of no session was deleted beside an unreadable state")
	}
	if slices.Contains(artifacts, "old-own") {
		t.Fatal("old's own artifact was kept")
	}
}

func TestSessionsDeleteKeepsNamedArtifacts(t *testing.T) {
	f := newRetentionFixture(t)
	rep, err := f.s.Delete(context.Background(), "default", "old", false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Artifacts != 2 {
		t.Fatalf("Delete old = %+v, want its 2 artifacts that live does not name", rep)
	}
	_, artifacts := f.left(t)
	if !slices.Contains(artifacts, "shared") || slices.Contains(artifacts, "old-own") {
		t.Fatalf("artifacts left %q", artifacts)
	}
	if _, err := f.s.Delete(context.Background(), "default", "old", false); err == nil {
		t.Fatal("second Delete found the session")
	}
	d, err := f.s.Show(context.Background(), "default", "live")
	if err != nil || d.Offloaded != 2 || len(d.ArtifactList) != 2 {
		t.Fatalf("Show live = %+v, %v: want its own and the shared artifact", d, err)
	}
}

// PruneEvery prunes at once, then at each interval, the namespaces its
// match accepts, and returns when its ctx ends.
func TestPruneEvery(t *testing.T) {
	f := newRetentionFixture(t)
	if _, err := f.ss.Save(context.Background(), "other", "old", []byte(`{}`), 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- f.s.PruneEvery(ctx, time.Hour, Retention{MaxAge: time.Nanosecond, Live: -1}, func(ns string) bool { return ns == "default" })
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if l, _ := f.ss.List(context.Background(), "default"); len(l) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no pruning")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("PruneEvery returned %v", err)
	}
	if l, _ := f.ss.List(context.Background(), "other"); len(l) != 1 {
		t.Fatalf("a namespace match refused was pruned: %+v", l)
	}
}

// An artifact that a remaining session's compaction summary points at, or
// that the summary of an earlier compaction inside one of its archives
// points at, stays: the model reads those back. The pointers are the
// summary's "Stored originals" lines.
func TestRetentionKeepsWhatSummariesName(t *testing.T) {
	f := newRetentionFixture(t)
	day := 24 * time.Hour
	f.art(t, "tool_result_ptr1", "old", f.now.Add(-40*day), 10)
	f.art(t, "tool_result_deep", "old", f.now.Add(-40*day), 10)
	f.art(t, "tool_result_unnamed", "old", f.now.Add(-40*day), 10)
	f.art(t, "compact_older", "old", f.now.Add(-40*day), 10)
	// compact_older's content: an earlier summary with its pointer.
	f.ws.Put(context.Background(), "default", workspace.Artifact{Info: workspace.Info{ID: "compact_older", Created: f.now.Add(-40 * day),
		Metadata: workspace.Metadata{workspace.KeySessionID: "old"}},
		Content: `[{"role":"user","content":"## Stored originals\n- Bash ` + "`ls`" + ` → tool_result_deep (/x/tool_result_deep.txt, 10 chars)"}]`})
	f.art(t, "compact_recent", "live", f.now.Add(-time.Minute), 10)
	f.ws.Put(context.Background(), "default", workspace.Artifact{Info: workspace.Info{ID: "compact_recent", Created: f.now.Add(-time.Minute),
		Metadata: workspace.Metadata{workspace.KeySessionID: "live"}},
		Content: `[{"role":"user","content":"earlier: originals in compact_older."}]`})
	// live's state: compacted, its summary pointing at tool_result_ptr1.
	st := newState()
	st.Requests, st.LastAt = 9, f.now.Add(-time.Minute)
	st.Compaction = &compactionState{Archive: "compact_recent", Summary: "...\n## Stored originals\n- Read → tool_result_ptr1 (12 chars)\n- archive: compact_recent"}
	data, _ := json.Marshal(st)
	_, v, _ := f.ss.Load(context.Background(), "default", "live")
	if _, err := f.ss.Save(context.Background(), "default", "live", data, v); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Prune(context.Background(), "default", Retention{MaxAge: 30 * day}); err != nil {
		t.Fatal(err)
	}
	_, artifacts := f.left(t)
	for _, keep := range []string{"tool_result_ptr1", "compact_older", "tool_result_deep", "compact_recent"} {
		if !slices.Contains(artifacts, keep) {
			t.Errorf("%s was deleted: a remaining session's summaries name it", keep)
		}
	}
	if slices.Contains(artifacts, "tool_result_unnamed") {
		t.Error("tool_result_unnamed was kept: nothing remaining names it")
	}
}

func TestMentions(t *testing.T) {
	ids := map[string]bool{"tool_result_a": true, "tool_result_a-2": true, "compact_ff": true, "tool_result_x.y": true}
	text := "see tool_result_a, `tool_result_a-2`: and (compact_ff). tool_result_x.y. \"tool_result_b\" tool_result_"
	got := mentions(text, ids)
	slices.Sort(got)
	want := []string{"compact_ff", "tool_result_a", "tool_result_a-2", "tool_result_x.y"}
	if !slices.Equal(got, want) {
		t.Fatalf("mentions = %q, want %q", got, want)
	}
}
