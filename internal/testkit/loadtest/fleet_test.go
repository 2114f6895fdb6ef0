package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/internal/testkit/testbin"

	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/prune"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/pgstore"
)

// headerKey names the request of the load test ("session/step") to the
// recording upstream; the proxy forwards it like any client header.
const headerKey = "X-Loadtest-Request"

// config is one load run.
type config struct {
	Sessions, Requests int
	// Limit is the proxy's --limit: small enough that every session
	// compacts within its requests.
	Limit int
	// Concurrency bounds the sessions in flight; 0 means all at once.
	Concurrency int
	// KillAt kills replica 1 with SIGKILL once this many requests have
	// been answered; 0 kills none.
	KillAt int
	// Seed picks the replica of each request.
	Seed uint64
	// ThinkTime is the pause between an answer and the session's next
	// request: the agent running its tool. With none, the next request
	// races the proxy's recording of the answer's usage (see
	// TestLateUsageChangesNothing).
	ThinkTime time.Duration
	// NoUsage strips the usage from the upstream's answers, which takes
	// the recording of usage, and its race with the next request, out.
	NoUsage bool
}

// TestFleetShort is the short form of the load test that `go test ./...`
// runs: both replicas, a few sessions, no kill, usage reported as the real
// API does (the proxy names the request a usage is for, so its late
// arrival changes nothing: TestLateUsageChangesNothing).
func TestFleetShort(t *testing.T) {
	t.Parallel() // its own server, upstreams and replicas
	runFleet(t, config{Sessions: 6, Requests: 6, Limit: 2000, Seed: 17})
}

