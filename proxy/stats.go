package proxy

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"runtime/metrics"
	"sort"
	"sync"
	"time"

	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pricing"
)

// sessionStats is what the Server keeps per session, in the process:
// statistics and the hashes of the last messages sent (to tell cache
// breaks). The memory of signed thinking is the session state's
// (thinkingmem.go); thinking holds it only for an Engine that keeps no
// state.
type sessionStats struct {
	mu sync.Mutex
	SessionStats
	lastSeen  time.Time
	lastSent  []uint64
	thinking  localThinking
	overheads []time.Duration
	billing   sessionBilling

	// Signed thinking and context management (native.go).
	last  sentList         // the messages the last request sent (ContextNative only: nothing else reads them)
	ncomp nativeCompaction // the last provider compaction (Anthropic)
}

// SessionStats are the statistics of one session (GET /agentctx/stats).
type SessionStats struct {
	Session   string `json:"session"`    // the session's key (hashed from what identifies the conversation)
	API       API    `json:"api"`        // anthropic, openai-chat or openai-responses
	Requests  int    `json:"requests"`   // requests seen
	Edited    int    `json:"edited"`     // requests sent changed
	DropBlock int    `json:"drop_block"` // requests sent asking the API to drop thinking whose prefix changed
	// Errors counts the requests that failed: the Engine failed
	// (forwarded unchanged), or the answer was an error status (the
	// upstream's 4xx or 5xx, the proxy's 502 for an upstream unreachable
	// or that cut its answer); not a client's hang-up (ClientCancels).
	Errors int `json:"errors"`
	// ClientCancels counts the requests whose client hung up before the
	// answer's end (status StatusClientClosedRequest).
	ClientCancels int `json:"client_cancels"`
	// StoreTimeouts counts the requests forwarded unedited because a
	// store did not answer within pipeline.Options.StoreTimeout.
	StoreTimeouts int `json:"store_timeouts"`
	// StoreErrors counts the requests forwarded unedited because a store
	// call failed (pipeline.ErrStore; the timeouts included).
	StoreErrors int   `json:"store_errors"`
	BytesBefore int64 `json:"bytes_before"` // request bytes received
	BytesAfter  int64 `json:"bytes_after"`  // request bytes sent upstream
	// TokensBefore and TokensAfter are the Engine's counts of the last
	// request, as received and as sent.
	TokensBefore int `json:"tokens_before"`
	TokensAfter  int `json:"tokens_after"`
	Compactions  int `json:"compactions"` // compactions made
	// ProviderCompactions counts the compactions whose summary the
	// provider wrote (ContextNative, OpenAI Responses: a compaction item
	// of POST /v1/responses/compact, see native_responses.go; Anthropic:
	// a compaction block relayed, see native.go).
	ProviderCompactions int `json:"provider_compactions"`
	// CacheBreaks counts requests whose messages sent do not start with
	// the messages sent by the request before (compared without
	// cache_control markers, which move without changing what a provider
	// caches, and with string content read as its text block).
	CacheBreaks int `json:"cache_breaks"`
	// PrefixChanges counts the requests on which the Engine changed on
	// purpose what it had sent before (Prepared.PrefixChanged: a prune
	// batch, a compaction): the cache breaks the Engine planned. With
	// sticky edits CacheBreaks is at most PrefixChanges (plus the changes
	// the client made to its own history).
	PrefixChanges int `json:"prefix_changes"`
	ThinkingStats
	// LastUsage is the usage the upstream reported last.
	LastUsage pricing.Usage `json:"last_usage"`
	// OverheadMedianMS and OverheadMaxMS are the time from request received
	// to upstream request sent.
	OverheadMedianMS float64 `json:"overhead_median_ms"`
	OverheadMaxMS    float64 `json:"overhead_max_ms"`
	// Bill is the session's money so far: cost_usd, cost_without_usd,
	// saved_usd, summary_requests, summary_cost_usd and the tokens billed.
	Bill
	SessionView
}

