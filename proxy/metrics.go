package proxy

import (
	"errors"
	"net/http"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentctx/agentctx/pipeline"
)

// MetricsPath is where the proxy answers with its metrics in the
// Prometheus text format (protected as StatsPath is).
const MetricsPath = "/metrics"

// Outcomes of agentctx_requests_total: error when the Engine failed or the
// answer was an error status (the upstream's 4xx or 5xx, the proxy's 502),
// else cancelled when the client hung up before the answer's end, else
// edited when the Engine changed the messages, else unedited.
const (
	OutcomeEdited    = "edited"
	OutcomeUnedited  = "unedited"
	OutcomeError     = "error"
	OutcomeCancelled = "cancelled"
)

// promMetrics are a Server's Prometheus collectors, in a registry of its own
// (never the global one), so two Servers in a process count apart.
type promMetrics struct {
	reg *prometheus.Registry

	requests         *prometheus.CounterVec
	overhead         *prometheus.HistogramVec
	tokensReceived   *prometheus.CounterVec
	tokensForwarded  *prometheus.CounterVec
	inputTokens      *prometheus.CounterVec
	outputTokens     *prometheus.CounterVec
	cacheReadTokens  *prometheus.CounterVec
	cacheWriteTokens *prometheus.CounterVec
	cost             *prometheus.CounterVec
	costWithout      *prometheus.CounterVec
	saved            *prometheus.GaugeVec
	summaryRequests  *prometheus.CounterVec
	compactions      *prometheus.CounterVec
	clearingBatches  *prometheus.CounterVec
	cacheBreaks      *prometheus.CounterVec
	offloaded        *prometheus.CounterVec
	pruned           *prometheus.CounterVec
	engineErrors     *prometheus.CounterVec
	storeTimeouts    *prometheus.CounterVec
	storeErrors      *prometheus.CounterVec
}

// overheadBuckets are the bounds, in seconds, of the overhead histogram:
// from 100 µs to 5 s (a compaction's summary request is in the overhead).
var overheadBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}

