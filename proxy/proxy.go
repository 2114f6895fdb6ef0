package proxy

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/httpguard"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/lib/ctxedit"
	"github.com/agentctx/agentctx/internal/lib/decodecache"
	"github.com/agentctx/agentctx/internal/lib/family"
	"github.com/agentctx/agentctx/internal/lib/thinking"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pricing"
	"github.com/agentctx/agentctx/session"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Default upstreams.
const (
	DefaultAnthropicURL = "https://api.anthropic.com"
	DefaultOpenAIURL    = "https://api.openai.com"
	DefaultGeminiURL    = "https://generativelanguage.googleapis.com"
	// DefaultMaxBody is the largest request body the proxy reads to edit;
	// a larger one is forwarded unedited, streamed.
	DefaultMaxBody = 64 << 20
	// DefaultShutdownTimeout bounds how long Serve waits for in-flight
	// requests (streams included) after its context is done.
	DefaultShutdownTimeout = 5 * time.Minute
)

// Options configure a Server. The zero value forwards to the public
// Anthropic, OpenAI and Gemini APIs and edits nothing (a nil Engine).
type Options struct {
	// Engine prepares editable requests; nil forwards every request
	// unedited.
	Engine Engine
	// AnthropicURL, OpenAIURL and GeminiURL are the upstream base URLs,
	// without /v1 (a trailing /v1 is ignored; Gemini's paths carry their
	// version, /v1beta); "" means the public APIs. Each provider's
	// requests, with their credentials, go to its own upstream only.
	AnthropicURL string
	OpenAIURL    string
	GeminiURL    string
	// Transport sends upstream requests; nil means a clone of
	// http.DefaultTransport.
	Transport http.RoundTripper
	// MaxBody is the largest body read for editing; 0 means DefaultMaxBody.
	MaxBody int64
	// ShutdownTimeout bounds Serve's wait for in-flight requests; 0 means
	// DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// UpstreamHeaderTimeout bounds the wait for the upstream's answer
	// headers (a stream's come at once; a whole answer's when it is
	// written): past it the request is answered 504 and matches
	// ErrUpstreamTimeout. UpstreamIdleTimeout bounds the wait for each
	// part of the answer's body: past it the answer is cut, as an
	// upstream that cut it. A stream that keeps coming is never cut. 0
	// means DefaultUpstreamHeaderTimeout and DefaultUpstreamIdleTimeout,
	// a negative value no bound.
	UpstreamHeaderTimeout, UpstreamIdleTimeout time.Duration
	// ClientBodyTimeout bounds the reading of a request's body (from the
	// end of its headers); a body that does not come in time is answered
	// 408. 0 means DefaultClientBodyTimeout, a negative value no bound.
	ClientBodyTimeout time.Duration
	// ClientHeaderTimeout and ClientIdleTimeout are Serve's bounds on the
	// reading of a request's headers and on a kept-alive connection
	// waiting for its next request (http.Server's ReadHeaderTimeout and
	// IdleTimeout); 0 means DefaultClientHeaderTimeout and
	// DefaultClientIdleTimeout, a negative value no bound.
	ClientHeaderTimeout, ClientIdleTimeout time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives one line per request (never a header value); nil
	// discards.
	Logger *slog.Logger
	// DecodeCacheBytes bounds the memory kept of the messages decoded for
	// each conversation's last request, which the next request reuses
	// where it sends the same bytes (so that decoding a request costs
	// what is new in it): 0 means DefaultDecodeCacheBytes, a negative
	// value keeps nothing. About twice the bytes of the messages kept.
	// A Server without an Engine decodes nothing: it keeps the hashes of
	// the messages (48 bytes each), which let it split the next request
	// without scanning the messages it sends again.
	DecodeCacheBytes int64
	// MCP, when set, serves MCPPath (/mcp and below) on the proxy's own
	// listener: typically the read-back tools over MCP streamable HTTP
	// (mcpserver's Handler) over the store and namespace the Engine writes
	// to. Requests to MCPPath never go upstream; without MCP they are
	// answered 404.
	MCP http.Handler
	// Token, when set, is required of every request to the statistics,
	// metrics, dashboard and MCP endpoints (X-Agentctx-Token, or
	// Authorization: Bearer); without it they answer only requests from
	// this machine (a loopback peer address, or a Unix socket) addressed
	// to a loopback name (Host: localhost, 127.0.0.1, ::1), so neither
	// another machine nor a web page (through DNS rebinding) can read
	// them. Model requests are not affected: the upstream checks their
	// keys.
	Token string
	// Tenants isolates the clients of a shared proxy by their credentials
	// (the digest of their X-Api-Key or Authorization header): each
	// tenant's sessions and artifacts live in a namespace of its own
	// (Request.Tenant, TenantNamespace), and a session key names
	// its tenant, so two tenants never share a session. Read-back over MCP
	// is then served per tenant too (mcpserver.HandlerFor).
	Tenants bool
	// Prices price each request's usage, by its model, for the money in
	// the statistics and the log (see Bill); nil means pricing.Default().
	// A model the table does not know is priced at pricing.Fallback of
	// its API's provider.
	Prices pricing.Table
	// ContextManagement says where edits go: ContextClient ("" too) in the
	// messages, ContextNative through the provider's own context
	// management where it has one (see native.go).
	ContextManagement ContextManagement
	// TracerProvider, when set, traces each request's steps with
	// OpenTelemetry (see tracing.go: SpanRequest and its children); nil
	// traces nothing. NewOTLPTracerProvider makes one configured by the
	// OTEL_* variables.
	TracerProvider trace.TracerProvider
	// ReadBack, when set, lets the dashboard list a session's artifacts
	// and read them back (mcpserver.Server.Call: the read path of the MCP
	// tools); nil shows none.
	ReadBack ReadBack
	// Ledger, when set, durably records every answered request's usage,
	// bill and estimate without agentctx (session.LedgerOf the session
	// store: what "agentctx savings" reads), off the request's path (see
	// ledger.go); nil records nothing. Close appends what is queued.
	Ledger session.Ledger
	// Project is the directory the clients work in, recorded with each
	// ledger entry ("" when the proxy does not know it).
	Project string
	// Namespace is the workspace namespace the Engine writes to, recorded
	// with each ledger entry (with Tenants, the tenant's:
	// TenantNamespace(Namespace, tenant)); "" records none.
	Namespace string
	// KeepWarm is the most keep-warm requests sent while one session's
	// client runs a tool (see keepwarm.go): each repeats the session's
	// last request with max_tokens 1 shortly before the provider's
	// prompt cache would expire, which costs a read of the cached prefix
	// instead of its rewrite when the client comes back. 0 means
	// DefaultKeepWarm, a negative value none.
	KeepWarm int
	// AfterFunc runs f after d on the proxy's clock (the clock of Now)
	// and returns what stops it; nil means time.AfterFunc's. A
	// simulation whose Now runs faster than the wall clock gives one that
	// runs as fast.
	AfterFunc func(d time.Duration, f func()) (stop func() bool)
}