// runFleet runs a control (one replica alone, its own database) and then
// the fleet (two replicas sharing another database) with the same
// sessions, and checks the fleet against the control.
func runFleet(t *testing.T, cfg config) {
	ctx := t.Context()
	pg := pgServer(t)
	bin := buildAgentctx(t)

	controlDB, err := pg.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ctlUp := newUpstream(t, cfg.NoUsage)
	ctl := startReplica(t, bin, controlDB, ctlUp.URL(), cfg.Limit, "control")
	ctlCfg := cfg
	ctlCfg.KillAt = 0
	ctlRun := drive(ctx, t, ctlCfg, []*replica{ctl}, ctlUp)
	if len(ctlRun.errors) > 0 {
		t.Fatalf("control run (one replica): %d errors, first: %s", len(ctlRun.errors), ctlRun.errors[0])
	}
	ctlStats := ctl.stats(t)
	ctl.stop(t)

	fleetDB, err := pg.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	up := newUpstream(t, cfg.NoUsage)
	reps := []*replica{
		startReplica(t, bin, fleetDB, up.URL(), cfg.Limit, "a"),
		startReplica(t, bin, fleetDB, up.URL(), cfg.Limit, "b"),
	}
	run := drive(ctx, t, cfg, reps, up)
	var fleetStats []sessionStats
	for _, r := range reps {
		if !r.killed.Load() {
			fleetStats = append(fleetStats, r.stats(t)...)
		}
	}
	for _, r := range reps {
		r.stop(t)
	}
	for _, r := range append(reps, ctl) {
		r.logProblems(t)
	}

	for _, e := range run.errors {
		t.Errorf("fleet: %s", e)
	}
	checkUpstream(t, "control", ctlUp, cfg)
	checkUpstream(t, "fleet", up, cfg)
	if !checkSameAsControl(t, cfg, ctlUp, up) {
		// Which replica prepared each request of a diverging session,
		// and when, to tell a race from a replica's own state.
		for s := range cfg.Sessions {
			for k := range cfg.Requests {
				key := fmt.Sprintf("%s/%d", sessionName(s), k)
				if a, b := up.bodies[key], ctlUp.bodies[key]; len(a) > 0 && len(b) > 0 && !bytes.Equal(a[0], b[0]) {
					for j := range cfg.Requests {
						key := fmt.Sprintf("%s/%d", sessionName(s), j)
						t.Logf("%s: fleet %s; control %s", key, run.trace[key], ctlRun.trace[key])
					}
					break
				}
			}
		}
		if d := os.Getenv("LOADTEST_DEBUG"); d != "" {
			for _, r := range append(reps, ctl) {
				b, _ := os.ReadFile(r.log)
				os.WriteFile(filepath.Join(d, r.name+".log"), b, 0o644)
			}
		}
	}
	checkArtifacts(t, bin, fleetDB, cfg, up)
	checkSameStore(t, controlDB, fleetDB, cfg, ctlUp, up)

	perReplica := map[string]int{}
	for _, r := range reps {
		perReplica[r.name] = int(r.served.Load())
	}
	ctlComp, fleetComp, ctlBreaks, breaks, statErrs := 0, 0, 0, 0, 0
	for _, st := range ctlStats {
		ctlComp += st.Compactions
		ctlBreaks += st.CacheBreaks
	}
	for _, st := range fleetStats {
		fleetComp += st.Compactions
		breaks += st.CacheBreaks
		statErrs += st.Errors
	}
	if statErrs > 0 {
		t.Errorf("the replicas' stats count %d errors", statErrs)
	}
	if ctlComp == 0 {
		t.Errorf("the control compacted no session: raise the load or lower the limit")
	}
	if cfg.KillAt == 0 && fleetComp != ctlComp {
		t.Errorf("the fleet compacted %d times, one replica alone %d times: a session compacted twice or not at all", fleetComp, ctlComp)
	}
	twice := 0
	up.mu.Lock()
	for _, b := range up.bodies {
		twice += len(b) - 1
	}
	up.mu.Unlock()
	t.Logf("sessions %d × requests %d; answered by replica: %v; requests sent again after the kill: %d, of which %d had reached the upstream from the killed replica (and were prepared the same again)",
		cfg.Sessions, cfg.Requests, perReplica, run.failovers, twice)
	// A replica counts a cache break against the last request it sent
	// itself for the session, so the fleet's count is not comparable; the
	// bytes are (checkSameAsControl).
	t.Logf("compactions: control %d, fleet %d (of the replicas alive at the end); cache breaks counted: control %d, fleet replicas %d", ctlComp, fleetComp, ctlBreaks, breaks)
	logOverhead(t, "control (1 replica)", ctlRun, ctlStats)
	logOverhead(t, "fleet (2 replicas)", run, fleetStats)
}

// buildAgentctx returns the agentctx binary, built once per source tree
// (internal/testkit/testbin).
func buildAgentctx(t *testing.T) string {
	t.Helper()
	return testbin.Agentctx(t)
}

// upstream is the fake upstream behind a recorder that files each model
// request under its load-test key, with when it arrived.
type upstream struct {
	fake *fakeupstream.Server
	srv  *httptest.Server

	mu      sync.Mutex
	bodies  map[string][][]byte // every arrival of a request, in order
	arrived map[string]time.Time
	unkeyed int
	// noUsage strips the usage from the answers: the proxy then has no
	// usage to record (config.NoUsage).
	noUsage bool
}

func newUpstream(t *testing.T, noUsage bool) *upstream {
	u := &upstream{
		noUsage: noUsage,
		fake:    fakeupstream.New(fakeupstream.Options{ContextWindow: 200_000, Script: script}),
		bodies:  map[string][][]byte{},
		arrived: map[string]time.Time{},
	}
	u.srv = httptest.NewServer(u)
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) URL() string { return u.srv.URL }

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		// A replica killed while it sent the request: the upstream never
		// gets the whole request, so it does not answer it.
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(raw))
	u.mu.Lock()
	if k := r.Header.Get(headerKey); k != "" {
		u.bodies[k] = append(u.bodies[k], raw)
		u.arrived[k] = now
	} else {
		u.unkeyed++
	}
	u.mu.Unlock()
	if !u.noUsage {
		u.fake.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	u.fake.ServeHTTP(rec, r)
	var m map[string]any
	if json.Unmarshal(rec.Body.Bytes(), &m) == nil {
		delete(m, "usage")
		b, _ := json.Marshal(m)
		rec.Body = bytes.NewBuffer(b)
	}
	w.Header().Set("Content-Type", rec.Header().Get("Content-Type"))
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
}

