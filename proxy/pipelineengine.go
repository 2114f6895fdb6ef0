package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pricing"
	"github.com/agentctx/agentctx/tokens"
	"github.com/agentctx/agentctx/workspace"
)

// Defaults of PipelineEngine.
const (
	DefaultMaxSessions = 1000
	DefaultMaxBytes    = 512 << 20
	DefaultIdleTimeout = time.Hour
)

// PipelineOptions configure a PipelineEngine. The zero value means one
// pipeline per session with the pipeline package's defaults.
type PipelineOptions struct {
	// Pipeline is the template of every session's pipeline.Options. Its
	// SessionID is set to the session key, its Now and Logger default to
	// the fields below. Store is shared by every session: a Store given
	// here is left open; nil means a directory store at WorkspaceDir,
	// opened by NewPipelineEngine and closed by Close. A nil
	// MessageCounter means one shared by every session.
	Pipeline pipeline.Options
	// Summarizer, when set, returns the compaction summarizer for a
	// session, given the session's latest request (its credentials and
	// model). It replaces Pipeline.Compact.Summarizer.
	Summarizer func(req *Request) compact.Summarizer
	// MaxSessions bounds the sessions kept in memory (least recently used
	// first out); 0 means DefaultMaxSessions. IdleTimeout drops a session
	// unused for that long; 0 means DefaultIdleTimeout.
	MaxSessions int
	IdleTimeout time.Duration
	// MaxBytes bounds the memory the sessions kept in memory hold, by
	// estimate: their pipelines' memos and last state
	// (pipeline.Pipeline.MemoryBytes), and the body a session near its
	// compaction trigger keeps (see Forwarded). Past it the least
	// recently used sessions that are not preparing a request are
	// dropped, as past MaxSessions: their decisions stay in the session
	// store, and their next request builds the memos again. 0 means
	// DefaultMaxBytes; a negative value means no bound but MaxSessions.
	MaxBytes int64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives a line per failed session start; nil discards.
	Logger *slog.Logger
}

// PipelineEngine is the Engine over the pipeline's session engine: one
// pipeline.Pipeline per session key, kept in memory with an LRU and idle
// bound, over one workspace store and one session store shared by every
// session (and by every proxy that shares them). The session state keeps
// every decision, so each request of a session starts with what the
// previous one sent, and the time a result was first seen stands in for
// the timestamps API requests lack. Reported usage is fed back to the
// session (Observe), which calibrates its counts. A reference to an
// offloaded result, and a pruned result whose original is stored, gain the
// absolute path of the artifact's content file when the store keeps one,
// so a local agent can read it with its own file tool.
//
// PipelineEngine is safe for concurrent use; the requests of one session
// are prepared one at a time.
type PipelineEngine struct {
	opts PipelineOptions
	log  *slog.Logger

	mu       sync.Mutex
	sessions map[string]*pipeSession
	held     int64 // the sum of the sessions' held
	closed   bool

	closeStore func() error // the store NewPipelineEngine opened, if any
}

type pipeSession struct {
	key string

	mu       sync.Mutex // serializes Prepare
	p        *pipeline.Pipeline
	last     *Request
	usage    pricing.Usage
	lastUsed time.Time
	busy     int
	held     int64 // the memory it keeps, by estimate (see MaxBytes); e.mu guards it

	// prefix is the body last forwarded upstream, kept while the session
	// is near its compaction trigger (see Forwarded); tokens is the count
	// of the last prepared request, and trigger the compaction trigger the
	// session reported for it (the priced trigger moves: the threshold is
	// only its latest).
	prefix    []byte
	prefixAPI API
	tokens    int
	trigger   int
}

var (
	_ Engine         = (*PipelineEngine)(nil)
	_ MemoryReporter = (*PipelineEngine)(nil)
)