// Server is the proxy, an http.Handler. Build it with New.
type Server struct {
	opts      Options
	anthropic *url.URL
	openai    *url.URL
	gemini    *url.URL
	// buffers and discardLog serve the ReverseProxy of each forward
	// (forward.go).
	buffers    bufferPool
	discardLog *log.Logger
	log        *slog.Logger
	stats      *statsTable
	decoded    *decodeCache // nil when off
	prints     *printCache  // without an Engine (decoded is then unused); nil when off
	// plainDecode decodes every request whole (ParseDocument,
	// ResponsesMessages), as the reference the tests hold the cached
	// decode to.
	plainDecode bool
	// fallbackCounter counts messages for the bill when the Engine does
	// not (see MessageCounter).
	fallbackCounter defaultMessageCounter
	metrics         *promMetrics // MetricsPath (metrics.go)

	// tools remembers each OpenAI session's tools, for its client's own
	// compaction requests (clientcompact.go).
	tools toolMemos

	digests stableHashes // thinking.MessageDigest by msgHash (thinkingmem.go)

	convs         conversations // the conversations under each session key (conversations.go)
	ledger        *ledgerWriter // nil without Options.Ledger (ledger.go)
	ledgerStarted atomic.Bool   // StartFromLedger ran
	created       time.Time     // by Options.Now: the ledger's past ends there
	warm          *warmer       // nil when Options.KeepWarm is negative (keepwarm.go)
}

// New returns a Server.
func New(opts Options) (*Server, error) {
	if opts.AnthropicURL == "" {
		opts.AnthropicURL = DefaultAnthropicURL
	}
	if opts.OpenAIURL == "" {
		opts.OpenAIURL = DefaultOpenAIURL
	}
	if opts.GeminiURL == "" {
		opts.GeminiURL = DefaultGeminiURL
	}
	a, err := baseURL(opts.AnthropicURL)
	if err != nil {
		return nil, fmt.Errorf("proxy: anthropic upstream: %w", err)
	}
	o, err := baseURL(opts.OpenAIURL)
	if err != nil {
		return nil, fmt.Errorf("proxy: openai upstream: %w", err)
	}
	g, err := baseURL(opts.GeminiURL)
	if err != nil {
		return nil, fmt.Errorf("proxy: gemini upstream: %w", err)
	}
	if opts.Transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		opts.Transport = t
	}
	opts.Transport = &timeoutTransport{next: opts.Transport,
		header: timeout(opts.UpstreamHeaderTimeout, DefaultUpstreamHeaderTimeout), idle: timeout(opts.UpstreamIdleTimeout, DefaultUpstreamIdleTimeout)}
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = DefaultShutdownTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Prices == nil {
		opts.Prices = pricing.Default()
	}
	var dc *decodeCache
	var pc *printCache
	max := opts.DecodeCacheBytes
	if max == 0 {
		max = DefaultDecodeCacheBytes
	}
	switch {
	case max > 0 && opts.Engine != nil:
		dc = newDecodeCache(max)
	case max > 0:
		pc = decodecache.New[printed](max)
	}
	s := &Server{
		decoded: dc, prints: pc,
		opts: opts, anthropic: a, openai: o, gemini: g,
		discardLog: newDiscardLog(),
		log:        opts.Logger,
		stats:      newStatsTable(),
		created:    opts.Now(),
	}
	s.metrics = newMetrics(s)
	s.warm = newWarmer(s)
	if opts.Ledger != nil {
		s.ledger = newLedgerWriter(opts.Ledger, opts.Logger, 0, 0)
	}
	return s, nil
}

// ErrInvalidURL is matched by the error for an upstream URL that is not an
// absolute http(s) URL.
var ErrInvalidURL = errors.New("not an absolute http or https URL")

func baseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", s, ErrInvalidURL)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q: %w", s, ErrInvalidURL)
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1")
	u.RawQuery, u.Fragment = "", ""
	return u, nil
}

// Serve serves on ln until ctx is done, then stops accepting and waits for
// in-flight requests (streams included) up to ShutdownTimeout.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	stop, stopped := context.WithCancel(context.Background()) // ends MCP streams at shutdown
	defer stopped()
	hs := &http.Server{Handler: s, ReadHeaderTimeout: timeout(s.opts.ClientHeaderTimeout, DefaultClientHeaderTimeout), BaseContext: func(net.Listener) context.Context {
		return context.WithValue(context.WithoutCancel(ctx), stopKey{}, stop)
	}}
	hs.IdleTimeout = timeout(s.opts.ClientIdleTimeout, DefaultClientIdleTimeout)
	// HTTP/1.1, and HTTP/2 in the clear for clients that speak it with
	// prior knowledge (h2c; HTTP/2 over TLS needs a TLS listener, which
	// Serve is not given).
	hs.Protocols = new(http.Protocols)
	hs.Protocols.SetHTTP1(true)
	hs.Protocols.SetUnencryptedHTTP2(true)
	hs.RegisterOnShutdown(stopped)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.ShutdownTimeout)
	defer cancel()
	err := hs.Shutdown(sctx)
	<-errc
	return err
}

