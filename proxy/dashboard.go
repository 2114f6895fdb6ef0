package proxy

import (
	"bytes"
	"context"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"html"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/base/sizedlru"
	"github.com/agentctx/agentctx/internal/lib/decodecache"
	"github.com/agentctx/agentctx/offload"
	"github.com/agentctx/agentctx/prune"
	"github.com/agentctx/agentctx/workspace"
)

// DashboardPath is where the proxy serves its dashboard: a page over the
// statistics (sessions table, live), a session's timeline and context,
// and its artifacts read back. Its assets are embedded; it loads nothing
// from elsewhere. Protected as StatsPath is; with a token, a browser
// opens DashboardPath+"?token=TOKEN" (the page sends the token on as a
// header).
const DashboardPath = "/agentctx/"

// The dashboard's JSON endpoints, under DashboardPath.
const (
	// DashboardContextPath?session=KEY answers the Composition of the
	// session's last request.
	DashboardContextPath = DashboardPath + "api/context"
	// DashboardArtifactsPath?session=KEY&offset=N lists the session's
	// artifacts (offloaded tool results, compaction archives), a page at
	// a time, by the read-back tool query_artifacts.
	DashboardArtifactsPath = DashboardPath + "api/artifacts"
	// DashboardReadPath?id=ID&offset=N reads an artifact back, a page at
	// a time, by the read-back tool get_knowledge_by_id.
	DashboardReadPath = DashboardPath + "api/read"
)

// maxTimeline bounds the points a session's timeline keeps (the last ones).
const maxTimeline = 200

//go:embed dashboard
var dashboardFiles embed.FS

// ReadBack runs a read-back tool and returns one page of its answer, as an
// MCP client gets it: mcpserver.Server.Call is one.
type ReadBack func(ctx context.Context, tool string, args json.RawMessage) (string, error)

// SessionView is what the dashboard shows of a session besides its
// statistics (GET /agentctx/stats has it too).
type SessionView struct {
	// Client is the first word of the client's User-Agent
	// (claude-cli/2.0.31, codex_cli_rs/0.50.0...); Model is the model of
	// the last request.
	Client string `json:"client"`
	Model  string `json:"model"`
	// Project is the directory the session's client works in
	// (Options.Project), empty when the proxy was not told.
	Project string `json:"project,omitempty"`
	// LastActivity is when the last request arrived.
	LastActivity time.Time `json:"last_activity"`
	// ClearingBatches counts the requests on which the Engine changed what
	// it had sent before without compacting: PrefixChanges − Compactions.
	ClearingBatches int `json:"clearing_batches"`
	// Timeline has a point per request, the last 200.
	Timeline []TimelinePoint `json:"timeline"`
}

// TimelinePoint is one request of a session's timeline.
type TimelinePoint struct {
	At time.Time `json:"at"` // when the request was received
	// Status is the HTTP status answered; StatusClientClosedRequest (499)
	// when the client hung up before the answer's end.
	Status int `json:"status"`
	// TokensClient and TokensForwarded are the Engine's counts of the
	// request as the client sent it and as it was forwarded (0 when the
	// Engine did not see it).
	TokensClient    int `json:"tokens_client"`
	TokensForwarded int `json:"tokens_forwarded"`
	// The upstream's usage: uncached input, cache read and written, output.
	InputTokens      int `json:"input_tokens"`
	CacheReadTokens  int `json:"cache_read_tokens"`
	CacheWriteTokens int `json:"cache_write_tokens"`
	OutputTokens     int `json:"output_tokens"`
	// Offloaded and Pruned count the tool results this request newly
	// offloaded and cleared; Clearing marks a new clearing batch (the
	// prefix changed without a compaction), Compacted a compaction,
	// CacheBreak a request that did not extend the one before.
	Offloaded  int  `json:"offloaded"`
	Pruned     int  `json:"pruned"`
	Clearing   bool `json:"clearing"`
	Compacted  bool `json:"compacted"`
	CacheBreak bool `json:"cache_break"`
	// CostUSD is what the request cost, summary requests included.
	CostUSD float64 `json:"cost_usd"`
}

