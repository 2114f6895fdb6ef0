package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// front is what an arm's client talks to when the run records a trace or
// the regime asks for the long cache lifetimes: it rewrites each request
// as a client that asks for them would send it (longCache), records it
// (trace), and passes it to next (the fake, or a reverse proxy to the
// agentctx proxy).
type front struct {
	next      http.Handler
	longCache bool
	trace     *traceWriter // nil: no trace
	// rewritten counts the requests longCache changed; failed those it
	// could not (sent as they came).
	rewritten, failed atomic.Int64
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if f.longCache && len(body) > 0 {
		if r.Header.Get("Content-Encoding") != "" {
			f.failed.Add(1)
		} else if out, changed, err := askLongCache(r.URL.Path, body); err != nil {
			f.failed.Add(1)
		} else if changed {
			body = out
			f.rewritten.Add(1)
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	if r.Header.Get("Content-Length") != "" {
		r.Header.Set("Content-Length", fmt.Sprint(len(body)))
	}
	if f.trace != nil {
		f.trace.record(r, body)
	}
	f.next.ServeHTTP(w, r)
}

// askLongCache returns body as a client that asks for the long prompt
// cache lifetimes would send it, and whether that changed it: on the
// Messages API (a path ending in /messages), every cache_control carries
// "ttl":"1h"; on the Responses API (a path ending in /responses), the
// request carries "prompt_cache_retention":"24h". It is the stand-in for a
// client setting where the client has none (Codex has none; Claude Code
// has ENABLE_PROMPT_CACHING_1H, which the ttl1h regime sets too, so that
// this changes only the breakpoints it leaves at 5 minutes). Every other
// byte stays as the client sent it.
func askLongCache(path string, body []byte) ([]byte, bool, error) {
	var out []byte
	switch {
	case strings.HasSuffix(path, "/messages"):
		out = withTTL1h(body)
	case strings.HasSuffix(path, "/responses"):
		var err error
		if out, err = withRetention24h(body); err != nil {
			return body, false, err
		}
	default:
		return body, false, nil
	}
	if !json.Valid(out) {
		return body, false, fmt.Errorf("the rewritten body of %s is not JSON", path)
	}
	return out, !bytes.Equal(out, body), nil
}

var (
	// cacheControlKey matches the start of a cache_control object: the
	// quotes are unescaped, so it is a member name, never inside a string.
	cacheControlKey = regexp.MustCompile(`"cache_control"\s*:\s*\{`)
	ttlMember       = regexp.MustCompile(`"ttl"\s*:\s*"[^"]*"`)
)

// withTTL1h returns body with "ttl":"1h" in every cache_control object
// (replacing a ttl it has). A cache_control object is flat
// ({"type":"ephemeral"}): it ends at the next closing brace.
func withTTL1h(body []byte) []byte {
	var out []byte
	last := 0
	for _, loc := range cacheControlKey.FindAllIndex(body, -1) {
		open := loc[1]
		end := bytes.IndexByte(body[open:], '}')
		if end < 0 {
			break
		}
		end += open
		obj := body[open:end]
		var repl []byte
		switch {
		case ttlMember.Match(obj):
			repl = ttlMember.ReplaceAll(obj, []byte(`"ttl":"1h"`))
		case len(bytes.TrimSpace(obj)) == 0:
			repl = []byte(`"ttl":"1h"`)
		default:
			repl = append([]byte(`"ttl":"1h",`), obj...)
		}
		out = append(append(out, body[last:open]...), repl...)
		last = end
	}
	if out == nil {
		return body
	}
	return append(out, body[last:]...)
}

// withRetention24h returns a Responses request body with
// "prompt_cache_retention":"24h": added first when absent (every other
// byte kept), or set.
func withRetention24h(body []byte) ([]byte, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil {
		return nil, err
	}
	const want = `"24h"`
	if v, ok := members["prompt_cache_retention"]; ok {
		if string(bytes.TrimSpace(v)) == want {
			return body, nil
		}
		members["prompt_cache_retention"] = json.RawMessage(want)
		return json.Marshal(members)
	}
	i := bytes.IndexByte(body, '{')
	sep := ","
	if len(members) == 0 {
		sep = ""
	}
	return append(append(append([]byte{}, body[:i+1]...), `"prompt_cache_retention":`+want+sep...), body[i+1:]...), nil
}

// traceWriter records the requests a client sends, in DIR: one JSON line
// per request in DIR/requests.jsonl, in the order they came,
//
//	{"n":1,"at":"<RFC3339Nano on the session's clock>","method":"POST","path":"/v1/messages","header":{...},"body":"0001.json"}
//
// and the body's bytes in DIR/0001.json (an empty file for a request
// without a body: the replayer reads the file every line names). The header leaves out credentials (Authorization, X-Api-Key,
// cookies, and any header whose name says key, token, secret or auth).
// bench/internal/tracereplay reads this format. It is safe for
// concurrent use.
type traceWriter struct {
	dir   string
	clock func() time.Time // the session's

	mu  sync.Mutex
	n   int
	f   *os.File
	err error // the first write error
}

// traceLine is one line of requests.jsonl.
type traceLine struct {
	N      int         `json:"n"`
	At     string      `json:"at"`
	Method string      `json:"method"`
	Path   string      `json:"path"`
	Header http.Header `json:"header"`
	Body   string      `json:"body"`
}

// traceMeta is a trace's meta.json: what a replay needs besides the
// requests.
type traceMeta struct {
	// ProxyDir is the proxy arm's working directory (its archives are
	// .offload under it), and Workspace its workspace directory (by
	// default in the arm's home: projectws.Default).
	ProxyDir  string `json:"proxy_dir,omitempty"`
	Workspace string `json:"workspace,omitempty"`
	// ClientDir is the client's working directory.
	ClientDir string `json:"client_dir,omitempty"`
	// ClockSpeed and SlowBuild (a time.Duration's String) are the
	// task's (fakeupstream.LongTaskOptions).
	ClockSpeed float64 `json:"clock_speed,omitempty"`
	SlowBuild  string  `json:"slow_build,omitempty"`
}

// writeMeta writes the trace's meta.json.
func (t *traceWriter) writeMeta(m traceMeta) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(t.dir, "meta.json"), append(b, '\n'), 0o644)
}

