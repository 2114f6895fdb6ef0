package loadtest

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentctx/agentctx/pipeline"
)

// TestFleetStoreHang is the fleet with a store hang (issue 24 item 2):
// two replicas on one PostgreSQL serve sessions whose requests land on
// either replica; for one step of every session the database hangs (a
// transaction holds an exclusive lock on the session and artifact tables,
// as a stuck process or a stopped server would). Each request of that
// step must reach the upstream as the client sent it, byte for byte,
// within the store timeout (not the client's patience), and be counted
// as a store timeout. Once the lock is released, the sessions go on as if
// the hung step had never been prepared: every later request is byte for
// byte the one a replica alone sends for the same sessions without that
// step (the hang left no half-written state, and the usage of a request
// forwarded unedited is not taken for the last prepared one's).
func TestFleetStoreHang(t *testing.T) {
	t.Parallel() // most of its time is the store timeout, waited out: other tests run meanwhile (each has its own server, upstreams and replicas)
	const sessions, requests, hung = 4, 7, 3
	ctx := t.Context()
	pg := pgServer(t)
	bin := buildAgentctx(t)

	key := func(s, k int) string { return fmt.Sprintf("%s/%d", sessionName(s), k) }
	client := &http.Client{Timeout: time.Minute}
	// step sends request k of every session at once, session s to
	// reps[(s+k)%len(reps)], and returns how long each took.
	step := func(reps []*replica, k int) ([]time.Duration, []error) {
		took, errs := make([]time.Duration, sessions), make([]error, sessions)
		var wg sync.WaitGroup
		for s := range sessions {
			wg.Go(func() {
				start := time.Now()
				errs[s] = send(ctx, client, reps[(s+k)%len(reps)], sessionName(s), key(s, k), requestBody(s, k))
				took[s] = time.Since(start)
			})
		}
		wg.Wait()
		return took, errs
	}

	// The control: one replica alone, its own database, no hung step.
	controlDB, err := pg.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ctlUp := newUpstream(t, false)
	ctl := startReplica(t, bin, controlDB, ctlUp.URL(), 2000, "control")
	for k := range requests {
		if k == hung {
			continue
		}
		if _, errs := step([]*replica{ctl}, k); firstErr(errs) != nil {
			t.Fatalf("control, request %d: %v", k, firstErr(errs))
		}
	}
	ctl.stop(t)

	// The fleet, with the database hung for step hung.
	db, err := pg.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	up := newUpstream(t, false)
	reps := []*replica{
		startReplica(t, bin, db, up.URL(), 2000, "a"),
		startReplica(t, bin, db, up.URL(), 2000, "b"),
	}
	var hangTook []time.Duration
	for k := range requests {
		if k != hung {
			if _, errs := step(reps, k); firstErr(errs) != nil {
				t.Fatalf("fleet, request %d: %v", k, firstErr(errs))
			}
			continue
		}
		release := hold(ctx, t, db)
		took, errs := step(reps, k)
		release()
		if err := firstErr(errs); err != nil {
			t.Fatalf("fleet, request %d during the hang: %v", k, err)
		}
		hangTook = took
	}
	var timeouts, errs int
	for _, r := range reps {
		for _, st := range r.stats(t) {
			timeouts += st.StoreTimeouts
			errs += st.Errors
		}
	}
	for _, r := range reps {
		r.stop(t)
		r.logProblems(t)
	}

	for s := range sessions {
		// The hung step: forwarded as sent, within the store timeout.
		up.mu.Lock()
		got := up.bodies[key(s, hung)]
		up.mu.Unlock()
		if len(got) != 1 || !bytes.Equal(got[0], requestBody(s, hung)) {
			t.Errorf("%s: the upstream received %d requests during the hang, not the client's request as sent", key(s, hung), len(got))
		}
		// One store timeout, not two: recording the answer's usage would
		// wait on the hung store again (before: 10 s).
		if limit := pipeline.DefaultStoreTimeout * 3 / 2; hangTook[s] > limit {
			t.Errorf("%s: answered after %v during the hang, want within the store timeout (%v) and some slack", key(s, hung), hangTook[s], pipeline.DefaultStoreTimeout)
		}
		// Every other step: the same bytes as the control's.
		for k := range requests {
			if k == hung {
				continue
			}
			up.mu.Lock()
			a, b := up.bodies[key(s, k)], ctlUp.bodies[key(s, k)]
			up.mu.Unlock()
			if len(a) != 1 || len(b) != 1 {
				t.Errorf("%s: the upstream received %d requests, the control's %d; want 1", key(s, k), len(a), len(b))
				continue
			}
			if !bytes.Equal(a[0], b[0]) {
				i := firstDiff(a[0], b[0])
				t.Errorf("%s (after the hang: %v): differs from the control at byte %d:\nfleet   %s\ncontrol %s", key(s, k), k > hung, i, around(a[0], i), around(b[0], i))
			}
		}
	}
	if timeouts != sessions {
		t.Errorf("the replicas count %d store timeouts, want %d (one per request of the hung step)", timeouts, sessions)
	}
	if errs != timeouts {
		t.Errorf("the replicas' stats count %d errors, want the %d store timeouts only", errs, timeouts)
	}
	t.Logf("store hang: %d sessions × %d requests on 2 replicas, step %d during the hang: answered in %v; %d store timeouts counted",
		sessions, requests, hung, hangTook, timeouts)
}

// hold hangs the database: a transaction takes an exclusive lock on the
// session and artifact tables, which every read and write of the replicas
// waits for. release rolls it back.
func hold(ctx context.Context, t *testing.T, db string) (release func()) {
	t.Helper()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE agentctx_sessions, agentctx_artifacts, agentctx_artifact_chunks IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	return func() {
		tx.Rollback(context.Background())
		conn.Close(context.Background())
	}
}

// firstErr returns the first non-nil error of errs.
func firstErr(errs []error) error {
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("session %d: %w", i, err)
		}
	}
	return nil
}