// Composition is what fills a session's context as its last request sent
// it, in tokens by the Engine's counter (the tokens package's without one):
// system prompt, tool definitions, messages (text, tool calls), tool
// results kept whole, references to offloaded results and cleared
// placeholders, and compaction summaries.
type Composition struct {
	Session     string `json:"session"`
	System      int    `json:"system"`
	Tools       int    `json:"tools"`
	Messages    int    `json:"messages"`
	ToolResults int    `json:"tool_results"`
	References  int    `json:"references"`
	Summary     int    `json:"summary"`
	// Known is false when the proxy has not kept the messages (none
	// yet, a request it could not read, or a session not among those
	// seen last, whose messages are let go: see maxViewBytes): only
	// System and Tools are counted. A Responses request's items are
	// counted as the messages they map onto.
	Known bool `json:"known"`
}

// sessionView is what the dashboard keeps of a session: its last
// request's messages, system prompt and tool definitions.
type sessionView struct {
	msgs          []agentctx.Message
	system, tools []byte
}

// maxViewBytes bounds the memory of the views the dashboard keeps, by
// estimate (viewWeight). The sessions seen last keep theirs; an older one
// (or one whose view alone would pass the bound) keeps its statistics and
// timeline, and its composition counts only its system prompt and tools
// until its next request. Without a bound, every session's last messages
// stayed in memory as long as its statistics (up to 10,000 sessions),
// whatever DecodeCacheBytes said.
const maxViewBytes = 64 << 20

// viewTable keeps the views of the sessions seen last, by session key,
// within maxViewBytes (sizedlru: the least recently used dropped first).
type viewTable = sizedlru.Cache[string, sessionView]

func newViewTable(max int64) *viewTable { return sizedlru.New[string, sessionView](max) }

// recordView keeps what x sent as its session's view in t.
func recordView(t *viewTable, key string, x *exchange) {
	v, _ := t.Get(key)
	msgs := x.sentMsgs
	if msgs == nil {
		msgs = x.viewMsgs
	}
	if msgs != nil || x.api == APIResponses {
		v.msgs = msgs
	}
	// Copies, kept while they do not change: the body they are in is not.
	if !bytes.Equal(v.system, x.bill.system) {
		v.system = bytes.Clone(x.bill.system)
	}
	if !bytes.Equal(v.tools, x.bill.tools) {
		v.tools = bytes.Clone(x.bill.tools)
	}
	t.Put(key, v, viewWeight(x.bytesIn, v))
}

// viewWeight estimates the memory of v, the view of a request of body
// bytes: its decoded strings (about the body's bytes), the structure of
// its messages (decodecache.ListBytes), its system prompt and tools.
func viewWeight(body int, v sessionView) int64 {
	return int64(body) + decodecache.ListBytes(v.msgs) + int64(len(v.system)+len(v.tools))
}

// recordTimeline adds x to the session's timeline. s.mu is held. (Its
// messages go to the Server's viewTable: recordView.)
func (s *sessionStats) recordTimeline(x *exchange) {
	v := &s.SessionView
	if x.client != "" {
		v.Client = x.client
	}
	if x.bill.model != "" {
		v.Model = x.bill.model
	}
	v.LastActivity = x.start
	pt := TimelinePoint{At: x.start, Status: x.status, CacheBreak: x.cacheBreak, CostUSD: round6(x.bill.cost + x.bill.summaryCost)}
	if p := x.prepared; p != nil {
		pt.TokensClient, pt.TokensForwarded = p.TokensBefore, p.TokensAfter
		pt.Offloaded, pt.Pruned, pt.Compacted = p.Offloaded, p.Pruned, p.Compacted
		pt.Clearing = p.PrefixChanged && !p.Compacted
		if pt.Clearing {
			v.ClearingBatches++
		}
	}
	if x.gotUsage {
		pt.InputTokens, pt.CacheReadTokens = x.usage.Uncached, x.usage.CacheRead
		pt.CacheWriteTokens, pt.OutputTokens = x.usage.CacheWrite(), x.usage.Output
	}
	if len(v.Timeline) == maxTimeline {
		// In place: the oldest point goes.
		copy(v.Timeline, v.Timeline[1:])
		v.Timeline[maxTimeline-1] = pt
	} else {
		v.Timeline = append(v.Timeline, pt)
	}
}

