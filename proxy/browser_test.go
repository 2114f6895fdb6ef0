package proxy_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pipeline/replay"
	"github.com/agentctx/agentctx/proxy"
)

// chromium returns the path of Debian's chromium, or skips the test when it
// is absent outside CI (CI installs it: .ci/run).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed (.ci/run installs it)")
	}
	t.Skip("chromium is not installed")
	return ""
}

// headless runs chromium headless on url with extra flags (--dump-dom,
// --screenshot=...) and returns its standard output.
func headless(t *testing.T, bin, url string, flags ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--disable-extensions", "--user-data-dir=" + t.TempDir(), "--virtual-time-budget=10000", "--window-size=1280,1500"}, flags...)
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", flags, err, errb.String())
	}
	return out.Bytes()
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
// ("" any).
func (n node) all(tag, c string) []*html.Node {
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

func parseDOM(t *testing.T, b []byte) node {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return node{doc}
}

// A real browser loads the dashboard of a proxy that served a scripted
// session: the sessions table shows the numbers of /agentctx/stats, the
// session's page draws its timeline, its context and its artifacts.
func TestDashboardInBrowser(t *testing.T) {
	bin := chromium(t)
	s := scriptedSession(t, 14, proxy.Options{Token: "tok"})
	st := getStats(t, s.url, map[string]string{"X-Agentctx-Token": "tok"})
	ss := st.Sessions[0]
	page := s.url + proxy.DashboardPath + "?token=tok"

	dom := parseDOM(t, headless(t, bin, page, "--dump-dom"))
	if attr(dom.all("body", "")[0], "data-loaded") != "1" {
		t.Fatalf("the page did not load the statistics:\n%s", html.UnescapeString(fmt.Sprint(dom.byID("updated").FirstChild)))
	}
	rows := dom.byID("sessions").all("tr", "session")
	if len(rows) != len(st.Sessions) {
		t.Fatalf("%d rows, %d sessions", len(rows), len(st.Sessions))
	}
	cells := map[string]string{}
	for _, td := range (node{rows[0]}).all("td", "") {
		cells[attr(td, "data-k")] = attr(td, "data-v")
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
	for k, want := range map[string]float64{"requests": float64(ss.Requests), "tokens_before": float64(ss.TokensBefore), "tokens_after": float64(ss.TokensAfter),
		"compactions": float64(ss.Compactions), "clearing_batches": float64(ss.ClearingBatches), "cache_breaks": float64(ss.CacheBreaks),
		"cost_usd": ss.CostUSD, "saved_usd": ss.SavedUSD,
		"cache_hit": float64(ss.CacheReadTokens) / float64(ss.InputTokens+ss.CacheReadTokens+ss.CacheWriteTokens)} {
		if got := num(k); got-want > 1e-9 || want-got > 1e-9 {
			t.Errorf("%s: the page shows %v, stats say %v", k, got, want)
		}
	}

	dom = parseDOM(t, headless(t, bin, page+"#/session/"+ss.Session, "--dump-dom"))
	tl := dom.byID("timeline")
	if tl.Node == nil {
		t.Fatal("no timeline")
	}
	if pts := tl.all("circle", "pt"); len(pts) != len(ss.Timeline) {
		t.Errorf("%d points drawn, %d in the timeline", len(pts), len(ss.Timeline))
	}
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
	c, _ := s.srv.Composition(ss.Session)
	parts := map[string]string{}
	for _, r := range dom.byID("composition").all("rect", "") {
		parts[attr(r, "data-part")] = attr(r, "data-v")
	}
	for k, v := range map[string]int{"system": c.System, "tools": c.Tools, "messages": c.Messages, "references": c.References, "summary": c.Summary} {
		// A part of 0 tokens draws no rectangle (whether the scripted
		// session ends with a reference depends on its timing).
		if got := parts[k]; got != strconv.Itoa(v) && (v != 0 || got != "") {
			t.Errorf("composition bar %s = %q, want %d (%v)", k, got, v, parts)
		}
	}
	if n := len(dom.byID("artifacts").all("tr", "artifact")); n == 0 {
		t.Error("no artifact listed")
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
	dom = parseDOM(t, headless(t, bin, page+"#/session/"+ss.Session+"/artifact/"+big, "--dump-dom"))
	v := dom.byID("viewer-text")
	if v.Node == nil || v.FirstChild == nil || !strings.HasPrefix(v.FirstChild.Data, "step ") || !strings.Contains(v.FirstChild.Data, "offset=") {
		t.Errorf("viewer: %v", v.Node)
	}
	if next := dom.byID("viewer-next"); next.Node == nil || attr(next.Node, "disabled") != "" || hasAttr(next.Node, "disabled") {
		t.Error("the viewer cannot read on")
	}

	dir := os.Getenv("AGENTCTX_SCREENSHOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	shot := filepath.Join(dir, "dashboard-session.png")
	headless(t, bin, page+"#/session/"+ss.Session, "--screenshot="+shot)
	if b, err := os.ReadFile(shot); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) || len(b) < 10_000 {
		t.Errorf("screenshot %s: %d bytes, %v", shot, len(b), err)
	}
	t.Logf("screenshot: %s", shot)
}

// The HTML report of examples/session.json, opened in a real browser (from
// a file: it needs nothing else), draws the same charts.
func TestReportInBrowser(t *testing.T) {
	bin := chromium(t)
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
	dir := os.Getenv("AGENTCTX_SCREENSHOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
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
	dom := parseDOM(t, headless(t, bin, "file://"+path, "--dump-dom"))
	if attr(dom.all("body", "")[0], "data-loaded") != "1" {
		t.Fatal("the report's script did not run")
	}
	tl := dom.byID("timeline")
	if pts := tl.all("circle", "pt"); len(pts) != len(rep.Timeline) {
		t.Errorf("%d points drawn, %d requests", len(pts), len(rep.Timeline))
	}
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
	shot := filepath.Join(dir, "report.png")
	headless(t, bin, "file://"+path, "--screenshot="+shot)
	if st, err := os.Stat(shot); err != nil || st.Size() < 10_000 {
		t.Errorf("screenshot %s: %v", shot, err)
	}
}
