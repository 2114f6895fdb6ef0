package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentctx/agentctx/session"
)

// Defaults of the ledger writer (Options.Ledger).
const (
	// DefaultLedgerQueue is how many entries wait for the ledger at most;
	// past it an entry is dropped (and the drop logged once).
	DefaultLedgerQueue = 4096
	// DefaultLedgerTimeout bounds each Append to the ledger.
	DefaultLedgerTimeout = 10 * time.Second
)

// maxLedgerBatch is the most entries one Append carries.
const maxLedgerBatch = 256

// ledgerWriter appends the entries of answered requests to the ledger off
// the requests' path: a request only queues its entry (never waiting:
// when the queue is full the entry is dropped), one goroutine appends
// them in batches, each bounded by a deadline. A failure is logged once,
// a drop once; neither fails a request.
type ledgerWriter struct {
	l       session.Ledger
	log     *slog.Logger
	timeout time.Duration

	mu     sync.RWMutex // held to send, taken to close q
	closed bool
	q      chan session.LedgerEntry
	done   chan struct{}

	failed, dropped atomic.Bool // logged already
	appended        atomic.Int64
	lost            atomic.Int64 // dropped or failed
}

func newLedgerWriter(l session.Ledger, log *slog.Logger, queue int, timeout time.Duration) *ledgerWriter {
	if queue <= 0 {
		queue = DefaultLedgerQueue
	}
	if timeout <= 0 {
		timeout = DefaultLedgerTimeout
	}
	w := &ledgerWriter{l: l, log: log, timeout: timeout, q: make(chan session.LedgerEntry, queue), done: make(chan struct{})}
	go w.run()
	return w
}

// add queues an entry; it never blocks.
func (w *ledgerWriter) add(e session.LedgerEntry) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		w.lose(1, "proxy: ledger closed, entry dropped", nil)
		return
	}
	select {
	case w.q <- e:
	default:
		w.lose(1, "proxy: ledger queue full, entries dropped (the ledger is slower than the requests)", nil)
	}
}

// lose counts entries that never reached the ledger, logging the first
// failure and the first drop.
func (w *ledgerWriter) lose(n int, msg string, err error) {
	w.lost.Add(int64(n))
	flag := &w.dropped
	if err != nil {
		flag = &w.failed
	}
	if !flag.Swap(true) {
		attrs := []any{"entries", n}
		if err != nil {
			attrs = append(attrs, "err", err.Error())
		}
		w.log.Warn(msg, attrs...)
	}
}

func (w *ledgerWriter) run() {
	defer close(w.done)
	batch := make([]session.LedgerEntry, 0, maxLedgerBatch)
	for e := range w.q {
		batch = append(batch[:0], e)
	fill:
		for len(batch) < maxLedgerBatch {
			select {
			case e, ok := <-w.q:
				if !ok {
					break fill
				}
				batch = append(batch, e)
			default:
				break fill
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
		err := w.l.Append(ctx, batch)
		cancel()
		if err != nil {
			w.lose(len(batch), "proxy: ledger append failed; the savings of these requests are not recorded", err)
			continue
		}
		w.appended.Add(int64(len(batch)))
	}
}

// close stops taking entries and waits, up to ctx, for the queued ones to
// be appended.
func (w *ledgerWriter) close(ctx context.Context) error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.q)
	}
	w.mu.Unlock()
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ledgerEntry returns the ledger's entry of a finished exchange, false
// when it was not answered (nothing billed).
func (s *Server) ledgerEntry(x *exchange) (session.LedgerEntry, bool) {
	b := &x.bill
	if x.api == "" || !b.billed && len(b.summaries) == 0 {
		return session.LedgerEntry{}, false
	}
	var one Bill
	one.add(b)
	e := session.LedgerEntry{Time: x.start, Session: x.session, API: string(x.api), Model: b.model,
		Client: ClientFamily(x.client), Project: s.opts.Project,
		InputTokens: int64(one.InputTokens), CacheReadTokens: int64(one.CacheReadTokens),
		CacheWriteTokens: int64(one.CacheWriteTokens), OutputTokens: int64(one.OutputTokens),
		CostUSD: one.CostUSD, CostWithoutUSD: one.CostWithoutUSD, Edited: x.edited}
	if p := x.prepared; p != nil {
		e.Compacted = p.Compacted
	}
	if e.Namespace = s.opts.Namespace; x.tenant != "" {
		e.Namespace = TenantNamespace(s.opts.Namespace, x.tenant)
	}
	return e, true
}

// ClientFamily names the client of a User-Agent's first word, as the
// ledger records it: claude-code (claude-cli/...), codex (codex_cli_rs,
// codex_exec, codex-...), else the product name before the "/", lower
// case ("" for none).
func ClientFamily(ua string) string {
	name, _, _ := strings.Cut(clientOf(ua), "/")
	name = strings.ToLower(name)
	switch {
	case name == "claude-cli" || name == "claude-code" || name == "claude_code":
		return "claude-code"
	case name == "codex" || strings.HasPrefix(name, "codex_") || strings.HasPrefix(name, "codex-"):
		return "codex"
	}
	return name
}

// ErrLedgerStarted is returned by StartFromLedger called again.
var ErrLedgerStarted = errors.New("proxy: already started from the ledger")

// StartFromLedger makes the statistics' total (GET /agentctx/stats
// "total", the dashboard's totals) and the /metrics counters of requests,
// tokens, money and compactions start from what Options.Ledger held
// before the Server was made (New, by Options.Now), so that they survive a
// restart. Call it once, before serving; without a ledger it does
// nothing. The ledger is every process's that shares the store: each
// replica of a fleet starts from the fleet's past, so sum one replica's
// counters, or take their increase.
func (s *Server) StartFromLedger(ctx context.Context) error {
	if s.opts.Ledger == nil {
		return nil
	}
	if !s.ledgerStarted.CompareAndSwap(false, true) {
		return ErrLedgerStarted
	}
	// The counters' increments, summed by API, outcome and compaction:
	// the ledger is read once, none of its entries held.
	type key struct {
		api               string
		edited, compacted bool
	}
	var base TotalStats
	past := map[key]*pastRequests{}
	err := s.opts.Ledger.Scan(ctx, session.LedgerFilter{Until: s.created}, func(e session.LedgerEntry) error {
		b := Bill{CostUSD: e.CostUSD, CostWithoutUSD: e.CostWithoutUSD, InputTokens: int(e.InputTokens),
			CacheReadTokens: int(e.CacheReadTokens), CacheWriteTokens: int(e.CacheWriteTokens), OutputTokens: int(e.OutputTokens)}
		base.Requests++
		base.Bill.plus(b)
		k := key{e.API, e.Edited, e.Compacted}
		p := past[k]
		if p == nil {
			p = &pastRequests{api: e.API, edited: e.Edited, compacted: e.Compacted}
			past[k] = p
		}
		p.n++
		p.bill.plus(b)
		return nil
	})
	if err != nil {
		s.ledgerStarted.Store(false)
		return fmt.Errorf("proxy: start from the ledger: %w", err)
	}
	for _, p := range past {
		s.metrics.recordPast(p)
	}
	s.stats.mu.Lock()
	s.stats.base = base
	s.stats.mu.Unlock()
	return nil
}

// pastRequests are requests of the ledger's past that the counters count
// alike: one API, outcome and compaction.
type pastRequests struct {
	api               string
	edited, compacted bool
	n                 int
	bill              Bill
}
