// Command proxyload is the load script of the proxy: it starts a local
// upstream that answers Anthropic Messages requests at once (a streamed
// answer with usage; a summary request gets a summary), an `agentctx
// proxy` process in front of it with a fresh workspace, and drives many
// Claude Code-like sessions through the proxy at once, each growing by one
// tool exchange per request from a history of -size bytes. It reports the
// proxy's overhead (request received to upstream request sent, from the
// proxy's own log line of every request, and as seen from outside: from
// the client starting to send to the upstream having the whole body, less
// the same measure without the proxy), errors, and the proxy's memory per
// session.
//
//	go run ./bench/cmd/proxyload -sessions 50 -requests 20 -size 1048576 [-concurrency N] [-- proxy flags]
//
// -result-lines sets the lines of terminal output of each tool result
// (100 by default, every 16th 9.6 times that): -result-lines 0 makes a
// history of small messages, a one-word result each (-sessions 1
// -requests 2 -size 10485760 -result-lines 0: one session's huge first
// request and the next). The report gives the proxy's peak resident
// memory (VmHWM) beside its memory after the run.
//
// The numbers of BENCHMARKS.md come from it. -bin uses a built agentctx
// instead of building one; arguments after -- go to `agentctx proxy`.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	sessions := flag.Int("sessions", 50, "sessions driven at once")
	requests := flag.Int("requests", 20, "requests per session")
	size := flag.Int("size", 1<<20, "bytes of history each session starts from")
	lines := flag.Int("result-lines", 100, "lines of output of each tool result (every 16th 9.6 times as many); 0: one word")
	conc := flag.Int("concurrency", 0, "sessions in flight at once (default: all)")
	bin := flag.String("bin", "", "agentctx binary (default: go build ./cmd/agentctx)")
	asJSON := flag.Bool("json", false, "print the report as JSON")
	flag.Parse()
	if *conc <= 0 || *conc > *sessions {
		*conc = *sessions
	}
	rep, err := run(shape{*sessions, *requests, *size, *conc, *lines}, *bin, flag.Args())
	if rep != nil {
		rep.print(*asJSON)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "proxyload:", err)
		os.Exit(1)
	}
}

// report is what a run measured.
type report struct {
	Sessions, Requests, Errors int
	Concurrency                int
	Warm                       int     // requests with a proxy log line, each session's first left out
	HistoryBytes               int     // of a session's first request
	LastBytes                  int     // of a session's last request
	ProxyP50MS, ProxyP99MS     float64 // the proxy's own overhead_ms, warm requests (all but each session's first)
	ProxyMaxMS                 float64
	FirstP50MS                 float64 // the proxy's overhead on each session's first request
	OutsideP50MS, OutsideP99MS float64 // client send → upstream has the body, through the proxy, warm requests
	DirectP50MS, DirectP99MS   float64 // the same without the proxy
	BytesIn, BytesOut          int64   // of all requests, from /agentctx/stats
	RSSMB, IdleRSSMB           float64 // the proxy's resident memory after the run, and before it
	PeakRSSMB                  float64 // the proxy's peak resident memory (VmHWM)
	RSSPerSession              float64 // (RSS - idle RSS) / sessions / last request size
	LiveHeapMB, DecodeCacheMB  float64 // the proxy's live heap at its last GC, and its decode cache
	LiveHeapPerSession         float64 // live heap / sessions / last request size
	Seconds                    float64
}

// shape is the load: sessions driven, requests each, bytes of history at
// first, sessions at a time, and lines of output per tool result.
type shape struct{ sessions, requests, size, conc, lines int }

// run builds agentctx (unless bin names one), starts the upstream and the
// proxy, drives the sessions through it and reports what it measured.
func run(sh shape, bin string, proxyArgs []string) (*report, error) {
	sessions, requests, conc := sh.sessions, sh.requests, sh.conc
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "proxyload-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if bin == "" {
		if bin, err = build(ctx, dir); err != nil {
			return nil, err
		}
	}

	up := &upstream{got: map[string]time.Time{}}
	upLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go http.Serve(upLn, up)
	upURL := "http://" + upLn.Addr().String()

	p, err := startProxy(ctx, bin, dir, upURL, proxyArgs)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	if err := waitUp(ctx, p.base+"/agentctx/stats"); err != nil {
		return nil, err
	}
	idle := rssMB(p.cmd.Process.Pid)

	l := &load{
		ctx: ctx, up: up, upURL: upURL, base: p.base,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: sessions + 4}},
	}
	rep := report{Sessions: sessions, Requests: sessions * requests, Concurrency: conc}
	t0 := time.Now()
	l.drive(&rep, sh)
	rep.Seconds = time.Since(t0).Seconds()
	rep.Errors = len(l.errs)
	time.Sleep(200 * time.Millisecond) // the last log lines
	p.measure(&rep, idle)
	p.cmd.Process.Signal(os.Interrupt)
	<-p.logDone
	p.overheads(&rep)
	rep.OutsideP50MS, rep.OutsideP99MS = pct(l.outside, 50), pct(l.outside, 99)
	rep.DirectP50MS, rep.DirectP99MS = pct(l.direct, 50), pct(l.direct, 99)
	if len(l.errs) > 0 {
		return &rep, fmt.Errorf("%d requests failed; first: %w", len(l.errs), l.errs[0])
	}
	return &rep, nil
}

