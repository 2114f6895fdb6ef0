package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/httpguard"
	"github.com/agentctx/agentctx/mcpserver"
	"github.com/agentctx/agentctx/offload"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pricing"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/prune"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/workspace"
)

const summarizerUpstream = "upstream"

func newProxyCmd(e *env) *cobra.Command {
	var p proxyFlags
	cmd := &cobra.Command{
		Use:         "proxy",
		Annotations: map[string]string{longRunningKey: "true"},
		Short:       "Serve the Anthropic and OpenAI APIs with context management in front",
		Long: `proxy listens for model requests, runs the pipeline on each conversation
(one session per conversation) and forwards them to the upstream API,
streaming the answers back as they arrive. Point Claude Code at it with
ANTHROPIC_BASE_URL (printed on start), or a Codex provider's base_url
(http://ADDR/v1, wire_api "responses").

POST /v1/messages, /v1/chat/completions and /v1/responses (with store
false and no previous_response_id) are edited; the Gemini API's
models/{model}:generateContent and :streamGenerateContent (Gemini CLI
with GOOGLE_GEMINI_BASE_URL) are billed, keyed to sessions and logged,
not edited yet; everything else passes through. A request that needs no edit goes upstream byte for byte. What a
web page could send is refused (403): an Origin other than the proxy's
own loopback origin, a model request sent as text/plain or a form.
GET /agentctx/stats reports per session, GET /metrics the same in the
Prometheus text format, /agentctx/ is a dashboard of both (all need
--token, or a request from this machine to a loopback Host; a --listen
address that is not loopback needs --token); --otel traces each request
over OTLP.
SIGINT (Ctrl-C) or SIGTERM stops accepting and lets the requests in
flight finish; the exit code is then 130. A line is logged per request
(-v: also per stored tool result).

The stats carry money per session and in "total": cost_usd (the usage
the upstream reported, summary requests included, at list prices;
--prices FILE overrides them), cost_without_usd (an estimate of the same
requests sent unedited: two simulated prompt caches, see the proxy
package's documentation) and saved_usd; each request's log line carries
its cost_usd and cost_without_usd. Every answered request is also recorded
in the ledger kept beside the session state (agentctx savings reads it),
and "total" and the /metrics counters start from it at the next start.

/mcp serves the read-back tools (get_knowledge_by_id, ...; see agentctx
mcp) over MCP streamable HTTP, reading the store and namespace the proxy
writes to, every session: the proxy prints the line that registers it,

  claude mcp add --transport http agentctx http://127.0.0.1:8787/mcp`,
		Example: `  agentctx proxy --limit 150000
  ANTHROPIC_BASE_URL=http://127.0.0.1:8787 claude
  claude mcp add --transport http agentctx http://127.0.0.1:8787/mcp
  agentctx proxy --store postgres://agentctx@db/agentctx --listen 0.0.0.0:8787 --token "$AGENTCTX_TOKEN"
  curl -s http://127.0.0.1:8787/agentctx/stats | jq '.sessions[] | {requests, compactions, prefix_changes, cache_breaks}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := e.logger
			if !log.Enabled(cmd.Context(), slog.LevelInfo) {
				log = slog.New(slog.NewTextHandler(e.s.Err, &slog.HandlerOptions{Level: slog.LevelInfo}))
			}
			srv, closeAll, err := p.server(cmd, e, log)
			if err != nil {
				return err
			}
			defer closeAll()
			ln, err := p.listenTCP()
			if err != nil {
				return err
			}
			p.banner(e, ln.Addr())
			if err := srv.Serve(cmd.Context(), ln); err != nil {
				return err
			}
			// Stopped by a signal once the requests in flight finished:
			// exit 130, as every interrupted command does.
			return cmd.Context().Err()
		},
	}
	p.register(cmd, "127.0.0.1:8787")
	return cmd
}

// proxyFlags are the options of agentctx proxy, shared with the commands
// that start one for a client (claude, codex).
type proxyFlags struct {
	f                   prepareFlags
	listen, contextMgmt string
	anthropicURL, oaURL string
	geminiURL           string
	maxSessions         int
	sessionMemoryMB     int
	decodeCacheMB       int
	pricesFile          string
	token               string
	tenants             bool
	clockSpeed          float64
	now                 func() time.Time // a simulation's clock (SimulatedProxy); nil: the wall clock, or --clock-speed
	// after runs a function later on the clock now (SimulatedProxy); nil:
	// on the wall clock, or --clock-speed's.
	after      func(time.Duration, func()) func() bool
	keepWarm   int
	storeEvery bool
	otel       bool
	retain     retentionFlags
	timeouts   proxyTimeouts
	// budget is the workspace's byte budget: per session and in all
	// (--workspace-session-bytes, --workspace-total-bytes; 0: none).
	budget struct{ session, total byteSize }
}

// proxyTimeouts are the proxy's bounds on its waits for the upstream and
// for its clients (0: none).
type proxyTimeouts struct {
	upstream, upstreamIdle         time.Duration
	clientHeader, clientBody, idle time.Duration
}

// check refuses a negative bound and returns the proxy options' form of
// the flags' (0, none, is a negative value there).
func (t proxyTimeouts) check(o *proxy.Options) error {
	none := func(d time.Duration) time.Duration {
		if d == 0 {
			return -1
		}
		return d
	}
	for _, f := range []struct {
		name string
		d    time.Duration
		to   *time.Duration
	}{
		{"upstream-timeout", t.upstream, &o.UpstreamHeaderTimeout},
		{"upstream-idle-timeout", t.upstreamIdle, &o.UpstreamIdleTimeout},
		{"client-header-timeout", t.clientHeader, &o.ClientHeaderTimeout},
		{"client-body-timeout", t.clientBody, &o.ClientBodyTimeout},
		{"client-idle-timeout", t.idle, &o.ClientIdleTimeout},
	} {
		if f.d < 0 {
			return usagef("invalid --%s %s: must not be negative (0: none)", f.name, f.d)
		}
		*f.to = none(f.d)
	}
	return nil
}

// server checks the flags, opens the stores and builds the proxy, logging
// to log; closeAll releases what it opened.
func (p *proxyFlags) server(cmd *cobra.Command, e *env, log *slog.Logger) (srv *proxy.Server, closeAll func(), err error) {
	f := &p.f
	var closers []func() error
	cleanup := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	defer func() {
		if err != nil {
			cleanup()
		}
	}()
	if _, err := p.listenAddr(); err != nil {
		return nil, nil, err // before any store is opened
	}
	po, summ, prices, err := p.pipelineOptions(cmd, e, log)
	if err != nil {
		return nil, nil, err
	}
	loc, err := p.workspaceLocation(e)
	if err != nil {
		return nil, nil, err
	}
	store, err := openStore(cmd.Context(), loc)
	if err != nil {
		return nil, nil, err
	}
	closers = append(closers, store.Close)
	sessions, err := openSessions(cmd.Context(), loc)
	if err != nil {
		return nil, nil, err
	}
	closers = append(closers, sessions.Close)
	tp, shutdown, err := p.tracerProvider(cmd.Context())
	if err != nil {
		return nil, nil, err
	}
	if shutdown != nil {
		closers = append(closers, shutdown)
	}
	// The engine's artifact and session state reads and writes are spans
	// of the request they serve (retention's are not traced).
	po.Store, po.Sessions = proxy.TraceWorkspace(store, tp), proxy.TraceSessions(sessions, tp)
	engine, err := p.engine(po, summ, log)
	if err != nil {
		// A bad option is bad usage, a store that cannot be opened a
		// runtime failure (ExitCode).
		return nil, nil, err
	}
	mcpHandler, dashReadBack := p.readBack(store, log)
	// Every answered request's money goes to the ledger kept beside the
	// session state (agentctx savings reads it); a store without one
	// keeps none.
	ledger, _ := session.LedgerOf(sessions)
	project, _ := os.Getwd()
	decodeCache := int64(p.decodeCacheMB) << 20
	if p.decodeCacheMB == 0 {
		decodeCache = -1 // keep nothing
	}
	popts := proxy.Options{Engine: engine, AnthropicURL: p.anthropicURL, OpenAIURL: p.oaURL, GeminiURL: p.geminiURL, Logger: log, DecodeCacheBytes: decodeCache,
		MCP: mcpHandler, Prices: prices, Token: p.token, Tenants: p.tenants, ContextManagement: proxy.ContextManagement(p.contextMgmt),
		TracerProvider: tp, ReadBack: dashReadBack, Ledger: ledger, Project: project, Namespace: f.namespace, KeepWarm: p.keepWarm}
	popts.Now, popts.AfterFunc = p.clock()
	if p.keepWarm == 0 {
		popts.KeepWarm = -1 // none
	}
	if err := p.timeouts.check(&popts); err != nil {
		return nil, nil, err
	}
	srv, err = proxy.New(popts)
	if err != nil {
		return nil, nil, err // proxy.ErrInvalidURL: bad usage (ExitCode)
	}
	closers = append(closers, srv.Close)
	startFromLedger(cmd.Context(), srv, log)
	stopRetention := startRetention(cmd.Context(), p.retain, store, sessions, f.namespace, log)
	closers = append(closers, func() error { stopRetention(); return nil })
	return srv, cleanup, nil
}

// banner prints the base URL on stdout and, on stderr, where the proxy
// listens, its statistics, dashboard and MCP endpoint, and where the
// stored results are.
func (p *proxyFlags) banner(e *env, addr net.Addr) {
	base := "http://" + addr.String()
	fmt.Fprintf(e.s.Out, "ANTHROPIC_BASE_URL=%s\n", base)
	fmt.Fprintf(e.s.Err, "agentctx proxy: listening on %s (OpenAI clients: base URL %s/v1); stats at %s%s, dashboard at %s%s\n", base, base, base, proxy.StatsPath, localURL(addr), proxy.DashboardPath)
	fmt.Fprintf(e.s.Err, "agentctx proxy: read-back tools over MCP at %s%s; for Claude Code:\n", base, proxy.MCPPath)
	fmt.Fprintf(e.s.Err, "claude mcp add --transport http agentctx %s%s\n", localURL(addr), proxy.MCPPath)
	if dirs := p.readDirs(); len(dirs) > 0 {
		// The references name files there; Claude Code asks before
		// reading outside its project.
		fmt.Fprintf(e.s.Err, "agentctx proxy: stored results under %s; for Claude Code to read them by path: claude --add-dir %s\n", strings.Join(dirs, ", "), strings.Join(dirs, " "))
	}
}

// workspaceLocation resolves the workspace (the project's default unless
// --workspace or --store names one) and the offload directory, makes the
// workspace's directory, and returns the location the stores open.
func (p *proxyFlags) workspaceLocation(e *env) (string, error) {
	f := &p.f
	if f.store == "" {
		var err error
		if f.workspace, err = e.workspaceOr(f.workspace); err != nil {
			return "", err
		}
	}
	if err := p.offloadDir(); err != nil {
		return "", err
	}
	loc, err := location(f.store, f.workspace)
	if err != nil {
		return "", err
	}
	return loc, makeWorkspaceDir(loc)
}

// startFromLedger lets the totals and counters go on from what the ledger
// holds; a ledger that cannot be read leaves them at zero, and the proxy
// serves anyway.
func startFromLedger(ctx context.Context, srv *proxy.Server, log *slog.Logger) {
	lctx, cancel := context.WithTimeout(ctx, proxy.DefaultLedgerTimeout)
	defer cancel()
	if err := srv.StartFromLedger(lctx); err != nil {
		log.Warn("proxy: the totals start at zero", "err", err.Error())
	}
}

// pipelineOptions checks the flags and returns the pipeline's options,
// logging to log (the workspace's line per stored result at debug level),
// the summarizer asked for (summarizerUpstream included, which the
// pipeline's options name as the extractive one) and the price table.
func (p *proxyFlags) pipelineOptions(cmd *cobra.Command, e *env, log *slog.Logger) (po pipeline.Options, summ string, prices pricing.Table, err error) {
	f := &p.f
	if cm := proxy.ContextManagement(p.contextMgmt); cm != proxy.ContextClient && cm != proxy.ContextNative {
		return po, "", nil, usagef("--context-management %q: want client or native", p.contextMgmt)
	}
	summ = f.summarizer
	if summ == summarizerUpstream {
		f.summarizer = summarizerExtractive
	}
	po, err = f.options(e, cmd.Flags().Changed)
	if err != nil {
		return po, "", nil, err
	}
	if !cmd.Flags().Changed("tail-ratio") {
		// The live default is the pipeline's: under the priced trigger
		// pipeline.PricedTailRatio, else the seed's. The flag's own
		// default is the single-shot commands'.
		po.Compact.TailRatio = 0
	}
	if p.maxSessions < 1 {
		return po, "", nil, usagef("invalid --max-sessions %d: must be at least 1", p.maxSessions)
	}
	if p.sessionMemoryMB < 0 {
		return po, "", nil, usagef("invalid --session-memory %d: must be 0 (no bound but --max-sessions) or more MiB", p.sessionMemoryMB)
	}
	if p.decodeCacheMB < 0 {
		return po, "", nil, usagef("invalid --decode-cache %d: must be 0 (none) or more MiB", p.decodeCacheMB)
	}
	if p.clockSpeed <= 0 {
		return po, "", nil, usagef("invalid --clock-speed %g: must be more than 0", p.clockSpeed)
	}
	if p.clockSpeed != 1 && cmd.Flags().Changed("now") {
		return po, "", nil, usagef("--clock-speed and --now cannot be used together")
	}
	prices, err = readPrices(p.pricesFile)
	if err != nil {
		return po, "", nil, err
	}
	po.Logger = log
	po.Compact.Logger = log
	// The workspace's line per stored tool result is detail: at
	// debug level, shown with -v only (its errors always).
	po.Workspace.Logger = slog.New(demoteInfo{log.Handler()})
	po.StoreOnReplace = !p.storeEvery // a small result is stored when a decision replaces it
	po.Workspace.Namespace = f.namespace
	po.Workspace.SessionBytes, po.Workspace.TotalBytes = noBound(p.budget.session), noBound(p.budget.total)
	po.Compact.Dir = f.dir
	po.Files.Dir = f.dir
	return po, summ, prices, nil
}

// offloadDir makes the directory of --offload files before the proxy
// serves, so that, made inside a git work tree, it gets the ignore file that
// keeps the results written there out of version control (ignoredDir).
// Other offload modes write no file there.
func (p *proxyFlags) offloadDir() error {
	if pipeline.OffloadMode(p.f.offloadMode) != pipeline.OffloadFiles {
		return nil
	}
	if err := ignoredDir(p.f.dir); err != nil {
		return &fileError{prefix: "--dir", err: err}
	}
	return nil
}

// tracerProvider returns the tracer provider of --otel (or the OTEL_*
// variables that turn tracing on), and the shutdown that flushes its last
// spans; a nil provider and shutdown when tracing is off.
func (p *proxyFlags) tracerProvider(ctx context.Context) (trace.TracerProvider, func() error, error) {
	tracing, err := proxy.TracingWanted(p.otel, os.Getenv) // --otel, OTEL_TRACES_EXPORTER, OTEL_SDK_DISABLED
	if err != nil {
		return nil, nil, fmt.Errorf("--otel: %w", err) // proxy.ErrOTELExporter: bad usage (ExitCode)
	}
	if !tracing {
		return nil, nil, nil
	}
	sdk, err := proxy.NewOTLPTracerProvider(ctx, os.Getenv)
	if err != nil {
		return nil, nil, fmt.Errorf("--otel: %w", err) // proxy.ErrOTLPProtocol: bad usage (ExitCode)
	}
	shutdown := func() error {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		return sdk.Shutdown(ctx) // flush the last spans
	}
	return sdk, shutdown, nil
}

// engine builds the proxy's pipeline engine over po: its clock (with
// --clock-speed) and its summarizers (the upstream's, or the provider's
// own compaction with --context-management native).
func (p *proxyFlags) engine(po pipeline.Options, summ string, log *slog.Logger) (*proxy.PipelineEngine, error) {
	f := &p.f
	eo := proxy.PipelineOptions{Pipeline: po, MaxSessions: p.maxSessions, MaxBytes: int64(p.sessionMemoryMB) << 20, Logger: log}
	if p.sessionMemoryMB == 0 {
		eo.MaxBytes = -1 // no bound but the count
	}
	if now, _ := p.clock(); now != nil {
		eo.Now, eo.Pipeline.Now = now, now
	}
	if summ == summarizerUpstream && !f.noCompact {
		eo.Summarizer = proxy.UpstreamSummarizers(proxy.UpstreamSummarizerOptions{
			AnthropicURL: p.anthropicURL, OpenAIURL: p.oaURL, Logger: log,
		})
		// One summary request per compaction: the upstream
		// summarizer falls back to the extractive one itself.
		eo.Pipeline.Compact.MaxRetries = -1
	}
	if proxy.ContextManagement(p.contextMgmt) == proxy.ContextNative && !f.noCompact {
		// OpenAI Responses: the provider's compaction writes the
		// summary (the other APIs keep the summarizer chosen).
		eo.Summarizer = proxy.NativeSummarizers(proxy.NativeSummarizerOptions{OpenAIURL: p.oaURL, Logger: log, Fallback: eo.Summarizer})
	}
	return proxy.NewPipelineEngine(eo)
}

// readBack returns the read-back tools at /mcp, over the store and
// namespace the engine writes to, every session (with --tenants, each
// client's own namespace), and the dashboard's read-back (nil with
// --tenants: it reads no tenant's artifacts). It fills --token from the
// environment when not given.
func (p *proxyFlags) readBack(store workspace.Store, log *slog.Logger) (http.Handler, proxy.ReadBack) {
	f := &p.f
	if p.token == "" {
		p.token = os.Getenv(tokenEnv)
	}
	mcpOpts := mcpserver.Options{Namespace: f.namespace, Version: agentctx.Version, Logger: log}
	readBack := mcpserver.New(store, mcpOpts)
	mcpHandler := readBack.Handler()
	dashReadBack := proxy.ReadBack(readBack.Call)
	if p.tenants {
		// Read-back per tenant: a client reads the artifacts of the
		// credentials it sends, no others.
		mcpHandler = mcpserver.HandlerFor(store, mcpOpts, func(r *http.Request) (string, bool) {
			t, ok := proxy.Tenant(r.Header)
			return proxy.TenantNamespace(f.namespace, t), ok
		}, 0)
		dashReadBack = nil // the dashboard reads no tenant's artifacts
	}
	return mcpHandler, dashReadBack
}

// listenTCP listens on --listen, on the loopback interface unless the
// address names a host. An address that is not loopback needs --token (or
// AGENTCTX_TOKEN), as agentctx mcp --http does: the proxy's statistics,
// dashboard and /mcp read back what the workspace holds.
func (p *proxyFlags) listenTCP() (net.Listener, error) {
	listen, err := p.listenAddr()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, listenError("--listen", listen, err)
	}
	return ln, nil
}

// listenAddr checks --listen and returns the address to listen on (a
// missing host is 127.0.0.1); --token, when not given, is filled from
// AGENTCTX_TOKEN.
func (p *proxyFlags) listenAddr() (string, error) {
	if _, _, err := net.SplitHostPort(p.listen); err != nil {
		return "", usagef("--listen %s: %v", p.listen, err)
	}
	if p.token == "" {
		p.token = os.Getenv(tokenEnv)
	}
	listen, err := httpguard.ListenAddr(p.listen, p.token)
	if err != nil {
		return "", usagef("--listen %s: %v", p.listen, err)
	}
	return listen, nil
}

// register adds the proxy's flags to cmd, --listen defaulting to listen.
func (p *proxyFlags) register(cmd *cobra.Command, listen string) {
	f := &p.f
	fs := cmd.Flags()
	fs.StringVar(&p.listen, "listen", listen, "address to listen on")
	fs.StringVar(&p.contextMgmt, "context-management", string(proxy.ContextClient), "where edits go: client (in the messages) or native (Anthropic context editing for already-sent results and Anthropic or OpenAI Responses compaction for compactions)")
	fs.StringVar(&p.anthropicURL, "upstream-anthropic", proxy.DefaultAnthropicURL, "Anthropic API base URL")
	fs.StringVar(&p.oaURL, "upstream-openai", proxy.DefaultOpenAIURL, "OpenAI API base URL")
	fs.StringVar(&p.geminiURL, "upstream-gemini", proxy.DefaultGeminiURL, "Gemini API base URL (the Gemini key, x-goog-api-key or key=, goes to it alone)")
	fs.IntVar(&p.maxSessions, "max-sessions", proxy.DefaultMaxSessions, "sessions kept in memory (least recently used out first)")
	fs.IntVar(&p.sessionMemoryMB, "session-memory", proxy.DefaultMaxBytes>>20, "MiB the sessions kept in memory may hold, by estimate: their memos and state, and the body a session near compaction keeps (least recently used out first; their decisions stay in the session store; 0: no bound but --max-sessions)")
	fs.IntVar(&p.decodeCacheMB, "decode-cache", proxy.DefaultDecodeCacheBytes>>20, "MiB of decoded messages kept for the next request of each conversation to reuse (0: none; each request is then decoded whole)")
	fs.StringVar(&p.pricesFile, "prices", "", pricesFlagHelp)
	fs.DurationVar(&p.timeouts.upstream, "upstream-timeout", proxy.DefaultUpstreamHeaderTimeout, "bound on the wait for the upstream's answer headers (a whole answer's come when it is written); past it the client gets 504 (0: none)")
	fs.DurationVar(&p.timeouts.upstreamIdle, "upstream-idle-timeout", proxy.DefaultUpstreamIdleTimeout, "bound on each wait for more of the upstream's answer; past it the answer is cut (a stream that keeps coming never is; 0: none)")
	fs.DurationVar(&p.timeouts.clientHeader, "client-header-timeout", proxy.DefaultClientHeaderTimeout, "bound on the reading of a request's headers (0: none)")
	fs.DurationVar(&p.timeouts.clientBody, "client-body-timeout", proxy.DefaultClientBodyTimeout, "bound on the reading of a request's body; past it the client gets 408 (0: none)")
	fs.DurationVar(&p.timeouts.idle, "client-idle-timeout", proxy.DefaultClientIdleTimeout, "bound on a kept-alive client connection waiting for its next request (0: none)")
	p.budget.session, p.budget.total = byteSize(workspace.DefaultSessionBytes), byteSize(workspace.DefaultTotalBytes)
	fs.Var(&p.budget.session, "workspace-session-bytes", "bytes of tool results one session may store in the workspace (1GiB, 500MB; 0: no bound); past it the session's results stay in the context as they came, not stored")
	fs.Var(&p.budget.total, "workspace-total-bytes", "bytes of tool results the workspace may hold in all, what it held at start included (10GiB; 0: no bound); past it results stay in the context as they came, not stored")
	fs.Lookup("workspace-session-bytes").DefValue, fs.Lookup("workspace-total-bytes").DefValue = "1GiB", "10GiB"
	fs.BoolVar(&p.tenants, "tenants", false, "isolate the clients of a shared proxy by their credentials: each API key keeps its sessions and artifacts in a namespace of its own (<namespace>/tenants/<digest>), and /mcp reads only the artifacts of the credentials the MCP client sends (X-Api-Key or Authorization)")
	fs.StringVar(&p.token, "token", "", "the token the statistics, dashboard and MCP endpoints require (X-Agentctx-Token or Authorization: Bearer; default $"+tokenEnv+"); required on a non-loopback --listen, and without it they answer requests from this machine to a loopback name only")
	p.retain.add(cmd)
	fs.DurationVar(&p.retain.every, "retain-every", time.Hour, "with --retain-age or --retain-size: how often the proxy prunes its namespace (and its tenants')")
	fs.BoolVar(&p.otel, "otel", false, "trace each request's steps (decode, prepare and its pipeline steps, upstream) with OpenTelemetry, exported over OTLP/HTTP as the standard OTEL_* variables say (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME...); OTEL_TRACES_EXPORTER=otlp also turns it on, OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED=true off")
	fs.BoolVar(&p.storeEvery, "store-every-result", false, "store every tool result when first seen; by default a result under 4,000 characters (and under --inline-limit) is stored when it is first pruned (what a compaction summarizes is in its archive)")
	fs.Float64Var(&p.clockSpeed, "clock-speed", 1, "for simulations: the proxy's clock (prune ages, artifact times, idle sessions, keep-warm requests, request durations in the log) runs N times faster than the wall clock from the proxy's start")
	fs.IntVar(&p.keepWarm, "keep-warm", proxy.DefaultKeepWarm, "while the client runs a tool the model asked for, send the session's last request again with max_tokens 1 shortly before the provider's prompt cache would expire, at most N times per pause: a read of the cached prompt instead of its rewrite when the client comes back (Anthropic, API keys, no extended thinking; billed to the session; 0: never)")
	fs.MarkHidden("clock-speed")
	f.register(fs, true)
	fs.StringVar(&f.workspace, "workspace", "", projectWorkspaceHelp)
	fs.StringVar(&f.store, "store", "", storeFlagHelp)
	fs.StringVar(&f.namespace, "namespace", workspace.DefaultNamespace, "namespace inside the workspace")
	fs.StringVar(&f.dir, "dir", offload.DefaultDir, dirHelp)
	sf := fs.Lookup("summarizer")
	sf.DefValue, sf.Usage = summarizerUpstream, "upstream (the client's own model and credentials, extractive when that fails), extractive, anthropic or openai"
	f.summarizer = summarizerUpstream
	// The seed's text is the single-shot commands' placeholder; the live
	// commands speak English (issue 48).
	f.placeholder = prune.EnglishPlaceholder
	fs.Lookup("placeholder").DefValue = prune.EnglishPlaceholder
	// The seed's rule reads no shape; the live commands learn the shell
	// tools of the agents they serve from their output (issue 47).
	f.byShape = true
	fs.Lookup("by-shape").DefValue = "true"
}

// noBound is a size flag's value as a workspace bound: the flag's 0 (no
// bound) is a negative value there, whose 0 means the default.
func noBound(b byteSize) int64 {
	if b == 0 {
		return -1
	}
	return int64(b)
}

// clock returns the proxy's clock and its timers: a simulation's
// (SimulatedProxy), --clock-speed's (made once), or nil for the wall
// clock's.
func (p *proxyFlags) clock() (func() time.Time, func(time.Duration, func()) func() bool) {
	if p.now == nil && p.clockSpeed != 1 {
		speed := p.clockSpeed
		p.now = acceleratedClock(time.Now(), speed)
		p.after = func(d time.Duration, f func()) func() bool {
			return time.AfterFunc(time.Duration(float64(d)/speed), f).Stop
		}
	}
	return p.now, p.after
}

// acceleratedClock returns a clock that reads start at start and runs
// speed times faster than the wall clock from then (on the monotonic
// clock): what a simulation of a long session in a short run needs.
func acceleratedClock(start time.Time, speed float64) func() time.Time {
	return func() time.Time {
		return start.Add(time.Duration(float64(time.Since(start)) * speed))
	}
}

// localURL is the base URL a client on this machine reaches a listener
// at: its address, with a loopback host in place of an unspecified one
// (0.0.0.0, ::).
func localURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// demoteInfo is a handler that logs info records at debug level.
type demoteInfo struct{ slog.Handler }

func demote(l slog.Level) slog.Level {
	if l == slog.LevelInfo {
		return slog.LevelDebug
	}
	return l
}

func (d demoteInfo) Enabled(ctx context.Context, l slog.Level) bool {
	return d.Handler.Enabled(ctx, demote(l))
}

func (d demoteInfo) Handle(ctx context.Context, r slog.Record) error {
	r.Level = demote(r.Level)
	return d.Handler.Handle(ctx, r)
}

func (d demoteInfo) WithAttrs(attrs []slog.Attr) slog.Handler {
	return demoteInfo{d.Handler.WithAttrs(attrs)}
}

func (d demoteInfo) WithGroup(name string) slog.Handler { return demoteInfo{d.Handler.WithGroup(name)} }

// listenError is the error of listening on the address a flag gave. An
// address that is not one (a bad port, a host that does not resolve or is
// not on this machine) is bad usage; the system refusing a good address
// (the port in use, a privileged port, a resolver down) is a runtime
// failure (see ExitCode).
func listenError(flag, addr string, err error) error {
	var ae *net.AddrError
	var de *net.DNSError
	if errors.As(err, &ae) || errors.Is(err, syscall.EADDRNOTAVAIL) ||
		(errors.As(err, &de) && !de.IsTimeout && !de.IsTemporary) {
		return usagef("%s %s: %v", flag, addr, err)
	}
	return fmt.Errorf("%s %s: %w", flag, addr, err)
}