// Close appends the ledger entries still queued (within
// DefaultLedgerTimeout) and releases the Engine when it holds resources.
func (s *Server) Close() error {
	s.warm.close()
	if s.ledger != nil {
		ctx, cancel := context.WithTimeout(context.Background(), DefaultLedgerTimeout)
		s.ledger.close(ctx)
		cancel()
	}
	if c, ok := s.opts.Engine.(Closer); ok {
		return c.Close()
	}
	return nil
}

// StatsPath is where the proxy answers with its statistics.
const StatsPath = "/agentctx/stats"

// route says where a request goes and whether it is editable.
type route struct {
	upstream *url.URL
	path     string // upstream path: from /v1/ on (or /v1beta/, /v1alpha/)
	rawPath  string // path as the client escaped it (%2F stays %2F), forwarded as received
	api      API    // "" when not editable
	// fam is the family the request is routed as, editable or not: its
	// upstream and its error shape.
	fam family.Family
	// model is the model the path names (family.ModelEndpoints), "" when
	// it names none; array reports an answer that, when not SSE, is a
	// JSON array streamed element by element (family.ArrayStreamer).
	model string
	array bool
}

// versionCut returns where the API's path starts in p: at its first
// "/v1/", else at its first "/v1beta/" or "/v1alpha/" (the Gemini API's
// versions), else -1.
func versionCut(p string) int {
	if i := strings.Index(p, "/v1/"); i >= 0 {
		return i
	}
	for _, v := range [...]string{"/v1beta/", "/v1alpha/"} {
		if i := strings.Index(p, v); i >= 0 {
			return i
		}
	}
	return -1
}

func (s *Server) route(r *http.Request) route {
	// The path as the client escaped it: an encoded slash decoded would
	// forward /v1/..%2fx as /v1/../x, a path the client never sent.
	raw := r.URL.EscapedPath()
	if i := versionCut(raw); i >= 0 {
		raw = raw[i:]
	}
	rest, err := url.PathUnescape(raw)
	if err != nil { // not from a parsed request: its decoded path
		rest, raw = r.URL.Path, ""
		if i := versionCut(rest); i >= 0 {
			rest = rest[i:]
		}
	}
	var query url.Values
	if r.URL.RawQuery != "" {
		query = r.URL.Query()
	}
	fam, editable := families.Route(r.Method, rest, query, r.Header)
	rt := route{upstream: s.upstreamOf(fam), path: rest, rawPath: raw, fam: fam}
	if editable {
		rt.api = apiOf(fam)
		if me, ok := fam.(family.ModelEndpoints); ok {
			rt.model, _ = me.EndpointModel(rest)
		}
		if as, ok := fam.(family.ArrayStreamer); ok {
			rt.array = as.ArrayStream(rest, query)
		}
	}
	return rt
}

// upstreamOf returns the upstream of a family's provider.
func (s *Server) upstreamOf(f family.Family) *url.URL {
	switch f.Info().Provider {
	case pricing.OpenAI:
		return s.openai
	case pricing.Google:
		return s.gemini
	}
	return s.anthropic
}