func newMetrics(s *Server) *promMetrics {
	api := []string{"api"}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "agentctx", Name: name, Help: help}, labels)
	}
	m := &promMetrics{
		reg:              prometheus.NewRegistry(),
		requests:         counter("requests_total", "Model requests the proxy edited or could edit, by API and outcome (edited, unedited, cancelled, error).", "api", "outcome"),
		overhead:         prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "agentctx", Name: "proxy_overhead_seconds", Help: "Time from a request received to its upstream request sent (decode, engine, encode).", Buckets: overheadBuckets}, api),
		tokensReceived:   counter("context_tokens_received_total", "Tokens of the requests as the clients sent them, by the Engine's count.", api...),
		tokensForwarded:  counter("context_tokens_forwarded_total", "Tokens of the requests as forwarded upstream, by the Engine's count.", api...),
		inputTokens:      counter("input_tokens_total", "Uncached input tokens the upstream billed, summary requests included.", api...),
		outputTokens:     counter("output_tokens_total", "Output tokens the upstream billed, summary requests included.", api...),
		cacheReadTokens:  counter("cache_read_tokens_total", "Input tokens read from the prompt cache, summary requests included.", api...),
		cacheWriteTokens: counter("cache_write_tokens_total", "Input tokens written to the prompt cache (either lifetime), summary requests included.", api...),
		cost:             counter("cost_usd_total", "The bill in US dollars: the upstream's usage priced by model, summary requests included.", api...),
		costWithout:      counter("cost_without_agentctx_usd_total", "The estimated bill in US dollars of the same requests sent as the clients sent them.", api...),
		saved:            prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "agentctx", Name: "saved_usd", Help: "cost_without_agentctx_usd_total minus cost_usd_total: negative when agentctx cost more than it saved."}, api),
		summaryRequests:  counter("summary_requests_total", "Compaction summary requests the proxy sent upstream itself.", api...),
		compactions:      counter("compactions_total", "Requests on which the Engine compacted the conversation.", api...),
		clearingBatches:  counter("clearing_batches_total", "Requests on which the Engine changed what it had sent before without compacting (a new batch of cleared tool results).", api...),
		cacheBreaks:      counter("cache_breaks_total", "Requests whose messages do not extend those the session sent before.", api...),
		offloaded:        counter("offloaded_results_total", "Tool results newly replaced by a reference to the store.", api...),
		pruned:           counter("pruned_results_total", "Tool results newly cleared.", api...),
		engineErrors:     counter("engine_errors_total", "Requests forwarded unedited because the Engine failed (a store error included).", api...),
		storeTimeouts:    counter("store_timeouts_total", "Requests forwarded unedited because a store did not answer in time.", api...),
		storeErrors:      counter("store_errors_total", "Requests forwarded unedited because a store call failed (timeouts included).", api...),
	}
	m.reg.MustRegister(m.requests, m.overhead, m.tokensReceived, m.tokensForwarded, m.inputTokens, m.outputTokens,
		m.cacheReadTokens, m.cacheWriteTokens, m.cost, m.costWithout, m.saved, m.summaryRequests, m.compactions,
		m.clearingBatches, m.cacheBreaks, m.offloaded, m.pruned, m.engineErrors, m.storeTimeouts, m.storeErrors)
	m.zero()
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "agentctx", Name: "sessions", Help: "Sessions with statistics."},
			func() float64 { return float64(s.stats.len()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "agentctx", Name: "decode_cache_bytes", Help: "The proxy's estimate of what its cache of decoded messages holds."},
			func() float64 { return float64(s.decoded.Bytes() + s.prints.Bytes()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "agentctx", Name: "engine_bytes", Help: "The engine's estimate of what its sessions keep in memory between requests."},
			func() float64 { return float64(s.engineBytes()) }),
		sessionErrors{s: s, desc: prometheus.NewDesc("agentctx_session_errors_total",
			"Requests of a session that failed (stats' errors: the Engine failed, or an error status), for the sessions with errors seen last (at most 100).",
			[]string{"session"}, nil)},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// zero creates every series of the per-API collectors at zero, each
// outcome's too, so that /metrics shows them from the start: a rate or an
// alert on a counter that is absent until its first increment sees
// nothing (issue 48).
func (m *promMetrics) zero() {
	for _, f := range families.All() {
		a := f.Info().Name
		for _, o := range []string{OutcomeEdited, OutcomeUnedited, OutcomeError, OutcomeCancelled} {
			m.requests.WithLabelValues(a, o)
		}
		m.overhead.WithLabelValues(a)
		m.saved.WithLabelValues(a)
		for _, c := range []*prometheus.CounterVec{m.tokensReceived, m.tokensForwarded, m.inputTokens, m.outputTokens,
			m.cacheReadTokens, m.cacheWriteTokens, m.cost, m.costWithout, m.summaryRequests, m.compactions,
			m.clearingBatches, m.cacheBreaks, m.offloaded, m.pruned, m.engineErrors, m.storeTimeouts, m.storeErrors} {
			c.WithLabelValues(a)
		}
	}
}

// Registry returns the Server's Prometheus registry (what MetricsPath
// serves), to gather from or to register more collectors in.
func (s *Server) Registry() *prometheus.Registry { return s.metrics.reg }

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}