func (u *upstream) arrival(key string) (time.Time, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	at, ok := u.arrived[key]
	return at, ok
}

// script is the model: it answers every request with a tool call. The
// sessions do not follow it (their histories are fixed, so that the
// control and the fleet send the same requests), but the proxy reads its
// usage.
func script(c *fakeupstream.Call) fakeupstream.Reply {
	return fakeupstream.Reply{Text: "Next step.", ToolCalls: []fakeupstream.ToolCall{{Name: "Bash", Input: map[string]any{"command": "true"}}}}
}

// The sessions' content: each request is the history of the one before,
// grown by one tool exchange. Even steps print a large output (offloaded),
// odd steps a middling one (kept whole, pruned once stale); every
// assistant turn carries a long plan, so that the history outgrows the
// limit and compacts.

func sessionName(s int) string { return fmt.Sprintf("load-%03d", s) }

func toolID(s, j int) string { return fmt.Sprintf("toolu_%03d_%03d", s, j) }

func toolOutput(s, j int) string {
	lines := 600
	if j%2 == 1 {
		lines = 60
	}
	var b strings.Builder
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&b, "session %d step %d line %d: padding-padding-padding\n", s, j, i)
	}
	fmt.Fprintf(&b, "RESULT=%d\n", s*1000+j)
	return b.String()
}

func requestBody(s, k int) []byte {
	msgs := []any{map[string]any{"role": "user", "content": fmt.Sprintf("Session %d: run the numbered steps with Bash and report the last RESULT.", s)}}
	for j := range k {
		plan := fmt.Sprintf("Running step %d. ", j+1) + strings.Repeat(fmt.Sprintf("Plan note %d of session %d. ", j+1, s), 40)
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "text", "text": plan},
				map[string]any{"type": "tool_use", "id": toolID(s, j), "name": "Bash", "input": map[string]any{"command": fmt.Sprintf("./step %d", j+1)}},
			}},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": toolID(s, j), "content": toolOutput(s, j)},
			}})
	}
	b, _ := json.Marshal(map[string]any{
		"model":      "fake-model",
		"max_tokens": 1024,
		"system":     "You are the load test's agent.",
		"tools": []any{map[string]any{"name": "Bash", "description": "Run a shell command.",
			"input_schema": map[string]any{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}}}}},
		"messages": msgs,
	})
	return b
}

// replica is one `agentctx proxy` process.
type replica struct {
	name   string
	base   string
	cmd    *exec.Cmd
	done   chan struct{}
	log    string
	killed atomic.Bool
	served atomic.Int64
}

// startReplica starts `agentctx proxy` on a free port and reads its
// address from the ANTHROPIC_BASE_URL line it prints.
func startReplica(t *testing.T, bin, store, upURL string, limit int, name string) *replica {
	t.Helper()
	dir := t.TempDir()
	r := &replica{name: name, log: filepath.Join(dir, "proxy.log"), done: make(chan struct{})}
	logf, err := os.Create(r.log)
	if err != nil {
		t.Fatal(err)
	}
	r.cmd = exec.Command(bin, "proxy", "--listen", "127.0.0.1:0", "--store", store, "--upstream-anthropic", upURL,
		"--summarizer", "extractive", "--limit", fmt.Sprint(limit),
		"--inline-limit", "8000", "--tool", "Bash", "--max-age", "1ms", "--keep-recent", "1",
		// Batches of any stale result: the fleet exercises pruning on
		// every session, whatever the priced policy would make of it.
		"--clearing", "batched", "--clear-at-least", "500", "--clear-trigger", "-1",
		// Each replica its own directory: nothing is shared but PostgreSQL.
		"--dir", filepath.Join(dir, "archive"), "--workspace", filepath.Join(dir, "ws"))
	r.cmd.Env = cleanEnv()
	r.cmd.Stderr = logf
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logf.Close()
	go func() { r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() { r.stop(t) })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "ANTHROPIC_BASE_URL="); ok && !sent {
				addr <- v
				sent = true
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	select {
	case r.base = <-addr:
	case <-r.done:
		t.Fatalf("replica %s exited: %s\n%s", name, r.cmd.ProcessState, r.tail())
	case <-time.After(60 * time.Second):
		t.Fatalf("replica %s printed no address in 60s\n%s", name, r.tail())
	}
	return r
}