// build builds agentctx into dir and returns the binary's path.
func build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "agentctx")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/agentctx/agentctx/cmd/agentctx")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build: %w", err)
	}
	return bin, nil
}

// proxyProc is a running `agentctx proxy` and what its log said.
type proxyProc struct {
	cmd     *exec.Cmd
	base    string        // http://host:port
	logDone chan struct{} // closed when its log has been read to the end

	mu   sync.Mutex
	byID map[string][]float64 // overhead_ms by session, in order
}

// startProxy starts bin's proxy on a free port in front of upURL, with a
// fresh workspace under dir and proxyArgs, and reads its log.
func startProxy(ctx context.Context, bin, dir, upURL string, proxyArgs []string) (*proxyProc, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	args := append([]string{"proxy", "--listen", addr, "--upstream-anthropic", upURL,
		"--workspace", filepath.Join(dir, "ws"), "--dir", filepath.Join(dir, "offload")}, proxyArgs...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	logs, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proxyProc{cmd: cmd, base: "http://" + addr, logDone: make(chan struct{}), byID: map[string][]float64{}}
	go p.readLog(logs)
	return p, nil
}

// readLog keeps the overhead_ms of every Anthropic request line of the
// proxy's log, by session, until the log ends.
func (p *proxyProc) readLog(logs io.Reader) {
	defer close(p.logDone)
	sc := bufio.NewScanner(logs)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, `msg="proxy: request"`) || !strings.Contains(line, "api=anthropic") {
			continue
		}
		s, o := field(line, "session"), field(line, "overhead_ms")
		v, err := strconv.ParseFloat(o, 64)
		if s == "" || err != nil {
			continue
		}
		p.mu.Lock()
		p.byID[s] = append(p.byID[s], v)
		p.mu.Unlock()
	}
}

// stop interrupts the proxy and waits for it to exit.
func (p *proxyProc) stop() {
	p.cmd.Process.Signal(os.Interrupt)
	p.cmd.Wait()
}

// measure fills rep's memory and byte counts from the proxy's process and
// its /agentctx/stats, idle being its resident MB before the run.
func (p *proxyProc) measure(rep *report, idle float64) {
	sessions := float64(rep.Sessions)
	rep.RSSMB, rep.IdleRSSMB = rssMB(p.cmd.Process.Pid), idle
	rep.PeakRSSMB = statusMB(p.cmd.Process.Pid, "VmHWM:")
	if rep.LastBytes > 0 {
		rep.RSSPerSession = (rep.RSSMB - idle) * (1 << 20) / sessions / float64(rep.LastBytes)
	}
	if st, err := stats(p.base + "/agentctx/stats"); err == nil {
		for _, s := range st.Sessions {
			rep.BytesIn += s.BytesBefore
			rep.BytesOut += s.BytesAfter
		}
		rep.LiveHeapMB, rep.DecodeCacheMB = st.Process.LiveHeapBytes/(1<<20), st.Process.DecodeCacheBytes/(1<<20)
		if rep.LastBytes > 0 {
			rep.LiveHeapPerSession = st.Process.LiveHeapBytes / sessions / float64(rep.LastBytes)
		}
	}
}

// overheads fills rep's proxy overheads from the log: each session's first
// request apart from the warm ones. The log must have been read to its end.
func (p *proxyProc) overheads(rep *report) {
	var warm, first []float64
	p.mu.Lock()
	for _, o := range p.byID {
		if len(o) > 0 {
			first = append(first, o[0])
			warm = append(warm, o[1:]...)
		}
	}
	p.mu.Unlock()
	rep.ProxyP50MS, rep.ProxyP99MS, rep.ProxyMaxMS = pct(warm, 50), pct(warm, 99), pct(warm, 100)
	rep.FirstP50MS = pct(first, 50)
	rep.Warm = len(warm)
}

// load drives the sessions, through the proxy at base and, as the
// control, straight to the upstream at upURL.
type load struct {
	ctx         context.Context
	up          *upstream
	upURL, base string
	client      *http.Client

	mu              sync.Mutex
	outside, direct []float64 // client send → upstream has the body, in ms
	errs            []error
}

