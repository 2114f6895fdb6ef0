package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/httpguard"
	"github.com/agentctx/agentctx/internal/base/textfmt"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pipeline/replay"
	"github.com/agentctx/agentctx/session/memsession"
	"github.com/agentctx/agentctx/tokens"
	"github.com/agentctx/agentctx/workspace/memstore"
)

// Report is a session's context report: its timeline and what fills its
// context, as the dashboard's session page draws them (WriteReportHTML)
// or as a table (WriteReportText). agentctx report makes one from a
// replayed transcript (ReportFromReplay) or a live session of a proxy.
type Report struct {
	// Title names the session (a file, a session key).
	Title string `json:"title"`
	// Requests, Compactions, ClearingBatches and CacheBreaks count the
	// session's; the money is as in SessionStats (a replay's estimates:
	// CostWithoutUSD as recorded, CostUSD with agentctx).
	Requests        int     `json:"requests"`
	Compactions     int     `json:"compactions"`
	ClearingBatches int     `json:"clearing_batches"`
	CacheBreaks     int     `json:"cache_breaks"`
	CostUSD         float64 `json:"cost_usd"`
	CostWithoutUSD  float64 `json:"cost_without_usd"`
	SavedUSD        float64 `json:"saved_usd"`
	// Timeline has a point per request.
	Timeline []TimelinePoint `json:"timeline"`
	// Before is what filled the last request as the agent sent it (nil
	// when not known), After as agentctx sent it.
	Before *Composition `json:"before,omitempty"`
	After  Composition  `json:"after"`
	// Managed is set for the transcript of a session that ran through
	// agentctx (FindManaged, Managed.ApplyToReport): with its ledger, the
	// figures above are the ledger's.
	Managed *Managed `json:"managed,omitempty"`
}

// ReportFromReplay makes the report of a replayed transcript: its
// timeline from res.PerRequest (each request's input uncached, read from
// the cache and written to it as the replay's simulated prompt cache
// bills the request as prepared), before and after as
// composed from the transcript and from its last request prepared.
func ReportFromReplay(title string, res *replay.Result, before *Composition, after Composition) *Report {
	r := &Report{Title: title, Requests: res.Requests, Compactions: res.Compactions, CacheBreaks: res.CacheBreaks,
		CostUSD: round6(res.CostUSD), CostWithoutUSD: round6(res.CostWithoutUSD), SavedUSD: round6(res.SavedUSD),
		Before: before, After: after, Timeline: make([]TimelinePoint, 0, len(res.PerRequest))}
	for _, q := range res.PerRequest {
		p := TimelinePoint{Status: 200, TokensClient: q.Tokens, TokensForwarded: q.TokensSent, InputTokens: q.PreparedInputTokens,
			CacheReadTokens: q.PreparedCacheReadTokens, CacheWriteTokens: q.PreparedCacheWriteTokens,
			Offloaded: q.Offloaded, Pruned: q.Pruned, Compacted: q.Compacted, CacheBreak: q.CacheBreak,
			Clearing: q.CacheBreak && !q.Compacted && q.Pruned > 0, CostUSD: round6(q.CostUSD)}
		if p.Clearing {
			r.ClearingBatches++
		}
		r.Timeline = append(r.Timeline, p)
	}
	return r
}

// ReportFromStats makes the report of a live session from its statistics
// and its Composition (GET /agentctx/stats, DashboardContextPath).
func ReportFromStats(ss *SessionStats, c Composition) *Report {
	return &Report{Title: ss.Session, Requests: ss.Requests, Compactions: ss.Compactions, ClearingBatches: ss.ClearingBatches,
		CacheBreaks: ss.CacheBreaks, CostUSD: ss.CostUSD, CostWithoutUSD: ss.CostWithoutUSD, SavedUSD: ss.SavedUSD,
		Timeline: ss.Timeline, After: c}
}

// WriteReportHTML writes r as one self-contained HTML page: the
// dashboard's styles, script and charts inline, the report's data in it;
// it loads nothing from elsewhere.
func WriteReportHTML(w io.Writer, r *Report) error {
	sub, _ := fs.Sub(dashboardFiles, "dashboard")
	page, err := fs.ReadFile(sub, "report.html")
	if err != nil {
		return err
	}
	css, _ := fs.ReadFile(sub, "app.css")
	js, _ := fs.ReadFile(sub, "app.js")
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	// Inside <script>: no "</" can close it.
	data = bytes.ReplaceAll(data, []byte("</"), []byte(`<\/`))
	js = bytes.ReplaceAll(js, []byte("</"), []byte(`<\/`))
	out := strings.NewReplacer("{{TITLE}}", htmlEscape(r.Title), "{{CSS}}", string(css), "{{JS}}", string(js), "{{DATA}}", string(data)).Replace(string(page))
	_, err = io.WriteString(w, out)
	return err
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;").Replace(s)
}