// exchange is one request's bookkeeping.
type exchange struct {
	start     time.Time
	api       API
	fam       family.Family // api's family, nil when api is ""
	session   string
	edited    bool
	dropBlock bool // ask the API to drop thinking blocks whose prefix changed
	native    bool // a context-management edit was added (its beta is needed)
	provCmp   bool // a provider's compaction window is sent (native_responses.go)
	// Anthropic native compaction (native.go): the index of the message
	// holding the last compaction block (-1: none), the instructions of
	// the compaction asked for ("" when none), and whether the answer
	// carried a compaction block.
	cut          int
	compactInstr string
	compacted    bool
	held         int // tool results held as last sent (see holdEdits)
	thinkIn      int // thinking blocks the client sent
	thinkOut     int // thinking blocks forwarded
	bytesIn      int
	bytesOut     int
	prepared     *Prepared
	overhead     time.Duration
	sentEnc      [][]byte           // the messages sent, compact
	sentHash     []uint64           // their msgHash where known (0: not computed)
	sentMsgs     []agentctx.Message // the messages sent (Anthropic), for their thinking blocks
	sentMatch    []int              // for each message sent, the request's message it is, or -1 (the bill takes the Engine's counts through it)
	viewMsgs     []agentctx.Message // an unchanged Responses request's items as messages (the dashboard's composition)
	thinkingOn   bool
	chain        *prefixHash // the prefix of the messages sent, once computed
	thinkKeys    []string
	thinkKnown   []pipeline.ThinkingEntry // blocks the answer produced, to record (thinkingmem.go)
	thinkSent    []pipeline.ThinkingEntry // blocks sent, to record with the answer
	usage        pricing.Usage
	gotUsage     bool
	observed     bool // the usage was given to the engine
	status       int
	cancelled    bool // the client hung up before the answer's end (status StatusClientClosedRequest)
	answering    bool // the upstream answered 200 (its answer had begun)
	engineErr    error
	bill         exchangeBill
	cacheBreak   bool   // the messages sent do not extend the session's last (sentMessages)
	client       string // the client's User-Agent, its first word
	tenant       string // Options.Tenants: the client's tenant (Tenant)

	// toolsRestored: a client's compaction request sent with the
	// session's tools (clientcompact.go). toolless: the request, on an
	// OpenAI API and read as JSON, offered no tools of its own, so that
	// the restore is tried; a request with tools (or not JSON, which the
	// restore could not split either) is not split again for it.
	toolsRestored, toolless bool
	// clientSummary: the request is a client's compaction request, one
	// step on from the session's last (Request.ClientSummary).
	clientSummary bool
	// reqTools and reqList are the "tools" and list members of an OpenAI
	// request's body as read (subslices of it), for the tools memo
	// (toolMemos.rememberParts).
	reqTools, reqList []byte
	// sentListParts is the list an edited body sent, as its parts (see
	// sendBody); nil when the body went as read.
	sentListParts [][]byte
	// undo records what the Engine's preparation stored, taken back when
	// the upstream refuses the request (undo.go).
	undo *undoLog
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	bodyDeadline(w, r, timeout(s.opts.ClientBodyTimeout, DefaultClientBodyTimeout))
	if s.refuseBrowser(w, r) || s.serveOwn(w, r) {
		return
	}
	x := &exchange{start: s.opts.Now(), status: 0, client: clientOf(r.UserAgent()), cut: -1}
	if ctx, sp := s.startSpan(r.Context(), SpanRequest, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path))); sp != nil {
		defer sp.End()
		r = r.WithContext(ctx)
	}
	rt := s.route(r)
	x.api = rt.api
	if rt.api != "" {
		x.fam = rt.fam
	}
	body, sent, ok := s.readAndPrepare(w, r, rt, x)
	if !ok {
		return
	}
	if !sent.read && body != nil && r.Body != http.NoBody {
		// The body goes upstream as it comes, while the answer may
		// start: without full duplex, net/http would discard and close
		// what is left of it at the answer's first write, and the
		// transport, still sending it, would close the upstream
		// connection (the answer cut). Not supported on HTTP/2, which
		// needs nothing.
		_ = http.NewResponseController(w).EnableFullDuplex()
	}
	f := &forward{s: s, r: r, x: x, rt: rt, body: body, sent: sent}
	defer f.done()
	s.proxyHandler(f).ServeHTTP(w, r)
}

// serveOwn serves the proxy's own endpoints (stats, metrics, dashboard,
// MCP) and refuses what it does not forward (upgrades, other providers'
// APIs); it reports whether it answered r.
func (s *Server) serveOwn(w http.ResponseWriter, r *http.Request) bool {
	get := r.Method == http.MethodGet || r.Method == http.MethodHead
	if (r.URL.Path == StatsPath || r.URL.Path == MetricsPath || s.isDashboard(r.URL.Path)) && get || isMCP(r.URL.Path) {
		if !httpguard.Allowed(r, s.opts.Token) && !s.dashboardToken(r) {
			httpguard.Refuse(w, r, s.opts.Token)
			return true
		}
		switch {
		case s.isDashboard(r.URL.Path):
			s.serveDashboard(w, r)
		case isMCP(r.URL.Path):
			s.serveMCP(w, r)
		case r.URL.Path == MetricsPath:
			s.serveMetrics(w, r)
		default:
			s.serveStats(w)
		}
		return true
	}
	if isH2CUpgrade(r.Header) {
		// An offer to upgrade to HTTP/2 in the clear: a server may ignore
		// it and answer over HTTP/1.1 (RFC 9113 dropped the upgrade;
		// prior knowledge is served), and it must not reach the upstream.
		r.Header.Del("Upgrade")
		r.Header.Del("Http2-Settings")
		dropConnectionTokens(r.Header, "upgrade", "http2-settings")
	}
	if foreign := foreignAPIOf(r, func() family.Family { return s.route(r).fam }); foreign != notForeign {
		foreign.refuse(w) // foreign.go; before the upgrade check, so that it names the family
		s.log.Info("proxy: refused a request of another API", "method", r.Method, "path", r.URL.Path, "api", foreign.String(), "status", http.StatusBadRequest)
		return true
	}
	if isWebsocketUpgrade(r.Header) {
		s.refuseUpgrade(w, r)
		s.log.Info("proxy: refused an upgrade", "method", r.Method, "path", r.URL.Path, "status", http.StatusUpgradeRequired)
		return true
	}
	return false
}

// readAndPrepare reads the body of a request of a known API (within
// MaxBody) and prepares it: the body to forward when it was not read
// whole, else the body read and prepared (sent). ok is false when the
// client was answered (a body that could not be read).
func (s *Server) readAndPrepare(w http.ResponseWriter, r *http.Request, rt route, x *exchange) (body io.Reader, sent sendBody, ok bool) {
	body = r.Body
	x.bill.model = rt.model // the body's, when it names one and is read
	if rt.api == "" || r.ContentLength > s.opts.MaxBody {
		return body, sendBody{}, true
	}
	raw, err := readBody(r.Body, r.ContentLength, s.opts.MaxBody)
	if err != nil {
		status := http.StatusBadRequest
		if errors.Is(err, os.ErrDeadlineExceeded) {
			status = http.StatusRequestTimeout // ClientBodyTimeout
		}
		writeError(w, status, "agentctx proxy: reading the request body: "+err.Error())
		return nil, sendBody{}, false
	}
	if int64(len(raw)) > s.opts.MaxBody {
		return io.MultiReader(bytes.NewReader(raw), r.Body), sendBody{}, true
	}
	x.bytesIn = len(raw)
	sent = s.prepare(r, rt, raw, x)
	if x.toolless && s.tools.remembers(x.api, x.session) { // the body joined only then
		if restored, ok := s.tools.restore(x.api, x.session, sent.Bytes()); ok {
			sent, x.toolsRestored, x.sentListParts = wholeBody(restored), true, nil
		}
	}
	if !x.toolsRestored && x.reqList != nil && x.sentListParts == nil {
		x.sentListParts = [][]byte{x.reqList} // sent as read
	}
	x.bytesOut = sent.Len()
	return nil, sent, true
}