// NewPipelineEngine returns a PipelineEngine. Close releases its pipelines.
func NewPipelineEngine(opts PipelineOptions) (*PipelineEngine, error) {
	if err := opts.Pipeline.Validate(); err != nil {
		return nil, err
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.MaxBytes == 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	// One workspace store and one session store for every session, so
	// that a session evicted from memory comes back with its decisions.
	st, err := pipeline.OpenStores(context.Background(), opts.Pipeline)
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	// Wrapped so that a request the upstream refuses is rolled back
	// (undo.go).
	opts.Pipeline.Store, opts.Pipeline.Sessions = undoStores(st.Workspace, st.Sessions)
	closeStore := st.Close
	if w := &opts.Pipeline.Workspace; w.Budget == nil && st.Workspace != nil {
		// One byte budget for every session: the store is counted once,
		// at the first write of any.
		w.Budget = workspace.NewBudget(st.Workspace, workspace.BudgetOptions{SessionBytes: w.SessionBytes, TotalBytes: w.TotalBytes,
			Now: opts.Now, Logger: opts.Logger})
	}
	if opts.Pipeline.MessageCounter == nil {
		opts.Pipeline.MessageCounter = tokens.NewMessageCounter(tokens.MessageOptions{Counter: opts.Pipeline.Counter, Parallelism: -1})
	}
	return &PipelineEngine{opts: opts, log: opts.Logger, sessions: map[string]*pipeSession{}, closeStore: closeStore}, nil
}

// ErrClosed is returned by Prepare after Close.
var ErrClosed = errors.New("proxy: engine closed")

// Sessions returns the number of sessions held in memory.
func (e *PipelineEngine) Sessions() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.sessions)
}

// MemoryBytes returns the memory the sessions held in memory keep, by
// estimate (see PipelineOptions.MaxBytes), as of their last request.
func (e *PipelineEngine) MemoryBytes() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.held
}

// session returns the session of key, making it when new, and marks it
// busy; release undoes that.
func (e *PipelineEngine) session(req *Request) (*pipeSession, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ErrClosed
	}
	now := e.opts.Now()
	s := e.sessions[req.SessionKey]
	if s == nil {
		e.evict(now)
		o := e.opts.Pipeline
		o.SessionID = req.SessionKey
		if req.Tenant != "" {
			o.Workspace.Namespace = TenantNamespace(o.Workspace.Namespace, req.Tenant)
		}
		if o.Now == nil {
			o.Now = e.opts.Now
		}
		if o.Logger == nil {
			o.Logger = e.log
		}
		s = &pipeSession{key: req.SessionKey}
		if e.opts.Summarizer != nil {
			mk := e.opts.Summarizer
			o.Compact.Summarizer = compact.SummarizerFunc(func(ctx context.Context, r compact.Request) (string, error) {
				last := *s.last // s.mu is held: Prepare runs the summarizer
				if s.prefixAPI == last.API {
					last.Prefix = s.prefix
				}
				return mk(&last).Summarize(ctx, r)
			})
		}
		o.ReservedTokens += e.reserved(req)
		if o.Prices.Input == 0 {
			o.Prices = pricesOf(req)
		}
		p, err := pipeline.New(o)
		if err != nil {
			e.log.Error("proxy: cannot start a session pipeline", "session", req.SessionKey, "err", err)
			return nil, err
		}
		s.p = p
		e.sessions[req.SessionKey] = s
	}
	s.lastUsed = now
	s.busy++
	return s, nil
}

// pricesOf returns the list prices of the request's model, by which the
// session weighs its edits (pipeline.Options.Prices): the model's entry in
// pricing.Default, else its provider's fallback. An OpenAI request with
// "prompt_cache_retention": "24h" (extended retention, at the same price)
// has its cache live a day: a gap of minutes does not make it cold.
func pricesOf(req *Request) pricing.Prices {
	p, ok := pricing.Default().Lookup(req.Model)
	if !ok {
		p = pricing.Fallback(providerOf(req.API))
	}
	if req.API != APIAnthropic && req.CacheRetention == "24h" {
		p.TTL = max(p.TTL, ExtendedRetention)
	}
	return p
}

// ExtendedRetention is how long OpenAI keeps a cached prefix for a request
// with "prompt_cache_retention": "24h".
const ExtendedRetention = 24 * time.Hour