// cleanEnv is the environment of the replicas, without the variables that
// would point them at another store or a real API.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AGENTCTX_") || strings.HasPrefix(kv, "ANTHROPIC_") || strings.HasPrefix(kv, "OPENAI_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func (r *replica) tail() string {
	b, _ := os.ReadFile(r.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// logProblems logs the warnings and errors a replica logged.
func (r *replica) logProblems(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(r.log)
	if err != nil {
		t.Errorf("replica %s: %v", r.name, err)
		return
	}
	n := 0
	for line := range strings.Lines(string(b)) {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			n++
			if n <= 5 {
				t.Logf("replica %s logged: %s", r.name, strings.TrimSpace(line))
			}
		}
	}
	if n > 5 {
		t.Logf("replica %s logged %d warnings and errors in all", r.name, n)
	}
}

// kill stops the replica with SIGKILL: no shutdown, requests in flight
// cut.
func (r *replica) kill() {
	r.killed.Store(true)
	r.cmd.Process.Kill()
	<-r.done
}

// stop asks the replica to shut down (SIGINT), then kills it after 20s.
func (r *replica) stop(t *testing.T) {
	select {
	case <-r.done:
		return
	default:
	}
	r.cmd.Process.Signal(os.Interrupt)
	select {
	case <-r.done:
	case <-time.After(20 * time.Second):
		t.Errorf("replica %s did not stop on SIGINT within 20s", r.name)
		r.cmd.Process.Kill()
		<-r.done
	}
}

// sessionStats is what the load test reads of the proxy's stats.
type sessionStats struct {
	Session          string  `json:"session"`
	Requests         int     `json:"requests"`
	Errors           int     `json:"errors"`
	Compactions      int     `json:"compactions"`
	CacheBreaks      int     `json:"cache_breaks"`
	StoreTimeouts    int     `json:"store_timeouts"`
	OverheadMedianMS float64 `json:"overhead_median_ms"`
	OverheadMaxMS    float64 `json:"overhead_max_ms"`
}