// addBetas adds the betas the prepared request needs to the upstream
// request's headers.
func (s *Server) addBetas(h http.Header, x *exchange) {
	if x.dropBlock {
		addBeta(h, ThinkingBindingBeta)
	}
	if x.native {
		addBeta(h, ContextManagementBeta)
	}
	if x.cut >= 0 || x.compactInstr != "" {
		addBeta(h, ctxedit.CompactBeta)
	}
}

// recordSent records what the exchange sends (messages, thinking blocks)
// while the upstream works, and before the answer: the client may send its
// next request as soon as the answer's last bytes reach it. The channel
// is closed once done; nil when there is nothing to record.
func (s *Server) recordSent(x *exchange) chan struct{} {
	if x.session == "" || x.sentEnc == nil {
		return nil
	}
	recorded := make(chan struct{})
	st := s.stats.get(x.session)
	go func() {
		defer close(recorded)
		st.sentMessages(x)
		if x.api == APIAnthropic && x.thinkingOn {
			s.sentThinking(x)
		}
		if x.api == APIAnthropic && s.opts.ContextManagement == ContextNative {
			st.last.set(x.sentMsgs, x.sentEnc) // nativePrepared's: kept only where it is read
		}
	}()
	return recorded
}

func headerHas(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// isH2CUpgrade reports whether h offers an upgrade to HTTP/2 in the
// clear (Upgrade: h2c, and no other protocol).
func isH2CUpgrade(h http.Header) bool {
	return strings.EqualFold(strings.TrimSpace(h.Get("Upgrade")), "h2c") && len(h.Values("Upgrade")) == 1
}

// dropConnectionTokens removes tokens (lower case) from h's Connection
// header, and the header when none is left.
func dropConnectionTokens(h http.Header, tokens ...string) {
	var keep []string
	for _, v := range h.Values("Connection") {
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" && !slices.Contains(tokens, strings.ToLower(t)) {
				keep = append(keep, t)
			}
		}
	}
	if len(keep) == 0 {
		h.Del("Connection")
		return
	}
	h.Set("Connection", strings.Join(keep, ", "))
}

// prepare runs the Engine on an editable body and returns the body to
// send: raw itself when nothing changed. Whatever fails, the client's
// request goes upstream as it came.
func (s *Server) prepare(r *http.Request, rt route, raw []byte, x *exchange) sendBody {
	_, dsp := s.startSpan(r.Context(), SpanDecode)
	endDecode := func(err error) {
		endSpan(dsp, err)
		dsp = nil
	}
	defer func() { endDecode(nil) }()
	b, tenant, ok := s.readRequest(r, rt, raw, x)
	if !ok || s.opts.Engine == nil {
		return wholeBody(raw)
	}
	conv, err := decodeConversation(r.Context(), rt.api, b)
	endDecode(err)
	if err != nil {
		x.engineErr = err
		return wholeBody(raw)
	}
	if conv == nil {
		return wholeBody(raw) // no list of messages to edit
	}
	req, cut := s.engineRequest(r, rt, b, conv, tenant, x)
	x.undo = &undoLog{}
	pctx, psp := s.startSpan(withUndo(withSummaries(r.Context(), x), x.undo), SpanPrepare)
	pstart := time.Now()
	prep, err := s.opts.Engine.Prepare(pctx, req)
	s.traceSteps(pctx, pstart, prep)
	endSpan(psp, err)
	if err != nil && r.Context().Err() != nil {
		return wholeBody(raw) // the client went away: its cancel (forward), not an engine fault
	}
	if err != nil {
		x.engineErr = err
		return wholeBody(raw)
	}
	x.prepared = prep
	if rt.api == APIAnthropic {
		prep = s.nativePrepared(x, conv, cut, prep)
	}
	if prep.Unchanged {
		recordUnchanged(rt.api, conv, x)
		return wholeBody(raw)
	}
	out, err := s.edit(rt.api, b, conv, prep, x)
	if err != nil {
		x.engineErr = err
		return wholeBody(raw)
	}
	return out
}

// readRequest splits the body and reads what the exchange needs of it
// (session, tenant, model, thinking). ok is false when the body is to go
// upstream untouched: not JSON, no tenant credentials, or a Responses
// request whose history lives upstream.
func (s *Server) readRequest(r *http.Request, rt route, raw []byte, x *exchange) (b *body, tenant string, ok bool) {
	var err error
	switch {
	case s.opts.Engine != nil && rt.api != "" && !s.plainDecode:
		b, err = parseBody(raw, newListScan(s.decoded, rt.api, r.Header))
	case s.opts.Engine == nil && s.prints != nil && rt.api != "":
		b, err = parsePrinted(raw, newPrintScan(s.prints, rt.api, r.Header))
	default:
		b, err = parseBody(raw, nil)
	}
	if err != nil {
		return nil, "", false // not JSON: the upstream will answer
	}
	if key := listKey(rt.api); key != "" {
		x.toolless, x.reqTools, x.reqList = toolless(b.Members), b.get("tools"), b.get(key)
	}
	x.session = s.conversationKey(r.Header, b)
	defer func() { s.warm.disarm(x.session) }() // the session's client is back
	if s.opts.Tenants {
		t, ok := Tenant(r.Header)
		if !ok {
			return nil, "", false // no credentials: the upstream answers, nothing is kept
		}
		tenant, x.session, x.tenant = t, "t-"+t+"-"+x.session, t
	}
	x.bill.model = cmp.Or(b.str("model"), rt.model)
	if !rt.fam.Editable(&b.Body) {
		return nil, "", false // the history lives upstream: nothing to edit
	}
	if rt.api == APIAnthropic {
		t := b.get("thinking")
		x.thinkingOn = rawjson.Kind(t) == '{' && stringOf(rawjson.Get(t, "type")) != "disabled"
	}
	return b, tenant, true
}

