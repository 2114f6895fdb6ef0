// Package tracereplay replays a recorded client session (the requests a
// real client sent, with their times on the session's clock) through the
// proxy `agentctx proxy ARGS` would serve, in this process, against the
// billing fake upstream, on a clock that reads each request's recorded
// time: the bill of the same session under other flags, in seconds
// instead of the session's wall time. It is the hindsight bound's engine
// (issue 45): the cheapest bill over a grid of policies replayed on the
// recorded trace under the same cache model.
//
// A replay is not a rerun: the client's requests stay as recorded, so a
// policy that would have made the client read back another result, or
// compact at another time, is billed as if the client had behaved as it
// did. The fake's model answers each request again (its output billed as
// it answers it), and answers the proxy's summary requests.
package tracereplay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/app/cli"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/proxy"
)

// Request is one recorded client request.
type Request struct {
	N      int         `json:"n"`
	At     time.Time   `json:"at"`
	Method string      `json:"method"`
	Path   string      `json:"path"`
	Header http.Header `json:"header"`
	// BodyFile names the body's file in the trace's directory; Body is
	// its bytes, read by Read.
	BodyFile string `json:"body"`
	Body     []byte `json:"-"`
}

// Read reads the trace in dir: requests.jsonl and the bodies it names.
func Read(dir string) ([]Request, error) {
	f, err := os.Open(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var reqs []Request
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var r Request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", dir, len(reqs)+1, err)
		}
		if r.Body, err = os.ReadFile(filepath.Join(dir, r.BodyFile)); err != nil {
			return nil, err
		}
		reqs = append(reqs, r)
	}
	return reqs, sc.Err()
}

// Meta is what a trace records besides its requests (meta.json, written
// by costsim for a proxy arm).
type Meta struct {
	// ProxyDir is the working directory of the proxy the session ran
	// through: its references name paths under it, which the model reads
	// back; a replay works in the same directory.
	ProxyDir string `json:"proxy_dir,omitempty"`
	// Workspace is the directory of the recorded proxy's workspace (its
	// default, in the user's state directory, or ProxyDir/.agentctx): the
	// paths of its stored results, which the references named and the
	// recorded model read back, are under it, and the client's later
	// requests hold those reads. A replay keeps its workspace there, so
	// that the references it sends are the recorded ones byte for byte and
	// a read of one is a read-back to its proxy, kept whole, as it was to
	// the recorded one. "" in a trace from before it was recorded.
	Workspace string `json:"workspace,omitempty"`
	// ClientDir is the recorded client's working directory: the scripted
	// model's file reads name paths under it (LongTaskOptions.Dir), and
	// their output tokens are billed.
	ClientDir string `json:"client_dir,omitempty"`
	// ClockSpeed and SlowBuild are the scripted task's
	// (LongTaskOptions): the sleeps of its commands, in the model's
	// output, are written with them. 0 in a trace from before they were
	// recorded.
	ClockSpeed float64  `json:"clock_speed,omitempty"`
	SlowBuild  Duration `json:"slow_build,omitempty"`
}

// Duration is a time.Duration written in JSON as its string ("1m0s").
type Duration time.Duration

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// ReadMeta reads the trace's meta.json in dir: the zero Meta when it has
// none.
func ReadMeta(dir string) (Meta, error) {
	var m Meta
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%s: meta.json: %w", dir, err)
	}
	return m, nil
}

// Options configure Run.
type Options struct {
	// ProxyArgs are the flags of `agentctx proxy` (the upstreams and
	// workspace are set by Run).
	ProxyArgs []string
	// Task is the scripted model's task: its steps, outputs and chaining
	// must be the recorded session's (the summaries it writes, of
	// Task.SummaryTokens, are what a compaction's output costs); Dir its
	// working directory is taken as: the recorded client's
	// (Meta.ClientDir), whose paths its file reads name; ClockSpeed and
	// SlowBuild the recorded session's (Meta), which its commands' sleeps
	// are written with (the model answers at once: NoLatency).
	Task fakeupstream.LongTaskOptions
	// ProxyDir, when set, is the directory the replayed proxy works in
	// (its archives under it, as `agentctx proxy` run there with its
	// defaults): the recorded session's (Meta.ProxyDir). It must not
	// exist (the recorded run removed it), or be a replay's; Run removes
	// it when done. "" means a temporary directory.
	ProxyDir string
	// Workspace, when set, is the replayed proxy's workspace directory:
	// the recorded proxy's (Meta.Workspace), so that the paths its
	// references named, which the recorded model read back, are the
	// replay's own, and a read-back is recognised as one (kept whole, as
	// the recorded proxy kept it: a replay that offloaded it again
	// compacted later, issue 45). It is claimed and removed as ProxyDir
	// is. "" means .agentctx in the directory the proxy works in.
	Workspace string
	// Log receives the proxy's log; nil discards it.
	Log io.Writer
}

// Result is a replay's outcome.
type Result struct {
	Bill fakeupstream.Totals
	// PerRequest is the usage of each recorded request's answer (the
	// proxy's summary requests in the request that made them).
	PerRequest []fakeupstream.Totals
	// Stats are the scripted model's.
	Stats fakeupstream.LongTaskStats
}

// clock is the replay's clock: the time of the request being replayed.
// Its timers (the proxy's keep-warm requests) run when the replay passes
// their time, each at it, before the next request.
type clock struct {
	mu     sync.Mutex
	t      time.Time
	timers []*timer
}