// record counts a finished editable exchange.
func (m *promMetrics) record(x *exchange) {
	if x.api == "" {
		return
	}
	api := string(x.api)
	outcome := OutcomeUnedited
	switch {
	case x.failed():
		outcome = OutcomeError
	case x.cancelled:
		outcome = OutcomeCancelled
	case x.edited:
		outcome = OutcomeEdited
	}
	m.requests.WithLabelValues(api, outcome).Inc()
	m.overhead.WithLabelValues(api).Observe(x.overhead.Seconds())
	if p := x.prepared; p != nil {
		m.tokensReceived.WithLabelValues(api).Add(float64(p.TokensBefore))
		m.tokensForwarded.WithLabelValues(api).Add(float64(p.TokensAfter))
		if p.Compacted {
			m.compactions.WithLabelValues(api).Inc()
		} else if p.PrefixChanged {
			m.clearingBatches.WithLabelValues(api).Inc()
		}
		m.offloaded.WithLabelValues(api).Add(float64(p.Offloaded))
		m.pruned.WithLabelValues(api).Add(float64(p.Pruned))
	}
	if x.cacheBreak {
		m.cacheBreaks.WithLabelValues(api).Inc()
	}
	if x.engineErr != nil {
		m.engineErrors.WithLabelValues(api).Inc()
		if errors.Is(x.engineErr, pipeline.ErrStoreTimeout) {
			m.storeTimeouts.WithLabelValues(api).Inc()
		}
		if errors.Is(x.engineErr, pipeline.ErrStore) {
			m.storeErrors.WithLabelValues(api).Inc()
		}
	}
	var b Bill
	b.add(&x.bill)
	if b != (Bill{}) {
		m.inputTokens.WithLabelValues(api).Add(float64(b.InputTokens))
		m.outputTokens.WithLabelValues(api).Add(float64(b.OutputTokens))
		m.cacheReadTokens.WithLabelValues(api).Add(float64(b.CacheReadTokens))
		m.cacheWriteTokens.WithLabelValues(api).Add(float64(b.CacheWriteTokens))
		m.cost.WithLabelValues(api).Add(b.CostUSD)
		m.costWithout.WithLabelValues(api).Add(b.CostWithoutUSD)
		m.saved.WithLabelValues(api).Add(b.CostWithoutUSD - b.CostUSD)
		if b.SummaryRequests > 0 {
			m.summaryRequests.WithLabelValues(api).Add(float64(b.SummaryRequests))
		}
	}
}

// recordPast counts requests of the ledger's past (StartFromLedger).
func (m *promMetrics) recordPast(p *pastRequests) {
	outcome := OutcomeUnedited
	if p.edited {
		outcome = OutcomeEdited
	}
	m.requests.WithLabelValues(p.api, outcome).Add(float64(p.n))
	if p.compacted {
		m.compactions.WithLabelValues(p.api).Add(float64(p.n))
	}
	b := p.bill
	m.inputTokens.WithLabelValues(p.api).Add(float64(b.InputTokens))
	m.outputTokens.WithLabelValues(p.api).Add(float64(b.OutputTokens))
	m.cacheReadTokens.WithLabelValues(p.api).Add(float64(b.CacheReadTokens))
	m.cacheWriteTokens.WithLabelValues(p.api).Add(float64(b.CacheWriteTokens))
	m.cost.WithLabelValues(p.api).Add(b.CostUSD)
	m.costWithout.WithLabelValues(p.api).Add(b.CostWithoutUSD)
	m.saved.WithLabelValues(p.api).Add(b.CostWithoutUSD - b.CostUSD)
}

// maxSessionSeries bounds the sessions agentctx_session_errors_total
// reports. A session is a label value there, the one metric whose series
// grow with the sessions: only those with an error are reported (absent
// means none), the most recently seen first, so that a proxy serving
// thousands of sessions exports at most this many series, however many of
// them fail. The statistics (GET /agentctx/stats, "errors") have every
// session's.
const maxSessionSeries = 100

// sessionErrors collects agentctx_session_errors_total from the
// statistics at each scrape.
type sessionErrors struct {
	s    *Server
	desc *prometheus.Desc
}

func (c sessionErrors) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c sessionErrors) Collect(ch chan<- prometheus.Metric) {
	for _, e := range c.s.stats.withErrors(maxSessionSeries) {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(e.errors), e.session)
	}
}

// sessionErrorCount is a session's errors.
type sessionErrorCount struct {
	session  string
	errors   int
	lastSeen time.Time
}

// withErrors returns the sessions with errors, the most recently seen
// first, at most n. A key that is not valid UTF-8 (from a header) is no
// label value: left out.
func (t *statsTable) withErrors(n int) []sessionErrorCount {
	var out []sessionErrorCount
	t.mu.Lock()
	for k, s := range t.sessions {
		if !utf8.ValidString(k) {
			continue
		}
		s.mu.Lock()
		if s.Errors > 0 {
			out = append(out, sessionErrorCount{session: k, errors: s.Errors, lastSeen: s.lastSeen})
		}
		s.mu.Unlock()
	}
	t.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].lastSeen.Equal(out[j].lastSeen) {
			return out[i].lastSeen.After(out[j].lastSeen)
		}
		return out[i].session < out[j].session
	})
	return out[:min(n, len(out))]
}