// engineRequest returns the Engine's Request for a decoded conversation,
// and the compaction cut it was made from (native context management: the
// Engine reads the history from the last compaction block on), or nil.
func (s *Server) engineRequest(r *http.Request, rt route, b *body, conv *conversation, tenant string, x *exchange) (*Request, *compactionCut) {
	system := b.get(rt.fam.Info().System)
	doc, facts := conv.doc, conv.facts
	var cut *compactionCut
	if rt.api == APIAnthropic && s.opts.ContextManagement == ContextNative && x.session != "" {
		// The Engine reads what the server reads: the history from the
		// last compaction block on (native.go).
		if cut = s.cutAtCompaction(x, conv.doc.Messages); cut != nil {
			doc, facts, x.cut = conv.doc.WithMessages(cut.tail), cut.facts(conv.facts), cut.at
		}
	}
	req := &Request{API: rt.api, SessionKey: x.session, Tenant: tenant, Header: r.Header, Model: cmp.Or(b.str("model"), rt.model), Document: doc, Facts: facts,
		Tools: b.get("tools"), System: system, ThinkingEnabled: x.thinkingOn, Received: x.start,
		CacheRetention: b.str("prompt_cache_retention")}
	if rt.api == APIAnthropic && x.thinkingOn {
		req.Binding = pipeline.CallOptions{Bound: thinking.Bound(doc.Messages), EditBound: s.opts.ContextManagement == ContextNative}
	}
	if x.toolless {
		x.clientSummary = s.tools.clientSummary(rt.api, x.session, x.reqList)
		req.ClientSummary = x.clientSummary
	}
	x.bill.tools, x.bill.system, x.bill.auto, x.bill.in = req.Tools, req.System, b.get("cache_control"), conv
	return req, cut
}

// nativePrepared returns what to send of an Anthropic request the Engine
// prepared: when the provider compacts, the messages as the last request
// sent them, then the new ones, the summary's pointers in the edit's
// instructions; under a compaction cut, the cut's prefix joined again
// (native.go).
func (s *Server) nativePrepared(x *exchange, conv *conversation, cut *compactionCut, prep *Prepared) *Prepared {
	if instr := s.nativeCompactionFor(prep); instr != "" {
		full := conv.doc.Messages
		if cut != nil {
			full = append(append([]agentctx.Message(nil), cut.prefix...), cut.tail...)
		}
		last, _ := s.stats.get(x.session).last.get()
		if msgs := ctxedit.Uncompacted(full, last); msgs != nil {
			q := *prep
			q.Messages, q.Unchanged, q.Sources, q.Facts = msgs, false, nil, nil
			prep, cut, x.compactInstr = &q, nil, instr
		}
	}
	if cut != nil {
		prep = cut.join(prep)
	}
	return prep
}

// recordUnchanged records what an unchanged request sends, in the form
// edited requests record it: message encodings (for Responses, of the
// items mapped onto messages).
func recordUnchanged(api API, conv *conversation, x *exchange) {
	if conv.enc == nil {
		conv.enc, _ = encodeAll(conv.doc.Messages)
	}
	x.sentEnc, x.sentHash = conv.enc, conv.hash
	if api != APIResponses {
		x.sentMsgs = conv.doc.Messages
	} else {
		x.viewMsgs = conv.doc.Messages // the items mapped onto messages, for the dashboard
	}
	if api == APIAnthropic {
		x.thinkIn = countThinking(conv.doc.Messages)
		x.thinkOut = x.thinkIn
	}
}

// conversation is the decoded history of an editable body.
type conversation struct {
	doc    *agentctx.Document
	list   []byte   // the raw "messages" or "input" value
	items  [][]byte // each message's (or Responses item's) raw bytes
	groups [][]int  // Responses: the items of each message
	enc    [][]byte // each message's encoding, when known
	hash   []uint64 // each message's msgHash, when known
	breaks []int    // each message's number of breakpoints, when known
	// facts are what the Engine is told of each message (Request.Facts),
	// nil when not known.
	facts []agentctx.Facts
}

// decodeConversation decodes the messages of a body; nil when it holds no
// list of messages.
func decodeConversation(ctx context.Context, api API, b *body) (*conversation, error) {
	c := &conversation{}
	c.list = b.get(familyOf(api).Info().List)
	if rawjson.Kind(c.list) != '[' {
		return nil, nil
	}
	var err error
	if ls := b.scan; ls != nil {
		// Split as the body was, the messages the cache held reused.
		c.items = ls.Items
		if api == APIResponses {
			dm, err := ls.decodeItems()
			if err != nil {
				return nil, err
			}
			if err := c.mapItems(dm); err != nil {
				return nil, err
			}
			return c, nil
		}
		dm, msgs, err := ls.decodeMessages()
		if err != nil {
			return nil, err
		}
		c.enc, c.hash, c.breaks = make([][]byte, len(dm)), make([]uint64, len(dm)), make([]int, len(dm))
		c.facts = make([]agentctx.Facts, len(dm))
		for k, d := range dm {
			c.enc[k], c.hash[k], c.breaks[k] = d.encoding(ls.Items[k]), d.hash, d.bp
			c.facts[k] = d.facts(ls.Items[k])
		}
		if c.doc, err = agentctx.RequestDocumentSplit(b.Raw, b.Members, c.list, msgs); err != nil {
			return nil, err
		}
		if len(c.doc.Messages) != len(c.items) {
			return nil, fmt.Errorf("decoded %d messages of %d", len(c.doc.Messages), len(c.items))
		}
		return c, nil
	}
	if c.items, err = rawjson.Elements(c.list); err != nil {
		return nil, err
	}
	if api == APIResponses {
		msgs, groups, err := ResponsesMessages(c.items)
		if err != nil {
			return nil, err
		}
		c.doc, c.groups = &agentctx.Document{Format: agentctx.FormatArray, Messages: msgs}, groups
		return c, nil
	}
	if c.doc, err = agentctx.ParseDocument(ctx, b.Raw); err != nil {
		return nil, err
	}
	if len(c.doc.Messages) != len(c.items) {
		return nil, fmt.Errorf("decoded %d messages of %d", len(c.doc.Messages), len(c.items))
	}
	return c, nil
}

