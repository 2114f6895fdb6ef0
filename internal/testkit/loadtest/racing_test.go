package loadtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/pgstore"
)

// TestFleetRacingWriters is the fleet with racing writers on reused tool
// call ids (issue 24 item 3): in each trial, sessions on both replicas send
// at once a request whose one large tool result has the same tool call id
// in every session and a different output in each, so that the replicas
// race to store tool_result_<id> in the shared database. Every reference
// the upstream receives must resolve to its own session's output: a
// writer that loses the race takes the next suffixed id, and its reference
// names it.
func TestFleetRacingWriters(t *testing.T) {
	t.Parallel() // its own server, upstreams and replicas
	const trials, sessions = 4, 8
	ctx := t.Context()
	pg := pgServer(t)
	bin := buildAgentctx(t)
	db, err := pg.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	up := newUpstream(t, false)
	// No compaction: each request is one exchange, and the limit is far.
	reps := []*replica{
		startReplica(t, bin, db, up.URL(), 200_000, "a"),
		startReplica(t, bin, db, up.URL(), 200_000, "b"),
	}
	st, err := pgstore.Open(ctx, db, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	client := &http.Client{Timeout: time.Minute}
	wrong, checked := 0, 0
	ids := map[string]bool{}
	for r := range trials {
		start := make(chan struct{})
		var wg sync.WaitGroup
		errs := make([]error, sessions)
		for s := range sessions {
			wg.Go(func() {
				<-start
				name := raceSession(r, s)
				errs[s] = send(ctx, client, reps[s%len(reps)], name, name, raceBody(r, s))
			})
		}
		close(start)
		wg.Wait()
		for s := range sessions {
			if errs[s] != nil {
				t.Fatalf("trial %d, session %d: %v", r, s, errs[s])
			}
			name := raceSession(r, s)
			up.mu.Lock()
			bodies := up.bodies[name]
			up.mu.Unlock()
			if len(bodies) != 1 {
				t.Fatalf("%s: the upstream received %d requests, want 1", name, len(bodies))
			}
			m := knowledgeRef.FindAllSubmatch(bodies[0], -1)
			if len(m) != 1 {
				t.Errorf("%s: %d references in the request, want 1", name, len(m))
				continue
			}
			id := string(m[0][1])
			ids[id] = true
			a, err := st.Get(ctx, workspace.DefaultNamespace, id)
			if err != nil {
				t.Errorf("%s: artifact %s: %v", name, id, err)
				continue
			}
			checked++
			if a.Content != raceOutput(r, s) {
				wrong++
				t.Errorf("%s: its reference %s resolves to another session's output (%.40q)", name, id, a.Content)
			}
		}
	}
	for _, rep := range reps {
		rep.stop(t)
		rep.logProblems(t)
	}
	if len(ids) != trials*sessions {
		t.Errorf("%d distinct artifacts named for %d different outputs", len(ids), trials*sessions)
	}
	t.Logf("racing writers: %d trials × %d sessions on 2 replicas, one tool call id per trial: %d references checked, %d wrong, %d distinct artifacts",
		trials, sessions, checked, wrong, len(ids))
}

func raceSession(r, s int) string { return fmt.Sprintf("race-%d-%02d", r, s) }

// raceOutput is session s's output in trial r: large enough to be
// offloaded (--inline-limit 8000).
func raceOutput(r, s int) string {
	var b strings.Builder
	for i := 1; i <= 300; i++ {
		fmt.Fprintf(&b, "trial %d session %d line %d: padding-padding-padding\n", r, s, i)
	}
	return b.String()
}

// raceBody is session s's request in trial r: one exchange whose tool call
// id is the same in every session of the trial.
func raceBody(r, s int) []byte {
	id := fmt.Sprintf("toolu_reused_%02d", r)
	b, _ := json.Marshal(map[string]any{
		"model":      "fake-model",
		"max_tokens": 1024,
		"system":     "You are the load test's agent.",
		"tools": []any{map[string]any{"name": "Bash", "description": "Run a shell command.",
			"input_schema": map[string]any{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}}}}},
		"messages": []any{
			map[string]any{"role": "user", "content": fmt.Sprintf("Session %d of trial %d: run the step.", s, r)},
			map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": "./step"}},
			}},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": id, "content": raceOutput(r, s)},
			}},
		},
	})
	return b
}
