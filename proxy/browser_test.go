package proxy_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/testkit/headless"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pipeline/replay"
	"github.com/agentctx/agentctx/proxy"
)

// The browser tests share one headless chromium (a browser start costs
// about two seconds of a 2-core machine); each page opens in a tab of its
// own, each test's pages on a server (an origin) of their own. TestMain
// stops it.
var shared struct {
	once sync.Once
	b    *headless.Browser
	err  error
}

// browser returns the shared chromium, started at the first call; it skips
// as chromium does.
func browser(t *testing.T) *headless.Browser {
	bin := headless.Chromium(t)
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.b, shared.err = headless.Start(ctx, bin)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.b
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.b != nil {
		shared.b.Close()
	}
	os.Exit(code)
}

// pageWait is how long one open page has to show what a test waits for
// before eventually opens it again.
const pageWait = 20 * time.Second

// browserWait is how long a page has to show what the test waits for: a
// loaded 2-core machine runs the page's fetches slowly.
const browserWait = 4 * time.Minute

// watch opens url in a tab of its own and reads its DOM every 50 ms until
// check returns "" (done; the tab is returned open, for a screenshot) or
// pageWait passes (what check said last is returned, the tab closed).
func watch(br *headless.Browser, url string, check func(node) string) (*headless.Tab, node, string) {
	ctx, cancel := context.WithTimeout(context.Background(), pageWait+time.Minute)
	defer cancel()
	tab, err := br.Open(ctx, url)
	if err != nil {
		return nil, node{}, err.Error()
	}
	deadline := time.Now().Add(pageWait)
	for {
		b, err := tab.HTML(ctx)
		why := ""
		var dom node
		if err != nil {
			why = err.Error()
		} else if doc, err := html.Parse(bytes.NewReader(b)); err != nil {
			why = err.Error()
		} else {
			dom = node{doc}
			why = check(dom)
		}
		if why == "" {
			return tab, dom, ""
		}
		if time.Now().After(deadline) {
			tab.Close()
			return nil, dom, why
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// watchClosed is watch for a test that needs only the DOM: the tab is
// closed.
func watchClosed(br *headless.Browser, url string, check func(node) string) (node, string) {
	tab, dom, why := watch(br, url, check)
	if tab != nil {
		tab.Close()
	}
	return dom, why
}

// eventually runs try (one page opened and watched) until it reports
// nothing missing or browserWait passes, and fails the test then with
// what was missing. try returns "" when done.
func eventually(t *testing.T, what string, try func() string) {
	t.Helper()
	deadline := time.Now().Add(browserWait)
	for attempt := 1; ; attempt++ {
		why := try()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: after %d attempts in %v: %s", what, attempt, browserWait, why)
		}
		t.Logf("%s, attempt %d: %s; again", what, attempt, why)
	}
}

// loadDOM opens url until ready finds the rendered DOM complete (ready
// returns "" then, else what is missing) and returns that DOM.
func loadDOM(t *testing.T, br *headless.Browser, url string, ready func(node) string) node {
	t.Helper()
	return loadDOMShot(t, br, url, "", ready)
}

// loadDOMShot is loadDOM that also saves the page, as drawn when its DOM
// was read complete, to shot (a PNG of at least 10 kB: something was
// drawn); "" saves none.
func loadDOMShot(t *testing.T, br *headless.Browser, url, shot string, ready func(node) string) node {
	t.Helper()
	var dom node
	what := "loading " + url
	if shot != "" {
		what += " and its screenshot"
	}
	eventually(t, what, func() string {
		tab, d, why := watch(br, url, func(d node) string {
			if body := d.all("body", ""); len(body) == 0 || attr(body[0], "data-loaded") != "1" {
				return "the page has not loaded its data: " + d.text("updated")
			}
			return ready(d)
		})
		if why != "" {
			return why
		}
		defer tab.Close()
		dom = d
		if shot == "" {
			return ""
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		png, err := tab.Screenshot(ctx)
		if err == nil {
			err = os.WriteFile(shot, png, 0o644)
		}
		if err != nil {
			return err.Error()
		}
		return checkScreenshot(shot)
	})
	if shot != "" {
		t.Logf("screenshot: %s", shot)
	}
	return dom
}

// checkScreenshot returns "" when path holds a PNG of at least 10 kB
// (something was drawn), else what is wrong with it.
func checkScreenshot(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) || len(b) < 10_000 {
		return fmt.Sprintf("screenshot %s: %d bytes, %v", path, len(b), err)
	}
	return ""
}

// screenshotDir is where the screenshots go: $AGENTCTX_SCREENSHOT_DIR, or
// the test's temporary directory.
func screenshotDir(t *testing.T) string {
	if dir := os.Getenv("AGENTCTX_SCREENSHOT_DIR"); dir != "" {
		return dir
	}
	return t.TempDir()
}

// node is a parsed DOM with the few queries the test needs.
type node struct{ *html.Node }

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

func hasClass(n *html.Node, c string) bool {
	for _, f := range strings.Fields(attr(n, "class")) {
		if f == c {
			return true
		}
	}
	return false
}

// all returns the elements under n (n included) named tag with class c
// ("" any); none under a node not found.
func (n node) all(tag, c string) []*html.Node {
	if n.Node == nil {
		return nil
	}
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(x *html.Node) {
		if x.Type == html.ElementNode && x.Data == tag && (c == "" || hasClass(x, c)) {
			out = append(out, x)
		}
		for ch := x.FirstChild; ch != nil; ch = ch.NextSibling {
			walk(ch)
		}
	}
	walk(n.Node)
	return out
}

func (n node) byID(id string) node {
	var found *html.Node
	var walk func(*html.Node)
	walk = func(x *html.Node) {
		if found != nil {
			return
		}
		if x.Type == html.ElementNode && attr(x, "id") == id {
			found = x
			return
		}
		for ch := x.FirstChild; ch != nil; ch = ch.NextSibling {
			walk(ch)
		}
	}
	walk(n.Node)
	return node{found}
}

// text returns the text of the element with id (its descendants' text
// nodes, joined).
func (n node) text(id string) string {
	e := n.byID(id)
	if e.Node == nil {
		return ""
	}
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(x *html.Node) {
		if x.Type == html.TextNode {
			b.WriteString(x.Data)
		}
		for ch := x.FirstChild; ch != nil; ch = ch.NextSibling {
			walk(ch)
		}
	}
	walk(e.Node)
	return b.String()
}

// A real browser loads the dashboard of a proxy that served a scripted
// session: the sessions table shows the numbers of /agentctx/stats, the
// session's page draws its timeline, its context and its artifacts, and
// the viewer reads an artifact back a page at a time.
func TestDashboardInBrowser(t *testing.T) {
	t.Parallel() // its own proxy or file (an origin of its own) and tabs of its own: the browser tests overlap their pages
	br := browser(t)
	s := scriptedSession(t, 14, proxy.Options{Token: "tok", Project: "/home/dev/src/shop"})
	st := getStats(t, s.url, map[string]string{"X-Agentctx-Token": "tok"})
	ss := st.Sessions[0]
	page := s.url + proxy.DashboardPath + "?token=tok"
	dir := screenshotDir(t)

	dom := loadDOMShot(t, br, page, filepath.Join(dir, "dashboard-sessions.png"), func(d node) string {
		if n := len(d.byID("sessions").all("tr", "session")); n != len(st.Sessions) {
			return fmt.Sprintf("%d rows, %d sessions", n, len(st.Sessions))
		}
		return ""
	})
	row := dom.byID("sessions").all("tr", "session")[0]
	cells, texts := map[string]string{}, map[string]string{}
	for _, td := range (node{row}).all("td", "") {
		cells[attr(td, "data-k")] = attr(td, "data-v")
		if td.FirstChild != nil {
			texts[attr(td, "data-k")] = td.FirstChild.Data
		}
	}
	num := func(k string) float64 {
		v, err := strconv.ParseFloat(cells[k], 64)
		if err != nil {
			t.Errorf("cell %s: %q", k, cells[k])
		}
		return v
	}
	if cells["session"] != ss.Session || cells["client"] != ss.Client || cells["model"] != ss.Model {
		t.Errorf("row %v, stats %s %s %s", cells, ss.Session, ss.Client, ss.Model)
	}
	if ss.Project != "/home/dev/src/shop" || cells["project"] != ss.Project || texts["project"] != "shop" {
		t.Errorf("project: stats %q, the cell %q reading %q", ss.Project, cells["project"], texts["project"])
	}
	for k, want := range map[string]float64{"requests": float64(ss.Requests), "errors": float64(ss.Errors), "tokens_before": float64(ss.TokensBefore), "tokens_after": float64(ss.TokensAfter),
		"compactions": float64(ss.Compactions), "clearing_batches": float64(ss.ClearingBatches), "cache_breaks": float64(ss.CacheBreaks),
		"cost_usd": ss.CostUSD, "saved_usd": ss.SavedUSD,
		"cache_hit": float64(ss.CacheReadTokens) / float64(ss.InputTokens+ss.CacheReadTokens+ss.CacheWriteTokens)} {
		if got := num(k); got-want > 1e-9 || want-got > 1e-9 {
			t.Errorf("%s: the page shows %v, stats say %v", k, got, want)
		}
	}
	// What a person reads: numbers grouped, money in dollars, the hit
	// ratio in percent, the activity relative.
	for k, want := range map[string]string{
		"tokens_before": thousands(ss.TokensBefore), "tokens_after": thousands(ss.TokensAfter),
	} {
		if texts[k] != want {
			t.Errorf("cell %s reads %q, want %q", k, texts[k], want)
		}
	}
	// Money in dollars to four places (a tie rounds apart in JavaScript
	// and Go: compared as numbers).
	for k, want := range map[string]float64{"cost_usd": ss.CostUSD, "saved_usd": ss.SavedUSD} {
		d, ok := strings.CutPrefix(strings.Replace(texts[k], "-$", "$-", 1), "$")
		v, err := strconv.ParseFloat(d, 64)
		if !ok || err != nil || len(d) < 6 || d[len(d)-5] != '.' || math.Abs(v-want) > 0.00005+1e-12 {
			t.Errorf("cell %s reads %q, want $%.4f", k, texts[k], want)
		}
	}
	// The hit ratio in percent to a tenth (JavaScript rounds a tie up, Go
	// to even: compared as numbers).
	if pc, ok := strings.CutSuffix(texts["cache_hit"], "%"); !ok || len(pc) < 3 || pc[len(pc)-2] != '.' {
		t.Errorf("cache hit reads %q, want a percentage to a tenth", texts["cache_hit"])
	} else if v, err := strconv.ParseFloat(pc, 64); err != nil || math.Abs(v-100*num("cache_hit")) > 0.05+1e-9 {
		t.Errorf("cache hit reads %q, the ratio is %v", texts["cache_hit"], num("cache_hit"))
	}
	if !strings.HasSuffix(texts["last_activity"], " ago") {
		t.Errorf("last activity reads %q", texts["last_activity"])
	}
	if got := dom.text("total"); !strings.HasPrefix(got, thousands(st.Total.Requests)+" requests · bill $") {
		t.Errorf("header: %q", got)
	}
	// The headline: the saving, its share of the bill without agentctx.
	tot := st.Total.Bill
	if tot.CostWithoutUSD <= 0 {
		t.Fatalf("no bill without agentctx: %+v", tot)
	}
	wantHead := fmt.Sprintf("Saved $%.4f (%.1f%%) · $%.4f billed instead of $%.4f without agentctx",
		tot.SavedUSD, 100*tot.SavedUSD/tot.CostWithoutUSD, tot.CostUSD, tot.CostWithoutUSD)
	if got := dom.text("headline"); got != wantHead {
		t.Errorf("headline %q, want %q", got, wantHead)
	}

	c, _ := s.srv.Composition(ss.Session)
	session := page + "#/session/" + ss.Session
	dom = loadDOMShot(t, br, session, filepath.Join(dir, "dashboard-session.png"), func(d node) string {
		if n := len(d.byID("timeline").all("circle", "pt")); n != len(ss.Timeline) {
			return fmt.Sprintf("%d points drawn, %d in the timeline", n, len(ss.Timeline))
		}
		if len(d.byID("composition").all("rect", "")) == 0 {
			return "no context bar"
		}
		if len(d.byID("artifacts").all("tr", "artifact")) == 0 {
			return "no artifact listed"
		}
		return ""
	})
	tl := dom.byID("timeline")
	for _, pl := range tl.all("polyline", "line") {
		if n := len(strings.Fields(attr(pl, "points"))); n != len(ss.Timeline) {
			t.Errorf("line %s has %d points", attr(pl, "class"), n)
		}
	}
	if n := len(tl.all("line", "mark-compaction")); n != ss.Compactions {
		t.Errorf("%d compaction marks, %d compactions", n, ss.Compactions)
	}
	if n := len(tl.all("path", "mark-clearing")); n != ss.ClearingBatches {
		t.Errorf("%d clearing marks, %d batches", n, ss.ClearingBatches)
	}
	offloads := 0
	for _, p := range ss.Timeline {
		if p.Offloaded > 0 {
			offloads++
		}
	}
	if n := len(tl.all("rect", "mark-offload")); n != offloads || n == 0 {
		t.Errorf("%d offload marks, %d requests offloaded", n, offloads)
	}
	var labels []string
	for _, x := range tl.all("text", "") {
		if x.FirstChild != nil {
			labels = append(labels, x.FirstChild.Data)
		}
	}
	if !slices.Contains(labels, "tokens per request") || !slices.Contains(labels, fmt.Sprintf("request %d", len(ss.Timeline))) {
		t.Errorf("the timeline's labels: %q", labels)
	}
	parts := map[string]string{}
	for _, r := range dom.byID("composition").all("rect", "") {
		parts[attr(r, "data-part")] = attr(r, "data-v")
	}
	total := 0
	for k, v := range map[string]int{"system": c.System, "tools": c.Tools, "messages": c.Messages, "tool_results": c.ToolResults, "references": c.References, "summary": c.Summary} {
		total += v
		// A part of 0 tokens draws no rectangle.
		if got := parts[k]; got != strconv.Itoa(v) && (v != 0 || got != "") {
			t.Errorf("composition bar %s = %q, want %d (%v)", k, got, v, parts)
		}
	}
	if got := dom.text("composition-legend"); !strings.Contains(got, "total "+thousands(total)+" tokens") {
		t.Errorf("the context's legend reads %q, want its total %d", got, total)
	}

	// An artifact opened in the viewer: its first page, read back as the
	// MCP tool reads it, and the way to the next.
	var big string
	for _, tr := range dom.byID("artifacts").all("tr", "artifact") {
		for _, td := range (node{tr}).all("td", "") {
			if attr(td, "data-k") == "chars" {
				if n, _ := strconv.Atoi(attr(td, "data-v")); n > 39_000 && big == "" {
					big = attr(tr, "data-id")
				}
			}
		}
	}
	if big == "" {
		t.Fatal("no artifact longer than a page")
	}
	viewer := session + "/artifact/" + big
	dom = loadDOMShot(t, br, viewer, filepath.Join(dir, "dashboard-artifact.png"), func(d node) string {
		if d.text("viewer-text") == "" {
			return "the viewer shows nothing"
		}
		return ""
	})
	if v := dom.text("viewer-text"); !strings.HasPrefix(v, "step ") || !strings.Contains(v, "offset=") {
		t.Errorf("viewer: %.300q", v)
	}
	if next := dom.byID("viewer-next"); next.Node == nil || hasAttr(next.Node, "disabled") {
		t.Error("the viewer cannot read on")
	}
}

// The sessions table has a column of errors: a session whose upstream cut
// an answer shows 1, marked, and the requests its client hung up on (not
// errors) in the cell's title; a session whose client hung up after whole
// answers shows none. The session's page says both (issue 45: nobody saw
// the errors).
func TestDashboardInBrowserErrors(t *testing.T) {
	t.Parallel() // its own proxy or file (an origin of its own) and tabs of its own: the browser tests overlap their pages
	br := browser(t)
	p := newHangupProxy(t, hangupUpstream(t))
	a := hangupAPIs[0]
	p.ask(t, a, "failing", "cut 10 0 0 5", "")       // cut by the upstream: an error
	p.ask(t, a, "failing", "mid 10 0 0 5", "data: ") // hung up mid-stream: a client cancel
	p.ask(t, a, "failing", "whole 10 0 0 5", "")     // answered
	p.ask(t, a, "fine", "hold 10 0 0 5", a.terminal) // hung up after message_stop: answered
	p.ask(t, hangupAPIs[2], "fine", "hold 10 0 0 5", hangupAPIs[2].terminal)
	page := p.url + proxy.DashboardPath
	dom := loadDOMShot(t, br, page, filepath.Join(screenshotDir(t), "dashboard-errors.png"), func(d node) string {
		if n := len(d.byID("sessions").all("tr", "session")); n != 2 {
			return fmt.Sprintf("%d rows, 2 sessions", n)
		}
		return ""
	})
	type errCell struct {
		value, text, title string
		marked             bool
	}
	got := map[string]errCell{}
	for _, row := range dom.byID("sessions").all("tr", "session") {
		for _, td := range (node{row}).all("td", "") {
			if attr(td, "data-k") == "errors" && td.FirstChild != nil {
				got[attr(row, "data-session")] = errCell{attr(td, "data-v"), td.FirstChild.Data, attr(td, "title"), hasClass(td, "neg")}
			}
		}
	}
	for session, want := range map[string]errCell{
		"failing": {"1", "1", "1 request the client hung up on", true},
		"fine":    {"0", "0", "0 requests the client hung up on", false},
	} {
		if got[session] != want {
			t.Errorf("%s: errors cell %+v, want %+v", session, got[session], want)
		}
	}
	heads := dom.byID("sessions").all("th", "")
	if len(heads) < 6 || heads[5].FirstChild == nil || heads[5].FirstChild.Data != "Errors" {
		t.Errorf("the sixth column (after session, project, client, model, requests) is not Errors: %d columns", len(heads))
	}
	dom = loadDOM(t, br, page+"#/session/failing", func(d node) string {
		if !strings.Contains(d.text("session-summary"), "3 requests") {
			return "no summary: " + d.text("session-summary")
		}
		return ""
	})
	if got := dom.text("session-summary"); !strings.Contains(got, "3 requests · 1 error · 1 client cancel · ") {
		t.Errorf("summary: %q", got)
	}
}

// A proxy that has served nothing: the dashboard says so, and a session
// it does not know is named as such.
func TestDashboardInBrowserEmpty(t *testing.T) {
	t.Parallel() // its own proxy or file (an origin of its own) and tabs of its own: the browser tests overlap their pages
	br := browser(t)
	srv, err := proxy.New(proxy.Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(srv)
	t.Cleanup(ps.Close)
	page := ps.URL + proxy.DashboardPath
	dom := loadDOMShot(t, br, page, filepath.Join(screenshotDir(t), "dashboard-empty.png"), func(d node) string {
		if e := d.byID("empty"); e.Node == nil || hasAttr(e.Node, "hidden") {
			return "no empty state shown"
		}
		return ""
	})
	if n := len(dom.byID("sessions").all("tr", "session")); n != 0 {
		t.Errorf("%d rows", n)
	}
	if got := dom.text("total"); got != "0 requests · bill $0.0000 · saved $0.0000" {
		t.Errorf("header: %q", got)
	}
	if got := dom.text("headline"); got != "Nothing billed yet." {
		t.Errorf("headline: %q", got)
	}
	dom = loadDOM(t, br, page+"#/session/nope", func(d node) string {
		if d.text("session-summary") == "" {
			return "no summary"
		}
		return ""
	})
	if got := dom.text("session-summary"); got != "No statistics for this session." {
		t.Errorf("unknown session: %q", got)
	}
}

// thousands formats n as the page does (en-US grouping).
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// The HTML report of examples/session.json, opened in a real browser (from
// a file: it needs nothing else), draws the same charts.
func TestReportInBrowser(t *testing.T) {
	t.Parallel() // its own proxy or file (an origin of its own) and tabs of its own: the browser tests overlap their pages
	br := browser(t)
	doc, err := agentctx.ReadFile(context.Background(), filepath.Join("..", "examples", "session.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := proxy.ReplayReport(context.Background(), "session.json", doc, replay.Options{Options: pipeline.Options{
		Compact: compact.Options{Limit: 20_000, Dir: t.TempDir()}}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requests == 0 || len(rep.Timeline) != rep.Requests || rep.Before == nil {
		t.Fatalf("report: %d requests, %d points", rep.Requests, len(rep.Timeline))
	}
	dir := screenshotDir(t)
	path := filepath.Join(dir, "report.html")
	var b bytes.Buffer
	if err := proxy.WriteReportHTML(&b, rep); err != nil {
		t.Fatal(err)
	}
	// Self-contained: nothing to load from a file or the network.
	for _, link := range []string{`src="`, `href="`, "url(", "@import"} {
		if bytes.Contains(b.Bytes(), []byte(link)) {
			t.Errorf("the report loads something: %s", link)
		}
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := loadDOMShot(t, br, "file://"+path, filepath.Join(dir, "report.png"), func(d node) string {
		if n := len(d.byID("timeline").all("circle", "pt")); n != len(rep.Timeline) {
			return fmt.Sprintf("%d points drawn, %d requests", n, len(rep.Timeline))
		}
		return ""
	})
	for id, c := range map[string]*proxy.Composition{"composition": &rep.After, "composition-before": rep.Before} {
		parts := map[string]string{}
		for _, r := range dom.byID(id).all("rect", "") {
			parts[attr(r, "data-part")] = attr(r, "data-v")
		}
		for k, v := range map[string]int{"system": c.System, "messages": c.Messages, "tool_results": c.ToolResults, "references": c.References} {
			if v > 0 && parts[k] != strconv.Itoa(v) {
				t.Errorf("%s bar %s = %q, want %d", id, k, parts[k], v)
			}
		}
	}
	if rep.After.References == 0 || rep.Before.References != 0 || rep.After.ToolResults >= rep.Before.ToolResults {
		t.Errorf("before %+v, after %+v", rep.Before, rep.After)
	}
	if got := dom.text("session-summary"); !strings.HasPrefix(got, fmt.Sprintf("%d requests · ", rep.Requests)) || !strings.Contains(got, fmt.Sprintf("saved $%.4f", rep.SavedUSD)) {
		t.Errorf("summary: %q", got)
	}
}

// The sessions table is live: a session that starts while the page is open
// appears at the page's next poll of the statistics, without a reload.
func TestDashboardInBrowserLive(t *testing.T) {
	t.Parallel() // its own proxy or file (an origin of its own) and tabs of its own: the browser tests overlap their pages
	br := browser(t)
	s := scriptedSession(t, 2, proxy.Options{})
	// Each attempt (the page opened) starts a session of its own once the
	// page has read the statistics once: the page shows it only if it
	// polled them again and redrew the table.
	var mu sync.Mutex
	gets, started := 0, 1
	next := func() string { started++; return fmt.Sprintf("live-%d", started) } // the session the next request is in
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == proxy.StatsPath {
			mu.Lock()
			gets++
			if gets == 2 {
				resp := post(t, s.url+"/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
					map[string]string{"X-Claude-Code-Session-Id": next(), "X-Api-Key": "k", "User-Agent": "claude-cli/2.0.0"})
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			mu.Unlock()
		}
		s.srv.ServeHTTP(w, r)
	}))
	t.Cleanup(live.Close)
	var dom node
	eventually(t, "a session started while the page is open", func() string {
		mu.Lock()
		gets = 0
		mu.Unlock()
		d, why := watchClosed(br, live.URL+proxy.DashboardPath, func(d node) string {
			mu.Lock()
			want, polls := started, gets
			mu.Unlock()
			if rows := len(d.byID("sessions").all("tr", "session")); rows != want || polls < 2 {
				return fmt.Sprintf("%d rows after %d reads of the statistics, %d sessions", rows, polls, want)
			}
			return ""
		})
		dom = d
		return why
	})
	want := fmt.Sprintf("live-%d", started)
	if first := dom.byID("sessions").all("tr", "session")[0]; attr(first, "data-session") != want {
		t.Errorf("first row %q, want the newest session %q", attr(first, "data-session"), want)
	}
	// A session's page is live too: a request of that session made while
	// the page is open adds a point to its timeline.
	requests := func() int {
		for _, st := range s.srv.Stats() {
			if st.Session == want {
				return st.Requests
			}
		}
		return 0
	}
	mu.Lock()
	next = func() string { return want }
	mu.Unlock()
	eventually(t, "a request made while the session's page is open", func() string {
		mu.Lock()
		gets = 0
		mu.Unlock()
		before := requests()
		_, why := watchClosed(br, live.URL+proxy.DashboardPath+"#/session/"+want, func(d node) string {
			mu.Lock()
			polls := gets
			mu.Unlock()
			if pts := len(d.byID("timeline").all("circle", "pt")); pts != before+1 || polls < 2 {
				return fmt.Sprintf("%d points after %d reads of the statistics, %d requests before the page", pts, polls, before)
			}
			return ""
		})
		return why
	})
	// That session stored nothing: its page says so.
	dom = loadDOM(t, br, live.URL+proxy.DashboardPath+"#/session/"+want, func(d node) string {
		if e := d.byID("artifacts-empty"); e.Node == nil || hasAttr(e.Node, "hidden") {
			return "no empty state for the artifacts: " + d.text("artifacts-notice")
		}
		return ""
	})
	if n := len(dom.byID("artifacts").all("tr", "artifact")); n != 0 {
		t.Errorf("%d artifacts listed", n)
	}
}