// newTraceWriter returns a traceWriter into dir, which it creates, whose
// times are clock's.
func newTraceWriter(dir string, clock func() time.Time) (*traceWriter, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		return nil, err
	}
	return &traceWriter{dir: dir, clock: clock, f: f}, nil
}

// record writes request r with its body, at the clock's time now (so
// that the times of the lines never decrease).
func (t *traceWriter) record(r *http.Request, body []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n++
	line := traceLine{N: t.n, At: t.clock().UTC().Format(time.RFC3339Nano), Method: r.Method, Path: r.URL.Path, Header: traceHeader(r.Header)}
	line.Body = fmt.Sprintf("%04d.json", t.n)
	if err := os.WriteFile(filepath.Join(t.dir, line.Body), body, 0o644); err != nil && t.err == nil {
		t.err = err
	}
	b, _ := json.Marshal(line)
	if _, err := t.f.Write(append(b, '\n')); err != nil && t.err == nil {
		t.err = err
	}
}

// Close closes requests.jsonl and returns the first error of the trace.
func (t *traceWriter) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.f.Close(); err != nil && t.err == nil {
		t.err = err
	}
	return t.err
}

// traceHeader returns h without its credentials.
func traceHeader(h http.Header) http.Header {
	out := http.Header{}
	for k, v := range h {
		if secretHeader(k) {
			continue
		}
		out[k] = append([]string(nil), v...)
	}
	return out
}

func secretHeader(name string) bool {
	n := strings.ToLower(name)
	for _, s := range []string{"authorization", "key", "token", "secret", "auth", "cookie"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}