// Composition returns what fills the context of a session's last request;
// ok is false for a session without statistics.
func (s *Server) Composition(key string) (Composition, bool) {
	s.stats.mu.Lock()
	st := s.stats.sessions[key]
	s.stats.mu.Unlock()
	if st == nil {
		return Composition{}, false
	}
	v, _ := s.stats.views.Get(key)
	c := Compose(v.msgs, v.system, v.tools, s.counter(), s.fallbackCounter.get().CountText)
	c.Session = key
	return c, true
}

// Compose returns what fills a request's context: msgs (nil: not known),
// its system prompt and tool definitions (raw JSON, counted as text by
// text), by the counter mc.
func Compose(msgs []agentctx.Message, system, tools []byte, mc MessageCounter, text func(string) int) Composition {
	c := Composition{Known: msgs != nil}
	if len(system) > 0 {
		c.System = text(string(system))
	}
	if len(tools) > 0 {
		c.Tools = text(string(tools))
	}
	for _, m := range msgs {
		switch {
		case compact.IsSummary(m):
			c.Summary += mc.CountMessage(m)
		case m.Role == "tool": // OpenAI chat's tool result
			if isReference(m.Content.AsText()) {
				c.References += mc.CountMessage(m)
			} else {
				c.ToolResults += mc.CountMessage(m)
			}
		case m.Content.Kind() == agentctx.ContentBlocks:
			rest := make([]agentctx.Block, 0, len(m.Content.Blocks()))
			for _, b := range m.Content.Blocks() {
				if b.Type != agentctx.BlockToolResult {
					rest = append(rest, b)
					continue
				}
				n := mc.CountMessage(agentctx.NewMessage(m.Role, agentctx.BlockList(b)))
				if isReference(b.Content.AsText()) {
					c.References += n // a reference, or a cleared result's placeholder
				} else {
					c.ToolResults += n
				}
			}
			if len(rest) > 0 {
				m2 := m
				m2.Content = agentctx.BlockList(rest...)
				c.Messages += mc.CountMessage(m2)
			}
		default:
			c.Messages += mc.CountMessage(m)
		}
	}
	return c
}

// isReference reports whether a tool result's text stands for a result
// kept elsewhere: a workspace reference (<knowledge_list>), an offload
// file reference, or the placeholder of a cleared result (either built-in
// text).
func isReference(text string) bool {
	t := strings.TrimSpace(text)
	return strings.HasPrefix(t, "<knowledge_list>") || offload.IsReference(t) || prune.IsPlaceholder(t)
}

// isDashboard reports whether p is the dashboard's (StatsPath is not).
func (s *Server) isDashboard(p string) bool {
	return p == strings.TrimSuffix(DashboardPath, "/") || strings.HasPrefix(p, DashboardPath) && p != StatsPath
}

// dashboardToken reports whether a dashboard request carries the token in
// its query (a browser's first load cannot send a header).
func (s *Server) dashboardToken(r *http.Request) bool {
	if s.opts.Token == "" || !s.isDashboard(r.URL.Path) {
		return false
	}
	got := r.URL.Query().Get("token")
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.opts.Token)) == 1
}