// send posts body as session's request id to url's /v1/messages and
// returns when it started; an answer that is not a whole stream is an
// error.
func (l *load) send(url, id, session string, body []byte) (time.Time, error) {
	req, err := http.NewRequestWithContext(l.ctx, http.MethodPost, url+"/v1/messages", bytes.NewReader(body))
	if err != nil {
		return time.Time{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", "dummy")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("X-Claude-Code-Session-Id", session)
	req.Header.Set("X-Load-Id", id)
	start := time.Now()
	resp, err := l.client.Do(req)
	if err != nil {
		return start, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !bytes.Contains(data, []byte("message_stop")) {
		return start, fmt.Errorf("status %d: %.200s", resp.StatusCode, data)
	}
	return start, nil
}

// drive runs sessions of requests each, conc at a time, each from a
// history of size bytes, and records the first session's first and last
// request sizes in rep.
func (l *load) drive(rep *report, sh shape) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, sh.conc)
	requests := sh.requests
	for s := range sh.sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			h := newHistory(s, sh.size, sh.lines)
			for r := range requests {
				body := h.body()
				if s == 0 && r == 0 {
					l.mu.Lock()
					rep.HistoryBytes = len(body)
					l.mu.Unlock()
				}
				if r == requests-1 && s == 0 {
					l.mu.Lock()
					rep.LastBytes = len(body)
					l.mu.Unlock()
				}
				l.request(s, r, body)
				h.exchange()
			}
		}()
	}
	wg.Wait()
}

// request sends request r of session s through the proxy and, every
// fourth request, straight to the upstream, and records the times.
func (l *load) request(s, r int, body []byte) {
	session := fmt.Sprintf("load-%03d", s)
	id := fmt.Sprintf("%s-%03d", session, r)
	start, err := l.send(l.base, id, session, body)
	got, ok := l.up.take(id)
	l.mu.Lock()
	if err != nil {
		l.errs = append(l.errs, err)
	} else if ok && r > 0 {
		l.outside = append(l.outside, ms(got.Sub(start)))
	}
	l.mu.Unlock()
	// The same request straight to the upstream, as the control.
	if r > 0 && r%4 == 0 {
		start, err := l.send(l.upURL, id+"-direct", session, body)
		got, ok := l.up.take(id + "-direct")
		l.mu.Lock()
		if err == nil && ok {
			l.direct = append(l.direct, ms(got.Sub(start)))
		}
		l.mu.Unlock()
	}
}

// print writes the report, as text or JSON.
func (rep *report) print(asJSON bool) {
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	} else {
		fmt.Printf("%d sessions x %d requests, %d sessions at a time (%d bytes at first, %d at last) in %.1f s, %d errors\n",
			rep.Sessions, rep.Requests/max(rep.Sessions, 1), rep.Concurrency, rep.HistoryBytes, rep.LastBytes, rep.Seconds, rep.Errors)
		fmt.Printf("proxy overhead, warm requests (its log): p50 %.2f ms, p99 %.2f ms, max %.2f ms (first request of a session: p50 %.2f ms)\n",
			rep.ProxyP50MS, rep.ProxyP99MS, rep.ProxyMaxMS, rep.FirstP50MS)
		fmt.Printf("client send -> upstream has the body: through the proxy p50 %.2f ms, p99 %.2f ms; direct p50 %.2f ms, p99 %.2f ms\n",
			rep.OutsideP50MS, rep.OutsideP99MS, rep.DirectP50MS, rep.DirectP99MS)
		fmt.Printf("all requests: %d bytes received, %d bytes sent upstream (%.2fx)\n", rep.BytesIn, rep.BytesOut, float64(rep.BytesOut)/float64(max(rep.BytesIn, 1)))
		fmt.Printf("proxy memory: %.0f MB resident after the run (%.0f MB idle, %.0f MB at its peak); live heap at its last GC %.0f MB (%.2fx the last history per session), decode cache %.0f MB\n",
			rep.RSSMB, rep.IdleRSSMB, rep.PeakRSSMB, rep.LiveHeapMB, rep.LiveHeapPerSession, rep.DecodeCacheMB)
	}
}

// history is one session's conversation, as Claude Code would send it.
type history struct {
	session int
	lines   int // of each tool result's output (see exchange)
	msgs    []string
	turn    int
}

func newHistory(session, size, lines int) *history {
	h := &history{session: session, lines: lines}
	h.msgs = append(h.msgs, fmt.Sprintf(`{"role":"user","content":"Session %d: fix the failing tests in ./pkg"}`, session))
	n := 0
	for _, m := range h.msgs {
		n += len(m)
	}
	for n < size {
		for _, m := range h.exchange() {
			n += len(m) + 1
		}
	}
	return h
}