// reserved counts what every request of a session sends besides what
// PrepareDocument counts (the body's messages, "system" and "tools"): for
// Responses and Gemini, whose document is the input items (the contents)
// alone, the instructions (the system instruction) and the tool
// definitions.
func (e *PipelineEngine) reserved(req *Request) int {
	if req.API != APIResponses && req.API != APIGemini {
		return 0
	}
	mc := e.opts.Pipeline.MessageCounter
	n := 0
	if len(req.Tools) > 0 {
		n += mc.CountText(string(req.Tools))
	}
	if len(req.System) > 0 {
		n += mc.CountText(string(req.System))
	}
	return n
}

func (e *PipelineEngine) release(s *pipeSession) {
	e.mu.Lock()
	s.busy--
	e.mu.Unlock()
}

// evict drops idle sessions and, over MaxSessions, the least recently used
// ones that are not busy. e.mu is held.
func (e *PipelineEngine) evict(now time.Time) {
	for _, s := range e.sessions {
		if s.busy == 0 && now.Sub(s.lastUsed) > e.opts.IdleTimeout {
			e.drop(s)
		}
	}
	for len(e.sessions) >= e.opts.MaxSessions && e.dropOldest() {
	}
}

// weigh sets the memory s keeps to held(what it kept), and drops the
// least recently used sessions that are not busy while the sessions keep
// more than MaxBytes.
func (e *PipelineEngine) weigh(s *pipeSession, held func(int64) int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sessions[s.key] != s {
		return // dropped meanwhile (Close, the bound)
	}
	n := held(s.held)
	e.held += n - s.held
	s.held = n
	for e.opts.MaxBytes > 0 && e.held > e.opts.MaxBytes && e.dropOldest() {
	}
}

// dropOldest drops the least recently used session that is not busy and
// reports whether there was one. e.mu is held.
func (e *PipelineEngine) dropOldest() bool {
	var oldest *pipeSession
	for _, s := range e.sessions {
		if s.busy == 0 && (oldest == nil || s.lastUsed.Before(oldest.lastUsed)) {
			oldest = s
		}
	}
	if oldest == nil {
		return false
	}
	e.drop(oldest)
	return true
}

// drop removes s from memory. e.mu is held.
func (e *PipelineEngine) drop(s *pipeSession) {
	delete(e.sessions, s.key)
	e.held -= s.held
	s.p.Close()
}

// Prepare implements Engine.
func (e *PipelineEngine) Prepare(ctx context.Context, req *Request) (*Prepared, error) {
	s, err := e.session(req)
	if err != nil {
		return nil, err
	}
	defer e.release(s)
	s.mu.Lock()
	defer s.mu.Unlock()
	// The summarizer needs the credentials and model, not the history:
	// keep nothing else of the request.
	s.last = &Request{API: req.API, SessionKey: req.SessionKey, Header: req.Header.Clone(), Model: req.Model, Received: req.Received}

	conv := agentctx.Conversation{Messages: req.Document.Messages}
	co := req.Binding
	co.ClientSummary, co.Tools = req.ClientSummary, req.Tools
	if len(req.Facts) == len(conv.Messages) {
		conv.Facts, co.OwnFacts = req.Facts, true // the request's own (Request.Facts)
	}
	res, err := s.p.PrepareConversation(ctx, conv, s.p.RequestTokens(req.Document), co)
	if err != nil {
		return nil, err
	}
	for _, w := range res.Report.Warnings {
		e.log.Info("proxy: session warning", "session", req.SessionKey, "warning", w)
	}
	res = s.p.AddPaths(res)
	pr := &Prepared{Messages: res.Messages, Sources: res.Sources, Facts: res.Facts, TokensBefore: res.Report.TokensBefore, TokensAfter: res.Report.TokensAfter,
		Unchanged: true, Report: &res.Report}
	s.tokens, s.trigger = res.Report.TokensAfter, res.Report.ThresholdTokens
	if st := res.Report.Step(pipeline.StepCompact); st != nil && st.Compact != nil && st.Compact.Compacted {
		s.prefix = nil // the next prefix is the compacted request's
	}
	if ss := res.Report.Session; ss != nil {
		pr.PrefixChanged = ss.PrefixChanged
	}
	for _, st := range res.Report.Steps {
		if st.Changed > 0 || st.Compact != nil && (st.Compact.Compacted || st.Compact.Reused > 0) {
			pr.Unchanged = false
		}
		switch st.Step {
		case pipeline.StepPrune:
			pr.Pruned, pr.Deferred = st.New, st.Deferred
		case pipeline.StepOffload:
			pr.Offloaded = st.New
		case pipeline.StepCompact:
			pr.Compacted = st.Compact != nil && st.Compact.Compacted
		}
	}
	held := s.p.MemoryBytes() + int64(cap(s.prefix))
	e.weigh(s, func(int64) int64 { return held })
	return pr, nil
}