func (r *replica) stats(t *testing.T) []sessionStats {
	t.Helper()
	resp, err := http.Get(r.base + "/agentctx/stats")
	if err != nil {
		t.Errorf("replica %s stats: %v", r.name, err)
		return nil
	}
	defer resp.Body.Close()
	var v struct {
		Sessions []sessionStats `json:"sessions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Errorf("replica %s stats: %v", r.name, err)
	}
	return v.Sessions
}

// runResult is what the clients saw.
type runResult struct {
	mu        sync.Mutex
	errors    []string
	overhead  []time.Duration // request sent by the client to request received by the upstream
	roundTrip []time.Duration
	failovers int
	elapsed   time.Duration
	// trace tells, per request key, which replica answered it and when.
	trace map[string]string
}

func (r *runResult) errorf(format string, args ...any) {
	r.mu.Lock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

// drive runs the sessions against the replicas: each request of a
// session, in order, to a replica picked at random; a request cut by the
// kill is sent again to a replica alive.
func drive(ctx context.Context, t *testing.T, cfg config, reps []*replica, up *upstream) *runResult {
	res := &runResult{trace: map[string]string{}}
	client := &http.Client{Timeout: 2 * time.Minute}
	conc := cfg.Concurrency
	if conc <= 0 {
		conc = cfg.Sessions
	}
	sem := make(chan struct{}, conc)
	var answered atomic.Int64
	var killOnce sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for s := range cfg.Sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			rng := rand.New(rand.NewPCG(cfg.Seed, uint64(s)))
			for k := range cfg.Requests {
				if k > 0 && cfg.ThinkTime > 0 {
					time.Sleep(cfg.ThinkTime)
				}
				key := fmt.Sprintf("%s/%d", sessionName(s), k)
				body := requestBody(s, k)
				pick := rng.IntN(len(reps))
				var ok bool
				for try := range len(reps) {
					r := reps[(pick+try)%len(reps)]
					if r.killed.Load() {
						continue
					}
					sent := time.Now()
					err := send(ctx, client, r, sessionName(s), key, body)
					if err != nil && r.killed.Load() {
						res.mu.Lock()
						res.failovers++
						res.mu.Unlock()
						continue
					}
					if err != nil {
						res.errorf("%s via replica %s: %v", key, r.name, err)
						return
					}
					r.served.Add(1)
					done := time.Now()
					at, arrived := up.arrival(key)
					res.mu.Lock()
					res.roundTrip = append(res.roundTrip, done.Sub(sent))
					res.trace[key] = fmt.Sprintf("%s sent %s answered %s", r.name, sent.Format("15:04:05.000000"), done.Format("15:04:05.000000"))
					if arrived && at.After(sent) {
						res.overhead = append(res.overhead, at.Sub(sent))
					}
					res.mu.Unlock()
					ok = true
					break
				}
				if !ok {
					res.errorf("%s: no replica answered", key)
					return
				}
				if n := answered.Add(1); cfg.KillAt > 0 && n >= int64(cfg.KillAt) && len(reps) > 1 {
					killOnce.Do(func() {
						t.Logf("killing replica %s (SIGKILL) after %d answered requests", reps[1].name, n)
						reps[1].kill()
					})
				}
			}
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

// send posts one request and checks the answer: 200 and a message.
func send(ctx context.Context, client *http.Client, r *replica, session, key string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base+"/v1/messages", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("X-Api-Key", "dummy")
	req.Header.Set("X-Agentctx-Session", session)
	req.Header.Set(headerKey, key)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	var m struct {
		Type       string `json:"type"`
		StopReason string `json:"stop_reason"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Type != "message" || m.StopReason != "tool_use" {
		return fmt.Errorf("answer is not the model's message (%v): %.200s", err, b)
	}
	return nil
}

// checkUpstream checks that the upstream received every request, rejected
// none, and that the requests show offload, prune and compaction.
func checkUpstream(t *testing.T, name string, u *upstream, cfg config) {
	t.Helper()
	for _, r := range u.fake.Records() {
		if r.Rejected != "" {
			t.Errorf("%s: the upstream rejected a request (%d bytes): %s", name, r.Size, r.Rejected)
		}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.unkeyed > 0 {
		t.Errorf("%s: the upstream received %d requests the clients did not send", name, u.unkeyed)
	}
	var offload, pruned, summary bool
	for s := range cfg.Sessions {
		for k := range cfg.Requests {
			key := fmt.Sprintf("%s/%d", sessionName(s), k)
			bodies := u.bodies[key]
			if len(bodies) == 0 {
				t.Errorf("%s: the upstream never received %s", name, key)
				continue
			}
			for _, b := range bodies {
				offload = offload || bytes.Contains(b, []byte("knowledge_list"))
				pruned = pruned || bytes.Contains(b, []byte(prune.DefaultPlaceholder)) || bytes.Contains(b, []byte(prune.EnglishPlaceholder))
				summary = summary || bytes.Contains(b, []byte(compact.SummaryTitle))
			}
		}
	}
	if !offload || !pruned || !summary {
		t.Errorf("%s: upstream requests show offload %v, prune %v, compaction %v; want all three", name, offload, pruned, summary)
	}
}

// checkSameAsControl checks that every request the fleet's upstream
// received is byte for byte the one the control's received for the same
// session and step.
func checkSameAsControl(t *testing.T, cfg config, ctl, fleet *upstream) bool {
	t.Helper()
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	fleet.mu.Lock()
	defer fleet.mu.Unlock()
	diff := 0
	for key, bodies := range fleet.bodies {
		want := ctl.bodies[key]
		if len(want) != 1 {
			t.Errorf("control received %s %d times, want once", key, len(want))
			continue
		}
		for i, b := range bodies {
			if !bytes.Equal(b, want[0]) {
				diff++
				if diff <= 3 {
					t.Errorf("%s (arrival %d of %d): the fleet sent upstream %d bytes, one replica alone %d bytes; first difference at byte %d:\nfleet:   %s\ncontrol: %s",
						key, i+1, len(bodies), len(b), len(want[0]), firstDiff(b, want[0]), around(b, firstDiff(b, want[0])), around(want[0], firstDiff(b, want[0])))
				}
			}
		}
	}
	if diff > 3 {
		t.Errorf("... %d prepared requests differ from the control in all", diff)
	}
	return diff == 0
}

func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func around(b []byte, i int) string {
	lo, hi := max(0, i-80), min(len(b), i+80)
	return fmt.Sprintf("%q", b[lo:hi])
}

var (
	knowledgeRef = regexp.MustCompile(`knowledge id=\\?"([^"\\]+)\\?"`)
	artifactRef  = regexp.MustCompile(`artifact_id=([A-Za-z0-9_.\-]+)`)
)

// checkArtifacts reads back from the fleet's database every artifact the
// upstream requests name, and every tool result the sessions sent, and
// compares each with the original output byte for byte. One is also read
// with `agentctx ws get`.
func checkArtifacts(t *testing.T, bin, store string, cfg config, u *upstream) {
	t.Helper()
	ctx := t.Context()
	st, err := pgstore.Open(ctx, store, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	type ref struct{ session, id string }
	named := map[ref]bool{}
	u.mu.Lock()
	for key, bodies := range u.bodies {
		session, _, _ := strings.Cut(key, "/")
		for _, b := range bodies {
			for _, re := range []*regexp.Regexp{knowledgeRef, artifactRef} {
				for _, m := range re.FindAllSubmatch(b, -1) {
					named[ref{session, strings.TrimRight(string(m[1]), ".,)")}] = true
				}
			}
		}
	}
	u.mu.Unlock()
	if len(named) == 0 {
		t.Error("no upstream request names an artifact")
	}
	// The original of an artifact is the output of its tool call. Every
	// output the sessions sent is read back: from its artifact, or, for a
	// small one no request names (the proxy stores those when it prunes
	// them), from the archive of the compaction that summarized it, or
	// whole in the session's last request.
	original := map[string]string{}
	sent := map[ref]bool{}
	for s := range cfg.Sessions {
		for j := range cfg.Requests - 1 {
			original[workspace.ArtifactID(toolID(s, j))] = toolOutput(s, j)
			r := ref{sessionName(s), workspace.ArtifactID(toolID(s, j))}
			if !named[r] {
				sent[r] = true
				named[r] = true
			}
		}
	}
	checked, archived := 0, 0
	for r := range named {
		a, err := st.Get(ctx, workspace.DefaultNamespace, r.id) // every session's artifacts share the namespace
		if errors.Is(err, workspace.ErrNotFound) && sent[r] && len(original[r.id]) < 4000 {
			if inArchiveOrLast(t, st, u, cfg, r.session, original[r.id]) {
				archived++
				continue
			}
		}
		if err != nil {
			t.Errorf("artifact %s of session %s: %v", r.id, r.session, err)
			continue
		}
		want, ok := original[r.id]
		if !ok {
			t.Errorf("artifact %s of session %s: named in a request, but no tool call of the session has that id", r.id, r.session)
			continue
		}
		if a.Content != want {
			t.Errorf("artifact %s of session %s: %d bytes read back, want the %d bytes of the original output", r.id, r.session, len(a.Content), len(want))
			continue
		}
		checked++
	}
	t.Logf("artifacts read back byte for byte: %d; small outputs never stored, read back from a compaction archive or sent whole last: %d", checked, archived)

	// And one through the CLI, as an operator would.
	id := workspace.ArtifactID(toolID(0, 0))
	cmd := exec.CommandContext(ctx, bin, "ws", "get", "--store", store, "--session", sessionName(0), "--max-chars", "0", id)
	cmd.Env = cleanEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Errorf("agentctx ws get %s: %v\n%s", id, err, stderr.Bytes())
	} else if string(out) != toolOutput(0, 0) {
		t.Errorf("agentctx ws get %s printed %d bytes, want the %d bytes of the original", id, len(out), len(toolOutput(0, 0)))
	}
}

// inArchiveOrLast reports whether output is in a compaction archive of
// the session, or whole in the last request the upstream received for it.
func inArchiveOrLast(t *testing.T, st workspace.Store, u *upstream, cfg config, session, output string) bool {
	t.Helper()
	enc, _ := json.Marshal(output)
	infos, err := st.Query(t.Context(), workspace.DefaultNamespace, workspace.Filter{Metadata: workspace.Metadata{
		workspace.KeySessionID: session, workspace.KeyContextType: pipeline.ContextCompactionArchive}})
	if err != nil {
		t.Fatalf("query the archives of %s: %v", session, err)
	}
	for _, in := range infos {
		if a, err := st.Get(t.Context(), workspace.DefaultNamespace, in.ID); err == nil && strings.Contains(a.Content, string(enc[1:len(enc)-1])) {
			return true
		}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	last := u.bodies[fmt.Sprintf("%s/%d", session, cfg.Requests-1)]
	return len(last) > 0 && bytes.Contains(last[len(last)-1], enc[1:len(enc)-1])
}

// logOverhead logs the latency the proxy adds: from the client's send to
// the upstream's receipt (measured here, one clock), and the replicas' own
// per-session medians and maxima.
func logOverhead(t *testing.T, name string, run *runResult, stats []sessionStats) {
	t.Helper()
	var med, mx []float64
	for _, st := range stats {
		med = append(med, st.OverheadMedianMS)
		mx = append(mx, st.OverheadMaxMS)
	}
	slices.Sort(med)
	slices.Sort(mx)
	rt := slices.Clone(run.roundTrip)
	slices.Sort(rt)
	ov := slices.Clone(run.overhead)
	slices.Sort(ov)
	t.Logf("%s: %d requests in %s (%.1f req/s); overhead (client sent to upstream received) p50 %s p99 %s max %s; round trip p50 %s p99 %s max %s",
		name, len(rt), run.elapsed.Round(time.Millisecond), float64(len(rt))/run.elapsed.Seconds(),
		pct(ov, 50), pct(ov, 99), pct(ov, 100), pct(rt, 50), pct(rt, 99), pct(rt, 100))
	if len(med) > 0 {
		t.Logf("%s: proxy /agentctx/stats overhead (received to sent upstream): median of the sessions' medians %.1f ms, p99 of the sessions' medians %.1f ms, p99 of the sessions' maxima %.1f ms, max %.1f ms",
			name, pctF(med, 50), pctF(med, 99), pctF(mx, 99), pctF(mx, 100))
	}
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	i := min(len(d)-1, (len(d)*p+99)/100-1)
	return d[max(0, i)].Round(100 * time.Microsecond)
}

func pctF(v []float64, p int) float64 {
	if len(v) == 0 {
		return 0
	}
	i := min(len(v)-1, (len(v)*p+99)/100-1)
	return v[max(0, i)]
}

// archiveRef is the id of a compaction archive (pipeline.ArchiveIDPrefix
// and 16 hex digits of the archive's SHA-256).
var archiveRef = regexp.MustCompile(`compact_[0-9a-f]{16}`)

// checkSameStore checks that the fleet's database holds, for every
// session, the tool results the control's holds (same ids, same SHA-256)
// and the same compaction archives named by the requests; that every
// archive reads back whole (its id is a hash of its content); and that
// every archive an upstream request names exists.
//
// An archive no request names is an orphan: a compaction attempt whose
// session state lost a compare-and-swap race and was run again (see
// TestCompactionRerunOnConflict). Orphans are counted, not failed: they
// lose nothing, and the prepared requests are checked byte for byte.
func checkSameStore(t *testing.T, controlDB, fleetDB string, cfg config, ctlUp, up *upstream) {
	t.Helper()
	ctx := t.Context()
	open := func(url string) workspace.Store {
		st, err := pgstore.Open(ctx, url, pgstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	ctl, fleet := open(controlDB), open(fleetDB)
	archives, orphans, ctlOrphans := 0, 0, 0
	for s := range cfg.Sessions {
		name := sessionName(s)
		ns := workspace.DefaultNamespace // every session's artifacts share it, with their session_id
		list := func(st workspace.Store) map[string]string {
			infos, err := st.Query(ctx, ns, workspace.Filter{Metadata: workspace.Metadata{workspace.KeySessionID: name}})
			if err != nil {
				t.Fatalf("query %s: %v", ns, err)
			}
			out := map[string]string{}
			for _, in := range infos {
				out[in.ID] = in.SHA256
			}
			return out
		}
		want, got := list(ctl), list(fleet)
		ctlNamed, named := namedArchives(ctlUp, name), namedArchives(up, name)
		if !maps.Equal(ctlNamed, named) {
			t.Errorf("session %s: the requests name archives %v in the fleet, %v with one replica alone", name, slices.Sorted(maps.Keys(named)), slices.Sorted(maps.Keys(ctlNamed)))
		}
		for id, sum := range want {
			if strings.HasPrefix(id, "compact_") && !ctlNamed[id] {
				ctlOrphans++
				continue
			}
			if got[id] != sum {
				t.Errorf("session %s: artifact %s: fleet SHA-256 %q, one replica alone %q", name, id, got[id], sum)
			}
		}
		for id := range got {
			if strings.HasPrefix(id, "compact_") {
				archives++
				if !named[id] {
					orphans++
				}
				checkArchive(t, fleet, ns, id)
			} else if _, ok := want[id]; !ok {
				t.Errorf("session %s: the fleet stored artifact %s, one replica alone did not", name, id)
			}
		}
		for id := range named {
			if _, ok := got[id]; !ok {
				t.Errorf("session %s: a request names archive %s, which the store lacks", name, id)
			}
		}
	}
	if archives == 0 {
		t.Error("the fleet stored no compaction archive")
	}
	t.Logf("compaction archives read back whole: %d, of which %d named by no request (orphans of compaction attempts run again after a lost compare-and-swap; the control has %d)", archives, orphans, ctlOrphans)
}

// namedArchives returns the archives the upstream requests of a session
// name.
func namedArchives(u *upstream, session string) map[string]bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := map[string]bool{}
	for key, bodies := range u.bodies {
		if s, _, _ := strings.Cut(key, "/"); s != session {
			continue
		}
		for _, b := range bodies {
			for _, m := range archiveRef.FindAll(b, -1) {
				out[string(m)] = true
			}
		}
	}
	return out
}

// checkArchive reads an archive back whole: its id is a hash of its
// content, which is a JSON list of messages.
func checkArchive(t *testing.T, st workspace.Store, ns, id string) {
	t.Helper()
	a, err := st.Get(t.Context(), ns, id)
	if err != nil {
		t.Errorf("%s: archive %s: %v", ns, id, err)
		return
	}
	sum := sha256.Sum256([]byte(a.Content))
	var msgs []json.RawMessage
	if "compact_"+hex.EncodeToString(sum[:8]) != id || json.Unmarshal([]byte(a.Content), &msgs) != nil || len(msgs) == 0 {
		t.Errorf("%s: archive %s does not read back whole (%d bytes)", ns, id, len(a.Content))
	}
}
