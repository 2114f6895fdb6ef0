package proxy

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/lib/family/anthropic"
)

// Keeping the prompt cache warm (Options.KeepWarm).
//
// A provider keeps a cached prompt prefix for its lifetime (Anthropic: 5
// minutes, or an hour on request) from its last use. When the client runs
// a tool the model asked for that takes longer (a build, a test suite, a
// subagent), its next request finds the cache gone and writes its whole
// prefix again, at 1.25 times the input price, where a read costs 0.1
// times. Before the lifetime ends, the proxy sends the session's last
// request again itself with max_tokens 1: the provider reads the prefix
// from its cache (its lifetime starts again) and answers one token, which
// nobody reads. A keep-warm request costs about a twelfth of the rewrite
// it saves when the client comes back within the next lifetime, so a few
// of them pay as soon as one in twelve such pauses ends within it.
//
// Only what pays and is safe is kept warm: Anthropic Messages requests
// authenticated by an API key (X-Api-Key; a subscription's bearer token
// is not billed by the token), answered whole with a tool call (the
// client is running it and will come back; an answer that ends the turn
// waits for a person, who may not), with extended thinking only under
// interleaved thinking (its budget may exceed max_tokens, so the request
// keeps the thinking parameters the cache was written with, whose change
// would not read it, and still stops at one token; Claude Code asks for
// it). At most KeepWarm requests per pause;
// any request of the session, a failed keep-warm request and Close end
// them. Each is billed to its session (Bill.KeepWarmRequests,
// KeepWarmCostUSD; in the ledger an entry of its own, with nothing
// estimated without agentctx) and logged, and an Engine that models the
// cache (CacheRefresher) is told, so that the request after the pause is
// weighed as warm.

// DefaultKeepWarm is the default of Options.KeepWarm: three keep-warm
// requests per pause, which keep a 5-minute cache warm for about 14
// minutes of a tool's run.
const DefaultKeepWarm = 3

// HeaderKeepWarm marks the keep-warm requests the proxy sends upstream.
const HeaderKeepWarm = "X-Agentctx-Keep-Warm"

// keepWarmTimeout bounds one keep-warm request; maxWarmBytes the request
// bodies kept for them, all sessions together.
const (
	keepWarmTimeout = 30 * time.Second
	maxWarmBytes    = 256 << 20
)

// CacheRefresher is implemented by Engines that model the provider's
// prompt cache (PipelineEngine does): the proxy calls CacheRefreshed after
// a keep-warm request read the session's cached prefix at at, so that the
// Engine weighs the session's next request as one on a warm cache.
type CacheRefresher interface {
	CacheRefreshed(ctx context.Context, sessionKey string, at time.Time)
}

// keepWarmLead is how long before the cache's lifetime ends a keep-warm
// request is sent: a tenth of it (30 s of 5 minutes).
func keepWarmLead(ttl time.Duration) time.Duration { return ttl / 10 }

// warmer holds the sessions kept warm.
type warmer struct {
	s      *Server
	pings  int
	after  func(time.Duration, func()) func() bool
	client *http.Client

	mu     sync.Mutex
	byKey  map[string]*warmSession
	bytes  int
	seq    uint64
	closed bool
}

// warmSession is the last request of a session, kept to be sent again.
type warmSession struct {
	id     uint64 // of the timer armed last; a fire of another is stale
	stop   func() bool
	url    string
	header http.Header // as sent upstream, credentials included: never logged
	body   sendBody
	model  string
	client string
	tenant string
	ttl    time.Duration
	left   int
}

func newWarmer(s *Server) *warmer {
	n := s.opts.KeepWarm
	if n == 0 {
		n = DefaultKeepWarm
	}
	if n < 0 {
		return nil
	}
	after := s.opts.AfterFunc
	if after == nil {
		after = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	return &warmer{s: s, pings: n, after: after, client: &http.Client{Transport: s.opts.Transport}, byKey: map[string]*warmSession{}}
}

// eligible reports whether the exchange forwarded by f leaves a session
// worth keeping warm (see above).
func (f *forward) keepsWarm() bool {
	x := f.x
	return x.api == APIAnthropic && x.session != "" && x.status == http.StatusOK && !x.cancelled &&
		(!x.thinkingOn || interleaved(f.upHeader)) &&
		f.sc.done && f.sc.toolUse && f.sent.read && f.sent.Len() > 0 && f.upHeader.Get("X-Api-Key") != "" && f.upURL != ""
}

// interleaved reports whether a request asks for interleaved thinking
// (an Anthropic-Beta interleaved-thinking-*), under which the thinking
// budget may exceed max_tokens.
func interleaved(h http.Header) bool {
	for _, v := range h.Values("Anthropic-Beta") {
		for b := range strings.SplitSeq(v, ",") {
			if strings.HasPrefix(strings.TrimSpace(b), "interleaved-thinking-") {
				return true
			}
		}
	}
	return false
}

// arm keeps the session of f's exchange warm from its request on, or
// stops keeping it warm when that request does not leave it worth it.
func (w *warmer) arm(f *forward) {
	x := f.x
	if !f.keepsWarm() {
		w.disarm(x.session)
		return
	}
	ws := &warmSession{url: f.upURL, header: f.upHeader, body: f.sent, model: x.bill.model, client: x.client, tenant: x.tenant,
		ttl: cacheLifetime(w.s.pricesOf(x.api, x.bill.model).TTL, f.sent.parts), left: w.pings}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dropLocked(x.session)
	if w.closed || w.bytes+ws.body.Len() > maxWarmBytes {
		return
	}
	w.byKey[x.session] = ws
	w.bytes += ws.body.Len()
	// The provider used the cache when it read the request, about when
	// it arrived.
	w.scheduleLocked(x.session, ws, ws.ttl-keepWarmLead(ws.ttl)-w.s.opts.Now().Sub(x.start))
}

// cacheLifetime returns the lifetime of a request's cached prefix: an
// hour when every breakpoint of the body asks for it, else the
// provider's (5 minutes when ttl is 0).
func cacheLifetime(ttl time.Duration, parts [][]byte) time.Duration {
	if ttl <= 0 {
		ttl = 5 * time.Minute
	}
	var marks, hours int
	for _, p := range parts {
		marks += bytes.Count(p, []byte(`"cache_control"`))
		hours += bytes.Count(p, []byte(`"ttl":"1h"`))
	}
	if marks > 0 && hours >= marks {
		return max(ttl, time.Hour)
	}
	return ttl
}

// scheduleLocked arms the session's next keep-warm request in d (now when
// d is not positive). w.mu is held.
func (w *warmer) scheduleLocked(key string, ws *warmSession, d time.Duration) {
	w.seq++
	id := w.seq
	ws.id = id
	ws.stop = w.after(max(d, 0), func() { w.fire(key, id) })
}

// disarm stops keeping a session warm: a request of it came.
func (w *warmer) disarm(key string) {
	if w == nil || key == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dropLocked(key)
}

// dropLocked forgets a session's keep-warm request. w.mu is held.
func (w *warmer) dropLocked(key string) {
	if ws := w.byKey[key]; ws != nil {
		ws.stop()
		w.bytes -= ws.body.Len()
		delete(w.byKey, key)
	}
}

// close stops every keep-warm request.
func (w *warmer) close() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	for k := range w.byKey {
		w.dropLocked(k)
	}
}