func (s *Server) serveDashboard(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer") // the page's URL may carry its token
	switch p := r.URL.Path; {
	case p == strings.TrimSuffix(DashboardPath, "/"):
		http.Redirect(w, r, DashboardPath+queryOf(r), http.StatusMovedPermanently)
	case p == DashboardContextPath:
		c, ok := s.Composition(r.URL.Query().Get("session"))
		if !ok {
			http.Error(w, "agentctx: no such session", http.StatusNotFound)
			return
		}
		writeJSON(w, c)
	case p == DashboardArtifactsPath:
		s.serveArtifacts(w, r)
	case p == DashboardReadPath:
		s.serveRead(w, r)
	default:
		name := strings.TrimPrefix(p, DashboardPath)
		if name == "" {
			name = "index.html"
		}
		sub, _ := fs.Sub(dashboardFiles, "dashboard")
		if _, err := fs.Stat(sub, name); err != nil {
			http.NotFound(w, r)
			return
		}
		if name == "index.html" {
			// The assets' URLs carry the page's token, if any.
			page, _ := fs.ReadFile(sub, name)
			q := ""
			if t := r.URL.Query().Get("token"); t != "" {
				q = "?" + url.Values{"token": {t}}.Encode()
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write(bytes.ReplaceAll(page, []byte("{{Q}}"), []byte(html.EscapeString(q))))
			return
		}
		http.ServeFileFS(w, r, sub, name)
	}
}

func queryOf(r *http.Request) string {
	if r.URL.RawQuery == "" {
		return ""
	}
	return "?" + r.URL.RawQuery
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// readBackTimeout bounds a dashboard read.
const readBackTimeout = 10 * time.Second

// callReadBack runs a read-back tool for the dashboard.
func (s *Server) callReadBack(w http.ResponseWriter, r *http.Request, tool string, args map[string]any) (string, bool) {
	if s.opts.ReadBack == nil {
		http.Error(w, "agentctx: this proxy reads nothing back (no store)", http.StatusNotFound)
		return "", false
	}
	raw, _ := json.Marshal(args)
	ctx, cancel := context.WithTimeout(r.Context(), readBackTimeout)
	defer cancel()
	text, err := s.opts.ReadBack(ctx, tool, raw)
	if err != nil {
		status := http.StatusBadGateway
		if errors.Is(err, workspace.ErrNotFound) {
			status = http.StatusNotFound
		}
		if errors.Is(err, workspace.ErrInvalidArguments) {
			status = http.StatusBadRequest
		}
		s.log.Info("proxy: dashboard read-back failed", "tool", tool, "err", err)
		http.Error(w, "agentctx: "+err.Error(), status)
		return "", false
	}
	return text, true
}

func queryOffset(r *http.Request) int {
	n, err := strconv.Atoi(r.URL.Query().Get("offset"))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// ArtifactsPage is a page of a session's artifacts (DashboardArtifactsPath).
type ArtifactsPage struct {
	Artifacts []workspace.ArtifactSummary `json:"artifacts"`
	// Notice is the read-back's note when the list was cut ("" otherwise).
	Notice string `json:"notice"`
	Offset int    `json:"offset"`
}

func (s *Server) serveArtifacts(w http.ResponseWriter, r *http.Request) {
	off := queryOffset(r)
	args := map[string]any{"filter": map[string]string{workspace.KeySessionID: r.URL.Query().Get("session")}}
	if off > 0 {
		args["offset"] = off
	}
	text, ok := s.callReadBack(w, r, workspace.ToolQueryArtifacts, args)
	if !ok {
		return
	}
	page := ArtifactsPage{Artifacts: []workspace.ArtifactSummary{}, Offset: off}
	list, notice := text, ""
	if i := strings.LastIndex(text, "\n]"); i >= 0 {
		list, notice = text[:i+2], strings.TrimSpace(text[i+2:])
	}
	if err := json.Unmarshal([]byte(list), &page.Artifacts); err != nil {
		http.Error(w, "agentctx: the artifact list is not JSON", http.StatusBadGateway)
		return
	}
	page.Notice = notice
	writeJSON(w, page)
}

// ReadPage is a page of an artifact read back (DashboardReadPath): the
// text as get_knowledge_by_id returns it, notice of how to read on
// included.
type ReadPage struct {
	ID     string `json:"id"`
	Offset int    `json:"offset"`
	Text   string `json:"text"`
}

func (s *Server) serveRead(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if id == "" {
		http.Error(w, "agentctx: id is required", http.StatusBadRequest)
		return
	}
	off := queryOffset(r)
	text, ok := s.callReadBack(w, r, workspace.ToolGetKnowledgeByID, map[string]any{"artifact_id": id, "offset": off})
	if !ok {
		return
	}
	writeJSON(w, ReadPage{ID: id, Offset: off, Text: text})
}

// clientOf returns the first word of a User-Agent, at most 64 bytes.
func clientOf(ua string) string {
	if i := strings.IndexByte(ua, ' '); i >= 0 {
		ua = ua[:i]
	}
	if len(ua) > 64 {
		ua = ua[:64]
	}
	return ua
}
