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
	conc := flag.Int("concurrency", 0, "sessions in flight at once (default: all)")
	bin := flag.String("bin", "", "agentctx binary (default: go build ./cmd/agentctx)")
	asJSON := flag.Bool("json", false, "print the report as JSON")
	flag.Parse()
	if *conc <= 0 || *conc > *sessions {
		*conc = *sessions
	}
	rep, err := run(*sessions, *requests, *size, *conc, *bin, flag.Args())
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
	RSSPerSession              float64 // (RSS - idle RSS) / sessions / last request size
	LiveHeapMB, DecodeCacheMB  float64 // the proxy's live heap at its last GC, and its decode cache
	LiveHeapPerSession         float64 // live heap / sessions / last request size
	Seconds                    float64
}

func run(sessions, requests, size, conc int, bin string, proxyArgs []string) (*report, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "proxyload-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if bin == "" {
		bin = filepath.Join(dir, "agentctx")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/agentctx/agentctx/cmd/agentctx")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return nil, fmt.Errorf("build: %w", err)
		}
	}

	up := &upstream{got: map[string]time.Time{}}
	upLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go http.Serve(upLn, up)
	upURL := "http://" + upLn.Addr().String()

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
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	overheads := map[string][]float64{} // by session, in order
	var logMu sync.Mutex
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
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
			logMu.Lock()
			overheads[s] = append(overheads[s], v)
			logMu.Unlock()
		}
	}()
	base := "http://" + addr
	if err := waitUp(ctx, base+"/agentctx/stats"); err != nil {
		return nil, err
	}
	idle := rssMB(cmd.Process.Pid)

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: sessions + 4}}
	send := func(url, id, session string, body []byte) (time.Time, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/messages", bytes.NewReader(body))
		if err != nil {
			return time.Time{}, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Api-Key", "dummy")
		req.Header.Set("Anthropic-Version", "2023-06-01")
		req.Header.Set("X-Claude-Code-Session-Id", session)
		req.Header.Set("X-Load-Id", id)
		start := time.Now()
		resp, err := client.Do(req)
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

	rep := report{Sessions: sessions, Requests: sessions * requests, Concurrency: conc}
	var mu sync.Mutex
	var outside, direct []float64
	var errs []error
	t0 := time.Now()
	var wg sync.WaitGroup
	slots := make(chan struct{}, conc)
	for s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			h := newHistory(s, size)
			for r := range requests {
				body := h.body()
				if s == 0 && r == 0 {
					mu.Lock()
					rep.HistoryBytes = len(body)
					mu.Unlock()
				}
				if r == requests-1 && s == 0 {
					mu.Lock()
					rep.LastBytes = len(body)
					mu.Unlock()
				}
				session := fmt.Sprintf("load-%03d", s)
				id := fmt.Sprintf("%s-%03d", session, r)
				start, err := send(base, id, session, body)
				got, ok := up.take(id)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else if ok && r > 0 {
					outside = append(outside, ms(got.Sub(start)))
				}
				mu.Unlock()
				// The same request straight to the upstream, as the control.
				if r > 0 && r%4 == 0 {
					start, err := send(upURL, id+"-direct", session, body)
					got, ok := up.take(id + "-direct")
					mu.Lock()
					if err == nil && ok {
						direct = append(direct, ms(got.Sub(start)))
					}
					mu.Unlock()
				}
				h.exchange()
			}
		}()
	}
	wg.Wait()
	rep.Seconds = time.Since(t0).Seconds()
	rep.Errors = len(errs)
	time.Sleep(200 * time.Millisecond) // the last log lines
	rep.RSSMB, rep.IdleRSSMB = rssMB(cmd.Process.Pid), idle
	if rep.LastBytes > 0 {
		rep.RSSPerSession = (rep.RSSMB - idle) * (1 << 20) / float64(sessions) / float64(rep.LastBytes)
	}
	if st, err := stats(base + "/agentctx/stats"); err == nil {
		for _, s := range st.Sessions {
			rep.BytesIn += s.BytesBefore
			rep.BytesOut += s.BytesAfter
		}
		rep.LiveHeapMB, rep.DecodeCacheMB = st.Process.LiveHeapBytes/(1<<20), st.Process.DecodeCacheBytes/(1<<20)
		if rep.LastBytes > 0 {
			rep.LiveHeapPerSession = st.Process.LiveHeapBytes / float64(sessions) / float64(rep.LastBytes)
		}
	}
	cmd.Process.Signal(os.Interrupt)
	<-logDone
	var warm, first []float64
	logMu.Lock()
	for _, o := range overheads {
		if len(o) > 0 {
			first = append(first, o[0])
			warm = append(warm, o[1:]...)
		}
	}
	logMu.Unlock()
	rep.ProxyP50MS, rep.ProxyP99MS, rep.ProxyMaxMS = pct(warm, 50), pct(warm, 99), pct(warm, 100)
	rep.FirstP50MS = pct(first, 50)
	rep.OutsideP50MS, rep.OutsideP99MS = pct(outside, 50), pct(outside, 99)
	rep.DirectP50MS, rep.DirectP99MS = pct(direct, 50), pct(direct, 99)
	rep.Warm = len(warm)
	if len(errs) > 0 {
		return &rep, fmt.Errorf("%d requests failed; first: %w", len(errs), errs[0])
	}
	return &rep, nil
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
		fmt.Printf("proxy memory: %.0f MB resident after the run (%.0f MB idle); live heap at its last GC %.0f MB (%.2fx the last history per session), decode cache %.0f MB\n",
			rep.RSSMB, rep.IdleRSSMB, rep.LiveHeapMB, rep.LiveHeapPerSession, rep.DecodeCacheMB)
	}
}

// history is one session's conversation, as Claude Code would send it.
type history struct {
	session int
	msgs    []string
	turn    int
}

func newHistory(session, size int) *history {
	h := &history{session: session}
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

// exchange appends one tool call and its result (~4.7 KB of terminal
// output, every 16th 45 KB) and returns the two messages.
func (h *history) exchange() []string {
	i := h.turn
	h.turn++
	line := fmt.Sprintf("drwxr-xr-x  2 root root 4096 Nov 23 s%d_file%d.go ok\\n", h.session, i)
	lines := 100
	if i%16 == 15 {
		lines = 960
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
func rssMB(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
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