// exchange appends one tool call and its result (h.lines lines of
// terminal output, ~4.7 KB for 100, every 16th 9.6 times as many; "ok"
// for 0) and returns the two messages.
func (h *history) exchange() []string {
	i := h.turn
	h.turn++
	line := fmt.Sprintf("drwxr-xr-x  2 root root 4096 Nov 23 s%d_file%d.go ok\\n", h.session, i)
	lines := h.lines
	if i%16 == 15 {
		lines = lines * 96 / 10
	}
	if lines == 0 {
		line, lines = "ok", 1
	}
	a := fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":"Step %d: listing"},{"type":"tool_use","id":"toolu_s%d_%06d","name":"Bash","input":{"command":"ls -la dir%d"}}]}`, i, h.session, i, i)
	u := fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_s%d_%06d","content":"%s"}]}`, h.session, i, strings.Repeat(line, lines))
	h.msgs = append(h.msgs, a, u)
	return []string{a, u}
}

// body is the request: the last message carries the breakpoint, as Claude
// Code's do.
func (h *history) body() []byte {
	msgs := append([]string(nil), h.msgs...)
	last := msgs[len(msgs)-1]
	msgs[len(msgs)-1] = strings.Replace(last, `"content":"`, `"cache_control":{"type":"ephemeral"},"content":"`, 1)
	return []byte(`{"model":"claude-sonnet-4-5","max_tokens":32000,"stream":true,"messages":[` + strings.Join(msgs, ",") +
		`],"system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}}],` +
		`"tools":[{"name":"Bash","description":"Run a shell command","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}],` +
		`"metadata":{"user_id":"load"}}`)
}

// upstream answers at once and records when it had each whole body.
type upstream struct {
	mu  sync.Mutex
	got map[string]time.Time
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	at := time.Now()
	if err != nil || !json.Valid(body) {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"invalid JSON"}}`, http.StatusBadRequest)
		return
	}
	if id := r.Header.Get("X-Load-Id"); id != "" {
		u.mu.Lock()
		u.got[id] = at
		u.mu.Unlock()
	}
	if !bytes.Contains(body, []byte(`"stream":true`)) {
		// A summary request of the proxy's summarizer.
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"msg_sum","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"# Summary\n\n## Goals and key decisions\n- fix the tests\n## Current state\n- listing directories"}],"stop_reason":"end_turn","usage":{"input_tokens":1000,"output_tokens":50}}`)
		return
	}
	in := len(body) / 4
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":%d,\"cache_read_input_tokens\":0,\"cache_creation_input_tokens\":0,\"output_tokens\":1}}}\n\n", in)
	fmt.Fprint(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	fmt.Fprint(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n")
	fmt.Fprint(w, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	fmt.Fprint(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n")
	fmt.Fprint(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
}

func (u *upstream) take(id string) (time.Time, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	t, ok := u.got[id]
	delete(u.got, id)
	return t, ok
}

// slogField matches key=value in a slog text line.
var slogField = regexp.MustCompile(`(?:^| )([a-z_]+)=("(?:[^"\\]|\\.)*"|\S+)`)

// field returns the value of key=value in a slog text line.
func field(line, key string) string {
	var m []string
	for _, f := range slogField.FindAllStringSubmatch(line, -1) {
		if f[1] == key {
			m = f[1:]
		}
	}
	if m == nil {
		return ""
	}
	if v, err := strconv.Unquote(m[1]); err == nil {
		return v
	}
	return m[1]
}

func waitUp(ctx context.Context, url string) error {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return errors.New("the proxy did not start")
}

type sessionStats struct {
	BytesBefore int64 `json:"bytes_before"`
	BytesAfter  int64 `json:"bytes_after"`
}

type proxyStats struct {
	Sessions []sessionStats `json:"sessions"`
	Process  struct {
		LiveHeapBytes    float64 `json:"live_heap_bytes"`
		DecodeCacheBytes float64 `json:"decode_cache_bytes"`
	} `json:"process"`
}

func stats(url string) (*proxyStats, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var v proxyStats
	err = json.NewDecoder(resp.Body).Decode(&v)
	return &v, err
}

// rssMB reads a process's resident memory from /proc (0 elsewhere).
func rssMB(pid int) float64 { return statusMB(pid, "VmRSS:") }

// statusMB reads a memory line of a process's /proc status, in MB (0
// elsewhere).
func statusMB(pid int, key string) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, key) {
			kb, _ := strconv.ParseFloat(strings.Fields(line)[1], 64)
			return kb / 1024
		}
	}
	return 0
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// pct returns the p-th percentile (nearest rank) of xs, 0 when empty.
func pct(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	k := int(p/100*float64(len(s))+0.5) - 1
	return s[min(max(k, 0), len(s)-1)]
}