// mapItems maps the decoded Responses items of c onto messages (see
// ResponsesMessages): a message or output item is its cached message, a
// run of calls and reasoning the assistant message it made last time.
func (c *conversation) mapItems(dm []*decodedMsg) error {
	its := make([]*responseItem, len(dm))
	for k, d := range dm {
		its[k] = d.item()
	}
	msgs, groups := groupResponseItems(its)
	c.groups = groups
	c.doc = &agentctx.Document{Format: agentctx.FormatArray, Messages: msgs}
	c.enc, c.hash, c.breaks = make([][]byte, len(msgs)), make([]uint64, len(msgs)), make([]int, len(msgs))
	c.facts = make([]agentctx.Facts, len(msgs))
	for k, g := range groups {
		if d := dm[g[0]]; len(g) == 1 && (d.item().Kind == itemMessage || d.item().Kind == itemOutput) {
			c.hash[k], c.breaks[k] = d.hash, d.bp // the encoding, when needed, from the message
			c.facts[k].Hash = d.key
			continue
		}
		run := make([]*decodedMsg, len(g))
		for i, idx := range g {
			run[i] = dm[idx]
		}
		gm, err := grouped(run, msgs[k])
		if err != nil {
			return err
		}
		msgs[k], c.enc[k], c.hash[k], c.breaks[k] = gm.msg, gm.enc, gm.hash, gm.bp
		c.facts[k] = agentctx.Facts{Encoding: gm.enc, Hash: gm.key}
	}
	return nil
}

// edit returns the body to send for the messages the Engine prepared:
// raw when they are the request's own, else raw with only the list of
// messages (and, when the thinking rule asks for it, the thinking
// options) rewritten.
func (s *Server) edit(api API, b *body, conv *conversation, prep *Prepared, x *exchange) (sendBody, error) {
	inEnc, inHash := conv.enc, conv.hash
	if inEnc == nil {
		var err error
		if inEnc, err = encodeAll(conv.doc.Messages); err != nil {
			return sendBody{}, err
		}
	}
	a, err := align(conv.doc.Messages, inEnc, inHash, conv.breaks, prep.Messages, prep.Sources, prep.Facts)
	if err != nil {
		return sendBody{}, err
	}
	var cmEdit []byte
	if api == APIAnthropic {
		x.thinkIn = countThinking(conv.doc.Messages)
		cmEdit = s.placeEdits(a, conv.doc.Messages, inEnc, x)
	}
	if api == APIAnthropic && !a.unchanged(len(inEnc)) {
		if inHash == nil {
			inHash = hashesOf(inEnc, nil)
		}
		verdict, err := fixThinking(inEnc, inHash, a, s.thinkingMemory(x), x.thinkingOn, &s.digests)
		if err != nil {
			return sendBody{}, err
		}
		if verdict == thinkingDrop {
			x.dropBlock = true
		}
		addBreakpoint(a, b.get("system"), b.get("tools"))
	}
	if api == APIAnthropic {
		x.thinkOut = countThinking(a.out)
	}
	x.sentEnc, x.sentHash, x.sentMsgs, x.sentMatch = a.outEnc, a.outHash, a.out, a.match
	x.bill.sentBreaks = a.outBreaks
	if a.unchanged(len(inEnc)) && cmEdit == nil && compactionEdit(x) == nil {
		return wholeBody(b.Raw), nil
	}
	var spans []span
	if api == APIResponses {
		x.provCmp = x.prepared != nil && x.prepared.Compacted && providerCompacted(a)
		spans = append(spans, spliceResponses(b.Raw, conv.list, conv.items, conv.doc.Messages, conv.groups, a))
	} else {
		spans = append(spans, span{value: conv.list, parts: splicedParts(b.Raw, conv.items, a)})
	}
	x.sentListParts = spans[0].parts
	if x.dropBlock {
		th := b.get("thinking")
		spans = append(spans, span{value: th, repl: withDropBlock(th)})
	}
	var cmEdits [][]byte
	if cmEdit != nil {
		cmEdits = append(cmEdits, cmEdit)
	}
	if api == APIAnthropic {
		if ce := compactionEdit(x); ce != nil {
			cmEdits = append(cmEdits, ce)
		}
	}
	cm := b.get("context_management")
	if cmEdits != nil && cm != nil {
		spans = append(spans, span{value: cm, repl: ctxedit.WithEdit(cm, cmEdits...)})
	}
	x.edited = true
	out := replaceParts(b.Raw, spans...)
	if cmEdits != nil && cm == nil {
		out = appendMember(out, "context_management", ctxedit.WithEdit(nil, cmEdits...))
	}
	return out, nil
}