type timer struct {
	at      time.Time
	f       func()
	stopped bool
}

// afterFunc runs f when the replay passes d from now.
func (c *clock) afterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	tm := &timer{at: c.t.Add(d), f: f}
	c.timers = append(c.timers, tm)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !tm.stopped
		tm.stopped = true
		return was
	}
}

// advance runs the timers due by t, in their order, each on the clock
// set to its time, and sets the clock to t.
func (c *clock) advance(t time.Time) {
	for {
		c.mu.Lock()
		var next *timer
		live := c.timers[:0]
		for _, tm := range c.timers {
			if tm.stopped {
				continue
			}
			live = append(live, tm)
			if tm.at.Before(t) && (next == nil || tm.at.Before(next.at)) {
				next = tm
			}
		}
		c.timers = live
		if next == nil {
			c.mu.Unlock()
			c.set(t)
			return
		}
		next.stopped = true
		if next.at.After(c.t) {
			c.t = next.at
		}
		c.mu.Unlock()
		next.f()
	}
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.t) {
		c.t = t
	}
}

// Run replays reqs through a fresh proxy (its workspace in a temporary
// directory) and a fresh fake, and returns the fake's bill.
func Run(ctx context.Context, reqs []Request, opts Options) (Result, error) {
	var res Result
	if len(reqs) == 0 {
		return res, fmt.Errorf("tracereplay: no requests")
	}
	var work string
	if d := opts.ProxyDir; d != "" {
		dir, release, err := claimDir(d)
		if err != nil {
			return res, err
		}
		defer release()
		work = dir
	} else {
		dir, err := os.MkdirTemp("", "tracereplay-")
		if err != nil {
			return res, err
		}
		defer os.RemoveAll(dir)
		work = dir
	}
	ws := filepath.Join(work, ".agentctx")
	if d := opts.Workspace; d != "" {
		dir, release, err := claimDir(d)
		if err != nil {
			return res, err
		}
		defer release()
		ws = dir
	}
	clk := &clock{t: reqs[0].At}
	task := opts.Task
	if task.SummaryHeader == "" {
		task.SummaryHeader = proxy.HeaderSummary
	}
	if task.SummaryTitle == "" {
		task.SummaryTitle = compact.SummaryTitle
	}
	task.NoLatency = true // the replay's clock is the trace's
	task.PathRoots = append(task.PathRoots, work)
	model := fakeupstream.NewLongTask(task)
	fake := fakeupstream.New(fakeupstream.Options{Script: model.Script, Now: clk.now})
	up := httptest.NewServer(fake)
	defer up.Close()
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	args := append([]string{"--upstream-anthropic", up.URL, "--upstream-openai", up.URL,
		"--workspace", ws, "--dir", filepath.Join(work, ".offload")}, opts.ProxyArgs...)
	srv, closeAll, err := cli.SimulatedProxy(ctx, args, clk.now, clk.afterFunc, logw)
	if err != nil {
		return res, err
	}
	defer closeAll()
	for _, r := range reqs {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		before := fake.Bill().Totals
		clk.advance(r.At) // the keep-warm requests of the pause before it are its

		req := httptest.NewRequestWithContext(ctx, r.Method, r.Path, bytes.NewReader(r.Body))
		for k, v := range r.Header {
			if strings.EqualFold(k, "Content-Length") || strings.EqualFold(k, "Accept-Encoding") {
				continue
			}
			req.Header[k] = v
		}
		req.Header.Set("X-Api-Key", "replay")
		req.Host = "127.0.0.1"
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		after := fake.Bill().Totals
		res.PerRequest = append(res.PerRequest, diff(after, before))
	}
	res.Bill = fake.Bill().Totals
	res.Stats = model.Stats()
	return res, nil
}

func diff(a, b fakeupstream.Totals) fakeupstream.Totals {
	return fakeupstream.Totals{Requests: a.Requests - b.Requests, Input: a.Input - b.Input, CacheRead: a.CacheRead - b.CacheRead,
		CacheWrite: a.CacheWrite - b.CacheWrite, CacheWrite1h: a.CacheWrite1h - b.CacheWrite1h, Output: a.Output - b.Output,
		USD: a.USD - b.USD, Rejections: a.Rejections - b.Rejections}
}

// replayMark marks a directory a replay made (claimDir).
const replayMark = ".tracereplay"

// claimDir makes dir for a replay: it must not exist, or hold a replay's
// mark (a replay that did not finish); anything else is left alone.
// release removes dir and the parents claimDir made for it, those left
// empty.
func claimDir(dir string) (_ string, release func(), err error) {
	dir = filepath.Clean(dir)
	if _, err := os.Stat(dir); err == nil {
		if _, err := os.Stat(filepath.Join(dir, replayMark)); err != nil {
			return "", nil, fmt.Errorf("tracereplay: %s exists and is not a replay's: the recorded proxy's directories must be free", dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return "", nil, err
		}
	}
	var made []string // the parents made, the deepest first
	for p := filepath.Dir(dir); p != filepath.Dir(p); p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil {
			break
		}
		made = append(made, p)
	}
	release = func() {
		os.RemoveAll(dir)
		for _, p := range made {
			os.Remove(p) // only when empty: another's files stay
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		release()
		return "", nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, replayMark), nil, 0o644); err != nil {
		release()
		return "", nil, err
	}
	return dir, release, nil
}