// TotalStats are the requests and the money of every session since the
// proxy started (GET /agentctx/stats, "total"), sessions dropped from the
// statistics included, and, when the proxy started from its ledger
// (StartFromLedger), the answered requests the ledger held before.
type TotalStats struct {
	Requests int `json:"requests"` // requests seen
	Bill
}

// sentMessages remembers the hashes of the messages a request sends, to
// count a cache break when the next request's do not extend them.
func (s *sessionStats) sentMessages(x *exchange) {
	// In the form prefixes are compared in (msgHash): without
	// cache_control (breakpoints move without changing what the provider
	// caches) and with string content read as its one text block.
	hs := hashesOf(x.sentEnc, x.sentHash)
	x.sentHash = hs
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.lastSent
	brk := len(prev) > len(hs)
	for i := 0; !brk && i < len(prev); i++ {
		brk = prev[i] != hs[i]
	}
	if brk {
		s.CacheBreaks++
	}
	x.cacheBreak = brk
	s.lastSent = hs
}

// record counts x in the session's statistics; project is the
// directory its client works in (Options.Project).
func (s *sessionStats) record(x *exchange, project string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if project != "" {
		s.Project = project
	}
	s.lastSeen = x.start
	s.API = x.api
	s.Requests++
	if x.edited {
		s.Edited++
	}
	if x.dropBlock {
		s.DropBlock++
	}
	s.recordThinking(x)
	if x.failed() {
		s.Errors++
	}
	if x.cancelled {
		s.ClientCancels++
	}
	if errors.Is(x.engineErr, pipeline.ErrStoreTimeout) {
		s.StoreTimeouts++ // forwarded unedited: the store did not answer
	}
	if errors.Is(x.engineErr, pipeline.ErrStore) {
		s.StoreErrors++ // forwarded unedited: a store call failed
	}
	s.BytesBefore += int64(x.bytesIn)
	s.BytesAfter += int64(x.bytesOut)
	if p := x.prepared; p != nil {
		s.TokensBefore, s.TokensAfter = p.TokensBefore, p.TokensAfter
		if p.Compacted {
			s.Compactions++
			if x.provCmp {
				s.ProviderCompactions++
			}
		}
		if p.PrefixChanged {
			s.PrefixChanges++
		}
	}
	if x.gotUsage {
		s.LastUsage = x.usage
	}
	s.Bill.add(&x.bill)
	s.recordTimeline(x)
	s.overheads = append(s.overheads, x.overhead)
	if len(s.overheads) > 1000 {
		s.overheads = s.overheads[len(s.overheads)-1000:]
	}
}

// failed reports whether an exchange is an error: the Engine failed on
// it, or its answer was an error status (not a client's cancel).
func (x *exchange) failed() bool {
	return x.engineErr != nil || x.status >= 400 && !x.cancelled
}

func (s *sessionStats) snapshot(key string) SessionStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.SessionStats
	out.Session = key
	out.Bill = out.Bill.rounded()
	out.Timeline = append([]TimelinePoint(nil), s.Timeline...)
	if n := len(s.overheads); n > 0 {
		d := append([]time.Duration(nil), s.overheads...)
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		out.OverheadMedianMS = ms(d[n/2])
		out.OverheadMaxMS = ms(d[n-1])
	}
	return out
}

// Stats returns the statistics of every session, by session key.
func (s *Server) Stats() []SessionStats {
	s.stats.mu.Lock()
	keys := make([]string, 0, len(s.stats.sessions))
	for k := range s.stats.sessions {
		keys = append(keys, k)
	}
	s.stats.mu.Unlock()
	sort.Strings(keys)
	out := make([]SessionStats, 0, len(keys))
	for _, k := range keys {
		out = append(out, s.stats.get(k).snapshot(k))
	}
	return out
}

// StatsDocument is the body of GET /agentctx/stats.
type StatsDocument struct {
	Sessions []SessionStats `json:"sessions"` // one per session seen, most recent first
	Total    TotalStats     `json:"total"`    // every session since the proxy started, and the ledger's past when it started from it
	Process  ProcessStats   `json:"process"`  // the proxy process
}

func (s *Server) serveStats(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(StatsDocument{s.Stats(), s.Total(), s.ProcessStats()})
}