// observe feeds the usage of an exchange to the engine, once, when it is
// complete (Anthropic's message_delta, which message_stop follows; the chat
// usage chunk, before [DONE]; Responses' response.completed; a whole JSON
// answer), naming the request it is for.
func (s *Server) observe(ctx context.Context, x *exchange, u pricing.Usage) {
	if x.observed || x.session == "" || s.opts.Engine == nil || u.Input() <= 0 {
		return
	}
	if x.prepared == nil && x.engineErr != nil {
		// Forwarded unedited because the engine failed (a hung store):
		// the usage is not that of a request the engine prepared, and
		// recording it would hold the answer on the same store.
		return
	}
	x.observed = true
	ctx, sp := s.startSpan(ctx, SpanStore)
	defer endSpan(sp, nil)
	counted := 0
	if p := x.prepared; p != nil {
		counted = p.TokensAfter
	}
	if s.keeper() != nil {
		// One write of the usage and the thinking. (ku escapes: it is
		// allocated on this path alone.)
		ku := u
		s.recordThinking(ctx, x, &ku, counted)
		return
	}
	s.opts.Engine.Observe(ctx, x.session, u, counted)
}

func (s *Server) finish(r *http.Request, x *exchange) {
	if x.undo != nil {
		x.undo.release() // accepted, or rolled back already
	}
	dur := s.opts.Now().Sub(x.start)
	var st *sessionStats
	if x.session != "" {
		st = s.stats.get(x.session)
	}
	s.bill(st, x)
	if s.ledger != nil {
		if e, ok := s.ledgerEntry(x); ok {
			s.ledger.add(e)
		}
	}
	s.stats.addTotal(x)
	s.metrics.record(x)
	traceFinish(r, x)
	if st != nil {
		st.record(x, s.opts.Project)
		recordView(s.stats.views, x.session, x)
		if x.gotUsage {
			s.observe(context.WithoutCancel(r.Context()), x, x.usage) // when relay did not already
		}
		if len(x.thinkKnown)+len(x.thinkSent) > 0 && (x.prepared != nil || x.engineErr == nil) {
			s.recordThinking(context.WithoutCancel(r.Context()), x, nil, 0) // what no usage carried
		}
	}
	attrs := []any{"method", r.Method, "path", r.URL.Path, "status", x.status, "duration_ms", ms(dur)}
	if x.api != "" {
		attrs = append(attrs, "api", string(x.api), "session", x.session, "edited", x.edited,
			"bytes_in", x.bytesIn, "bytes_out", x.bytesOut, "overhead_ms", ms(x.overhead))
		if p := x.prepared; p != nil {
			attrs = append(attrs, "tokens_before", p.TokensBefore, "tokens_after", p.TokensAfter, "compacted", p.Compacted, "prefix_changed", p.PrefixChanged)
		}
		if x.dropBlock {
			attrs = append(attrs, "thinking", DropBlock)
		}
		if x.toolsRestored {
			attrs = append(attrs, "tools_restored", true)
		}
		if x.clientSummary {
			attrs = append(attrs, "client_summary", true)
		}
		if x.gotUsage {
			attrs = append(attrs, "usage_input", x.usage.Input(), "usage_output", x.usage.Output)
		}
		if b := &x.bill; b.billed {
			attrs = append(attrs, "cost_usd", round6(b.cost), "cost_without_usd", round6(b.costWithout))
		}
		if b := &x.bill; len(b.summaries) > 0 {
			attrs = append(attrs, "summary_requests", len(b.summaries), "summary_cost_usd", round6(b.summaryCost))
		}
		if x.engineErr != nil {
			attrs = append(attrs, "engine_error", x.engineErr.Error())
		}
	}
	s.log.Info("proxy: request", attrs...)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b := []byte(`{"type":"error","error":{"type":"proxy_error","message":`)
	b = rawjson.AppendString(b, msg)
	w.Write(append(b, "}}\n"...))
}

// redactErr keeps an upstream error's message free of URLs with
// credentials in them.
func redactErr(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + ": " + ue.Err.Error()
	}
	return err.Error()
}

var _ http.Handler = (*Server)(nil)

// statsTable holds per-session state and statistics.
type statsTable struct {
	mu       sync.Mutex
	sessions map[string]*sessionStats
	total    TotalStats
	base     TotalStats // what the ledger held at the start (StartFromLedger)
	views    *viewTable // the dashboard's, of the sessions seen last
}

func newStatsTable() *statsTable {
	return &statsTable{sessions: map[string]*sessionStats{}, views: newViewTable(maxViewBytes)}
}

// maxStatsSessions bounds the sessions the statistics keep; the least
// recently seen go first.
const maxStatsSessions = 10_000

func (t *statsTable) get(key string) *sessionStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.sessions[key]
	if s == nil {
		if len(t.sessions) >= maxStatsSessions {
			t.evictOldest()
		}
		s = &sessionStats{}
		t.sessions[key] = s
	}
	return s
}

// readBody reads up to max+1 bytes, in one allocation when the length is
// known.
func readBody(r io.Reader, n, max int64) ([]byte, error) {
	if n < 0 || n > max {
		return io.ReadAll(io.LimitReader(r, max+1))
	}
	buf := make([]byte, n, n+1)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	// A body longer than announced is an error of the client's; read one
	// more byte to notice it.
	var one [1]byte
	if k, _ := r.Read(one[:]); k > 0 {
		return append(buf, one[0]), nil
	}
	return buf, nil
}

// addBeta adds a beta to the anthropic-beta header unless it is there.
func addBeta(h http.Header, beta string) {
	v := h.Get("Anthropic-Beta")
	for _, b := range strings.Split(v, ",") {
		if strings.TrimSpace(b) == beta {
			return
		}
	}
	if v != "" {
		v += ","
	}
	h.Set("Anthropic-Beta", v+beta)
}

// evictOldest drops the least recently seen session. t.mu is held.
func (t *statsTable) evictOldest() {
	var oldKey string
	var oldest time.Time
	for k, s := range t.sessions {
		s.mu.Lock()
		seen := s.lastSeen
		s.mu.Unlock()
		if oldKey == "" || seen.Before(oldest) {
			oldKey, oldest = k, seen
		}
	}
	delete(t.sessions, oldKey)
}