// WriteReportText writes r as a table: a line per request, then what
// fills the context.
func WriteReportText(w io.Writer, r *Report) error {
	switch m := r.Managed; {
	case m != nil && m.Ledger != nil:
		fmt.Fprintf(w, "%s: from the agentctx ledger of session %s: %d requests, %d compaction(s); cost $%.4f, without agentctx $%.4f, saved $%.4f\n\n",
			r.Title, strconv.QuoteToGraphic(m.Session), r.Requests, r.Compactions, r.CostUSD, r.CostWithoutUSD, r.SavedUSD)
	default:
		fmt.Fprintf(w, "%s: %d requests, %d compaction(s), %d clearing batch(es), %d cache break(s); cost $%.4f, without agentctx $%.4f, saved $%.4f\n",
			r.Title, r.Requests, r.Compactions, r.ClearingBatches, r.CacheBreaks, r.CostUSD, r.CostWithoutUSD, r.SavedUSD)
		if m != nil && m.Warning != "" {
			fmt.Fprintf(w, "warning: %s\n", m.Warning)
		}
		fmt.Fprintln(w)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	// Tokens; the events after the last cell, not aligned to the right.
	fmt.Fprintln(tw, "request\tsent by the client\tforwarded\tuncached\tcache read\tcache write\tcost\t  events")
	for i, p := range r.Timeline {
		var ev []string
		if p.Offloaded > 0 {
			ev = append(ev, fmt.Sprintf("offload %d", p.Offloaded))
		}
		if p.Pruned > 0 {
			ev = append(ev, fmt.Sprintf("cleared %d", p.Pruned))
		}
		if p.Compacted {
			ev = append(ev, "compaction")
		}
		if p.CacheBreak {
			ev = append(ev, "cache break")
		}
		events := ""
		if len(ev) > 0 {
			events = "  " + strings.Join(ev, ", ")
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t$%.4f\t%s\n", i+1, textfmt.Thousands(p.TokensClient), textfmt.Thousands(p.TokensForwarded),
			textfmt.Thousands(p.InputTokens), textfmt.Thousands(p.CacheReadTokens), textfmt.Thousands(p.CacheWriteTokens), p.CostUSD, events)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "context (tokens)\tsystem\ttools\tmessages\ttool results kept\treferences\tsummary\ttotal\t")
	row := func(name string, c *Composition) {
		t := c.System + c.Tools + c.Messages + c.ToolResults + c.References + c.Summary
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, textfmt.Thousands(c.System), textfmt.Thousands(c.Tools), textfmt.Thousands(c.Messages),
			textfmt.Thousands(c.ToolResults), textfmt.Thousands(c.References), textfmt.Thousands(c.Summary), textfmt.Thousands(t))
	}
	if r.Before != nil {
		row("before", r.Before)
	}
	row("after", &r.After)
	return tw.Flush()
}

// ReplayReport replays a recorded session (replay.Run with opts, in
// memory unless opts names a store) and returns its report: the timeline
// of the replayed requests, what filled the transcript as the agent sent
// it, and what fills it once prepared with the replayed session's state,
// at the time of its last message.
func ReplayReport(ctx context.Context, title string, doc *agentctx.Document, opts replay.Options) (*Report, error) {
	if opts.Store == nil && opts.WorkspaceDir == "" {
		opts.Store = memstore.New()
	}
	if opts.Sessions == nil {
		opts.Sessions = memsession.New()
	}
	if opts.SessionID == "" {
		opts.SessionID = "report"
	}
	res, err := replay.Run(ctx, doc, opts)
	if err != nil {
		return nil, err
	}
	var last time.Time
	for _, m := range doc.Messages {
		if ts, ok := m.Timestamp(); ok && ts.After(last) {
			last = ts
		}
	}
	o := opts.Options
	if !last.IsZero() {
		o.Now = func() time.Time { return last }
	}
	p, err := pipeline.New(o)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	prep, err := p.PrepareDocument(ctx, doc)
	if err != nil {
		return nil, err
	}
	mc := o.MessageCounter
	if mc == nil {
		mc = tokens.NewMessageCounter(tokens.MessageOptions{Counter: o.Counter})
	}
	var system []byte
	if c, ok := doc.System(); ok {
		system, _ = json.Marshal(c)
	}
	before := Compose(doc.Messages, system, nil, mc, mc.CountText)
	after := Compose(prep.Messages, system, nil, mc, mc.CountText)
	return ReportFromReplay(title, res, &before, after), nil
}

// FetchReport reads a live session's report from a proxy at base (its
// statistics and DashboardContextPath), sending token when set. client nil
// means one with a 30-second timeout.
func FetchReport(ctx context.Context, client *http.Client, base, token, key string) (*Report, error) {
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	base = strings.TrimSuffix(base, "/")
	getJSON := func(path string, v any) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return err
		}
		if token != "" {
			req.Header.Set(httpguard.TokenHeader, token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return redactedError{err}
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			return fmt.Errorf("%w: GET %s: %s: %s", ErrReport, path, resp.Status, strings.TrimSpace(string(msg)))
		}
		return json.NewDecoder(io.LimitReader(resp.Body, 256<<20)).Decode(v)
	}
	var stats struct {
		Sessions []SessionStats `json:"sessions"`
	}
	if err := getJSON(StatsPath, &stats); err != nil {
		return nil, err
	}
	for i := range stats.Sessions {
		if ss := &stats.Sessions[i]; ss.Session == key {
			var c Composition
			if err := getJSON(DashboardContextPath+"?session="+url.QueryEscape(key), &c); err != nil {
				return nil, err
			}
			return ReportFromStats(ss, c), nil
		}
	}
	return nil, fmt.Errorf("%w: no session %q in the proxy's statistics", ErrReport, key)
}

// ErrReport is matched by FetchReport's errors that the proxy answered
// (no such session, refused).
var ErrReport = errors.New("report")

type redactedError struct{ err error }

func (e redactedError) Error() string { return redactErr(e.err) }
func (e redactedError) Unwrap() error { return e.err }