// Total returns the requests and the money of every session so far:
// since the proxy started and, after StartFromLedger, what the ledger held
// before.
func (s *Server) Total() TotalStats {
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	t := s.stats.total
	t.Requests += s.stats.base.Requests
	t.Bill.plus(s.stats.base.Bill)
	t.Bill = t.Bill.rounded()
	return t
}

// TotalSinceStart returns the requests and the money of every session
// since the proxy started (Total without the ledger's past).
func (s *Server) TotalSinceStart() TotalStats {
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	t := s.stats.total
	t.Bill = t.Bill.rounded()
	return t
}

// len returns the number of sessions with statistics.
func (t *statsTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.sessions)
}

// addTotal counts an editable exchange in the total.
func (t *statsTable) addTotal(x *exchange) {
	if x.api == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total.Requests++
	t.total.Bill.add(&x.bill)
}

// ProcessStats is the memory of the proxy's process (GET /agentctx/stats,
// "process").
type ProcessStats struct {
	// LiveHeapBytes is the heap the last garbage collection found in use
	// (runtime/metrics /gc/heap/live:bytes). Before the first collection
	// (a small proxy may run long without one) it is the bytes of the heap
	// objects allocated so far (/memory/classes/heap/objects:bytes), an
	// upper bound, so that it is never 0.
	LiveHeapBytes uint64 `json:"live_heap_bytes"`
	// DecodeCacheBytes is the proxy's estimate of what its cache of
	// decoded messages (without an Engine, of their hashes) holds (see
	// Options.DecodeCacheBytes).
	DecodeCacheBytes int64 `json:"decode_cache_bytes"`
	// EngineBytes is the Engine's estimate of what its sessions keep in
	// memory, when it says (a MemoryReporter: PipelineEngine, bounded by
	// PipelineOptions.MaxBytes); 0 otherwise.
	EngineBytes int64 `json:"engine_bytes"`
	// Sessions is the number of sessions with statistics.
	Sessions int `json:"sessions"`
	// GCPercent is the garbage collector's GOGC (runtime/metrics
	// /gc/gogc:percent): the heap grows to about 1+GCPercent/100 times
	// what is live before a collection. The agentctx command serves with
	// Go's default, 100, unless GOGC says otherwise.
	GCPercent int `json:"gc_percent"`
	// MemoryLimitBytes is the runtime's soft memory limit (GOMEMLIMIT),
	// 0 when there is none.
	MemoryLimitBytes int64 `json:"memory_limit_bytes"`
}

// MemoryReporter is implemented by an Engine that says how much memory
// its sessions keep between requests (PipelineEngine): the statistics
// ("process") and the metrics report it.
type MemoryReporter interface {
	MemoryBytes() int64
}

// engineBytes is what the Engine says its sessions keep, 0 when it does
// not say.
func (s *Server) engineBytes() int64 {
	if m, ok := s.opts.Engine.(MemoryReporter); ok {
		return m.MemoryBytes()
	}
	return 0
}

// ProcessStats reports the process's memory.
func (s *Server) ProcessStats() ProcessStats {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(sample)
	value := func(i int) (uint64, bool) {
		if sample[i].Value.Kind() != metrics.KindUint64 { // an unsupported metric: Uint64 would panic
			return 0, false
		}
		return sample[i].Value.Uint64(), true
	}
	p := ProcessStats{DecodeCacheBytes: s.decoded.Bytes() + s.prints.Bytes(), EngineBytes: s.engineBytes()}
	for i := range 2 { // the live heap, else (before the first collection) the heap's objects
		if v, ok := value(i); ok && p.LiveHeapBytes == 0 {
			p.LiveHeapBytes = v
		}
	}
	if v, ok := value(2); ok {
		p.GCPercent = int(v)
	}
	if v, ok := value(3); ok && v < math.MaxInt64 {
		p.MemoryLimitBytes = int64(v)
	}
	s.stats.mu.Lock()
	p.Sessions = len(s.stats.sessions)
	s.stats.mu.Unlock()
	return p
}