// fire sends the keep-warm request armed as id, and arms the next one
// while the pause may go on.
func (w *warmer) fire(key string, id uint64) {
	w.mu.Lock()
	ws := w.byKey[key]
	if w.closed || ws == nil || ws.id != id {
		w.mu.Unlock()
		return
	}
	ws.left--
	w.mu.Unlock()
	at := w.s.opts.Now()
	ok := w.send(key, ws, at)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byKey[key] != ws || ws.id != id {
		return // a request of the session came meanwhile
	}
	if !ok || ws.left <= 0 || w.closed {
		w.dropLocked(key)
		return
	}
	w.scheduleLocked(key, ws, ws.ttl-keepWarmLead(ws.ttl)-w.s.opts.Now().Sub(at))
}

// send sends one keep-warm request of the session and bills it; it
// reports whether the upstream answered it.
func (w *warmer) send(key string, ws *warmSession, at time.Time) bool {
	s := w.s
	body, err := keepWarmBody(ws.body.Bytes())
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), keepWarmTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ws.url, bytes.NewReader(body))
	if err != nil {
		return false
	}
	req.Header = ws.header.Clone()
	req.Header.Del("Content-Length")
	req.Header.Set(HeaderKeepWarm, "1")
	resp, err := w.client.Do(req)
	if err != nil {
		s.log.Warn("proxy: the keep-warm request failed; the session's cache is left to expire", "session", key, "err", redactErr(err))
		return false
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		s.log.Warn("proxy: the keep-warm request failed; the session's cache is left to expire", "session", key, "status", resp.StatusCode)
		return false
	}
	var sc usageScanner
	sc.whole(data, anthropic.Family{})
	cost := s.billKeepWarm(key, ws, &sc, at)
	if cr, ok := s.opts.Engine.(CacheRefresher); ok {
		cr.CacheRefreshed(ctx, key, at)
	}
	s.log.Info("proxy: kept the prompt cache warm", "session", key, "cache_read", sc.usage.CacheRead,
		"cache_write", sc.usage.CacheWrite(), "cost_usd", round6(cost))
	return true
}

// keepWarmBody returns the body of a keep-warm request: the request's
// body b, whose members stay as they are, asking for one token, not
// streamed.
func keepWarmBody(b []byte) ([]byte, error) {
	ms, err := rawjson.Members(b)
	if err != nil {
		return nil, err
	}
	out := []byte{'{'}
	for _, m := range ms {
		switch m.Key {
		case "stream", "stream_options", "max_tokens":
			continue
		}
		out = rawjson.AppendString(out, m.Key)
		out = append(out, ':')
		out = append(out, m.Value...)
		out = append(out, ',')
	}
	return append(out, `"max_tokens":1,"stream":false}`...), nil
}

// billKeepWarm bills a keep-warm request's answer to its session, the
// total and the ledger, and returns its cost.
func (s *Server) billKeepWarm(key string, ws *warmSession, sc *usageScanner, at time.Time) float64 {
	if !sc.got {
		return 0
	}
	// An exchange of the session's of its own, as the ledger records
	// one: nothing estimated without agentctx (costWithout is 0).
	x := &exchange{api: APIAnthropic, session: key, client: ws.client, tenant: ws.tenant, start: at}
	eb := &x.bill
	eb.model, eb.billed, eb.keepWarm, eb.usage = ws.model, true, true, sc.usage
	eb.cost = s.pricesOf(APIAnthropic, ws.model).Cost(eb.usage)
	st := s.stats.get(key)
	st.mu.Lock()
	st.Bill.add(eb)
	st.mu.Unlock()
	s.stats.mu.Lock()
	s.stats.total.Bill.add(eb)
	s.stats.mu.Unlock()
	if s.ledger != nil {
		if e, ok := s.ledgerEntry(x); ok {
			s.ledger.add(e)
		}
	}
	return eb.cost
}