// Forwarded implements Forwarder: it keeps the body of a session's last
// forwarded request while that request is at least half the compaction
// trigger (a compaction may come within a few requests; below that the
// body is not kept, which bounds the memory to the sessions near their
// window), so the summary request of its compaction can send that very
// prefix, which the provider has cached, with the summary instruction
// appended. Without a Summarizer, or with compaction off, nothing would
// send it, and no body is kept (a 10 MB request's body was held as long
// as its session).
func (e *PipelineEngine) Forwarded(key string, api API, body []byte) {
	var b sendBody // nil: none
	if body != nil {
		b = wholeBody(body)
	}
	e.forwardedParts(key, api, &b)
}

// forwardedParts implements partsForwarder: Forwarded, joining the body's
// parts only when it keeps it.
func (e *PipelineEngine) forwardedParts(key string, api API, body *sendBody) {
	e.mu.Lock()
	s := e.sessions[key]
	e.mu.Unlock()
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	before := cap(s.prefix)
	trigger := s.trigger
	if trigger <= 0 {
		trigger = e.opts.Pipeline.Compact.ThresholdTokens()
	}
	if !e.sendsPrefix() || s.tokens*2 < trigger {
		s.prefix = nil
	} else {
		s.prefix, s.prefixAPI = body.Bytes(), api
	}
	if d := int64(cap(s.prefix) - before); d != 0 {
		e.weigh(s, func(h int64) int64 { return h + d })
	}
}

// sendsPrefix reports whether a session's compaction may send the body it
// last forwarded (Forwarded): it compacts, with the Summarizer.
func (e *PipelineEngine) sendsPrefix() bool {
	return e.opts.Summarizer != nil && !e.opts.Pipeline.NoCompact
}

// Observe implements Engine: it keeps the session's last usage and feeds
// it to the session, whose next estimates start from it.
func (e *PipelineEngine) Observe(ctx context.Context, key string, u pricing.Usage, counted int) {
	e.mu.Lock()
	s := e.sessions[key]
	if s != nil {
		s.usage = u
	}
	e.mu.Unlock()
	if s == nil {
		return
	}
	err := s.p.Observe(ctx, u, counted)
	if err != nil {
		e.log.Warn("proxy: cannot record usage", "session", key, "err", err)
	}
}

// CacheRefreshed implements CacheRefresher: the session's pipeline
// records when its cache was last read (pipeline.Pipeline.CacheRefreshed).
func (e *PipelineEngine) CacheRefreshed(ctx context.Context, key string, at time.Time) {
	e.mu.Lock()
	s := e.sessions[key]
	e.mu.Unlock()
	if s == nil {
		return
	}
	if err := s.p.CacheRefreshed(ctx, at); err != nil {
		e.log.Warn("proxy: cannot record the cache's refresh", "session", key, "err", err)
	}
}

// LastUsage returns the usage last observed for a session.
func (e *PipelineEngine) LastUsage(key string) (pricing.Usage, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.sessions[key]
	if s == nil {
		return pricing.Usage{}, false
	}
	return s.usage, true
}

// Close closes every session's pipeline. Prepare fails afterwards.
func (e *PipelineEngine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	var errs []error
	for k, s := range e.sessions {
		errs = append(errs, s.p.Close())
		delete(e.sessions, k)
	}
	e.held = 0
	if e.closeStore != nil {
		errs = append(errs, e.closeStore())
		e.closeStore = nil
	}
	return errors.Join(errs...)
}
