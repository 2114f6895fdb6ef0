// Package storetest is the conformance suite of workspace.Store: every
// backend runs it from its own test with a few lines,
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t testing.TB, dir string) workspace.Store {
//			s, err := mystore.Open(dir)
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// and a failure names the rule of the Store contract that was broken.
// Benchmark measures a backend on 10,000 artifacts.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/driver"
)

// Opener opens a store kept in dir, a fresh empty directory for each rule
// (a backend that keeps nothing on disk uses it as a unique key). The suite
// closes every store it opens.
type Opener func(t testing.TB, dir string) workspace.Store

type rule struct {
	name string
	doc  string
	run  func(t *testing.T, s workspace.Store, dir string)
}

// Run runs every rule of the contract against stores made by open, each
// rule in a subtest named after it.
func Run(t *testing.T, open Opener) {
	t.Helper()
	run(t, open)
}

// RunDriver checks a backend's driver through the portable store
// workspace.NewStore makes of it, as programs use it (a backend's Open
// returns that store: Run checks it the same way). newDriver opens the
// driver of the store kept at dir, as an Opener does.
func RunDriver(t *testing.T, newDriver func(t testing.TB, dir string) driver.Store) {
	t.Helper()
	run(t, func(t testing.TB, dir string) workspace.Store {
		return workspace.NewStore(newDriver(t, dir), workspace.StoreOptions{})
	})
}

func run(t *testing.T, open Opener) {
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			s := open(t, dir)
			t.Cleanup(func() { s.Close() })
			defer func() {
				if t.Failed() {
					t.Logf("rule %s: %s", r.name, r.doc)
				}
			}()
			r.run(t, s, dir)
		})
	}
}

// TestReopen checks that a persistent backend keeps its artifacts across a
// Close and a new Open of the same dir.
func TestReopen(t *testing.T, open Opener) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	a := art("tool_result_x", "kept\nacross\nopens\n", workspace.Metadata{"k": "v"}, t0)
	want := mustPut(t, s, "ns", a)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s = open(t, dir)
	defer s.Close()
	got, err := s.Get(ctx, "ns", a.ID)
	if err != nil {
		t.Fatalf("Get after reopen: %v", err)
	}
	checkArtifact(t, got, want, a.Content)
}

var (
	bg = context.Background()
	t0 = time.Date(2026, 11, 22, 7, 14, 0, 123456789, time.UTC)
)

func art(id, content string, md workspace.Metadata, created time.Time) workspace.Artifact {
	return workspace.Artifact{Info: workspace.Info{ID: id, Type: workspace.TypeText, Metadata: md, Created: created}, Content: content}
}

func mustPut(t testing.TB, s workspace.Store, ns string, a workspace.Artifact) workspace.Info {
	t.Helper()
	info, err := s.Put(bg, ns, a)
	if err != nil {
		t.Fatalf("Put(%q, %q): %v", ns, a.ID, err)
	}
	return info
}

func mustGet(t testing.TB, s workspace.Store, ns, id string) *workspace.Artifact {
	t.Helper()
	a, err := s.Get(bg, ns, id)
	if err != nil {
		t.Fatalf("Get(%q, %q): %v", ns, id, err)
	}
	return a
}

func mustQuery(t testing.TB, s workspace.Store, ns string, f workspace.Filter) []workspace.Info {
	t.Helper()
	list, err := s.Query(bg, ns, f)
	if err != nil {
		t.Fatalf("Query(%q, %v): %v", ns, f, err)
	}
	return list
}

func ids(list []workspace.Info) []string {
	out := make([]string, len(list))
	for i, info := range list {
		out[i] = info.ID
	}
	return out
}

func infoEqual(a, b workspace.Info) bool {
	if a.ID != b.ID || a.Type != b.Type || !a.Created.Equal(b.Created) || a.Chars != b.Chars ||
		a.Lines != b.Lines || a.Bytes != b.Bytes || a.SHA256 != b.SHA256 || len(a.Metadata) != len(b.Metadata) {
		return false
	}
	for k, v := range a.Metadata {
		if w, ok := b.Metadata[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func checkArtifact(t testing.TB, got *workspace.Artifact, want workspace.Info, content string) {
	t.Helper()
	if got.Content != content {
		t.Errorf("content of %q: got %d bytes %.60q, want %d bytes %.60q", want.ID, len(got.Content), got.Content, len(content), content)
	}
	if !infoEqual(got.Info, want) {
		t.Errorf("info of %q:\n got %+v\nwant %+v", want.ID, got.Info, want)
	}
}

// wantErr checks that err matches target and is a *workspace.Error for op.
func wantErr(t testing.TB, err, target error, op string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got error %v, want %v", op, err, target)
		return
	}
	var we *workspace.Error
	if !errors.As(err, &we) {
		t.Errorf("%s: error %v is not a *workspace.Error", op, err)
	} else if we.Op != op {
		t.Errorf("%s: *workspace.Error.Op = %q", op, we.Op)
	}
}

var rules = []rule{
	{"PutGet", "Get returns what Put stored, byte for byte, with sizes computed by the store", rulePutGet},
	{"Defaults", "an empty Type is text; a zero Created stays zero; nil metadata reads as empty", ruleDefaults},
	{"Missing", "a missing artifact is ErrNotFound from Get, Stat, Lines, Grep and Delete, in a *workspace.Error", ruleMissing},
	{"Overwrite", "Put replaces an artifact whole", ruleOverwrite},
	{"PutStream", "PutStream (workspace.PutStream) stores what Put stores of the content the stream writes, replacing as Put does; a stream that writes other bytes than measured fails with ErrStreamChanged and changes nothing", rulePutStream},
	{"Create", "Create stores an artifact as Put does when its id is free, and never replaces one: a taken id is ErrExists, in a *workspace.Error", ruleCreate},
	{"CreateRace", "goroutines creating one id at once with different contents: exactly one wins, every other gets ErrExists, the id holds the winner's artifact", ruleCreateRace},
	{"Stat", "Stat describes an artifact exactly as Put and Get do, and follows overwrites and deletes", ruleStat},
	{"OddIDs", "any non-empty UTF-8 id is its own artifact and never leaves the store's directory", ruleOddIDs},
	{"InvalidKeys", "empty or non-UTF-8 ids and namespaces, and bad metadata, are rejected with their sentinel", ruleInvalidKeys},
	{"Namespaces", "namespaces never see each other's artifacts", ruleNamespaces},
	{"ContentForms", "content is kept byte for byte; Chars, Lines and Bytes follow the shared definitions", ruleContentForms},
	{"LargeContent", "megabytes of content round-trip and can be read by lines and grep", ruleLargeContent},
	{"Lines", "Lines is 1-based and inclusive, clamps the end, and rejects bad ranges with ErrInvalidRange", ruleLines},
	{"Grep", "Grep matches RE2 per line, with ignore-case, context, and the result cap", ruleGrep},
	{"GrepFilter", "Grep over a filter searches exactly the matching artifacts, in Query order, and never misses a match", ruleGrepFilter},
	{"Query", "Query matches metadata exactly (missing key = \"\"), orders by Created then ID, and pages", ruleQuery},
	{"Delete", "Delete removes an artifact; a second Delete is ErrNotFound", ruleDelete},
	{"ListNamespaces", "Namespaces lists, in byte order, exactly the namespaces holding artifacts (odd and long ones too); a cancelled ctx and Close fail it", ruleListNamespaces},
	{"NoAliasing", "the store keeps no reference to maps passed in or returned", ruleNoAliasing},
	{"Cancelled", "a cancelled context fails every method and changes nothing", ruleCancelled},
	{"Concurrent", "concurrent writers and readers: every read sees one whole Put", ruleConcurrent},
	{"Closed", "after Close every method fails with ErrClosed; Close again is fine", ruleClosed},
	{"SessionScopedRead", "a plain tool result id that two sessions hold (tool_result_call_0, tool_result_call_0-2) reads each session's own within it; without a session it is ErrAmbiguousID listing both", ruleSessionScopedRead},
}

func rulePutGet(t *testing.T, s workspace.Store, _ string) {
	created := time.Date(2026, 11, 22, 8, 14, 0, 123456789, time.FixedZone("CET", 3600))
	a := workspace.Artifact{
		Info: workspace.Info{
			ID:       "tool_result_toolu_01",
			Type:     workspace.TypeJSON,
			Metadata: workspace.Metadata{"context_type": "tool_result", "biz_id": "toolu_01", "tool_name": "bash"},
			Created:  created,
			Chars:    999, Lines: 999, Bytes: 999, SHA256: "ignored",
		},
		Content: "hello\nwörld ✓\n",
	}
	info := mustPut(t, s, "default", a)
	want := driver.Measure(a).Info
	if want.Chars != 14 || want.Lines != 2 || want.Bytes != 17 {
		t.Fatalf("Measure: %+v", want)
	}
	if !infoEqual(info, want) {
		t.Errorf("Put returned\n %+v\nwant %+v", info, want)
	}
	if info.Created.Location() != time.UTC {
		t.Errorf("Put: Created %v is not UTC", info.Created)
	}
	got := mustGet(t, s, "default", a.ID)
	checkArtifact(t, got, want, a.Content)
	if got.Created.Location() != time.UTC {
		t.Errorf("Get: Created %v is not UTC", got.Created)
	}
}

func ruleDefaults(t *testing.T, s workspace.Store, _ string) {
	a := workspace.Artifact{Info: workspace.Info{ID: "plain"}, Content: "x"}
	info := mustPut(t, s, "default", a)
	got := mustGet(t, s, "default", "plain")
	for _, i := range []workspace.Info{info, got.Info} {
		if i.Type != workspace.TypeText {
			t.Errorf("Type = %q, want text", i.Type)
		}
		if !i.Created.IsZero() {
			t.Errorf("Created = %v, want zero", i.Created)
		}
		if len(i.Metadata) != 0 {
			t.Errorf("Metadata = %v, want empty", i.Metadata)
		}
	}
	if list := mustQuery(t, s, "default", workspace.Filter{}); len(list) != 1 || !list[0].Created.IsZero() {
		t.Errorf("Query = %+v", list)
	}
}

func ruleMissing(t *testing.T, s workspace.Store, _ string) {
	mustPut(t, s, "default", art("present", "x", nil, t0))
	_, err := s.Get(bg, "default", "absent")
	wantErr(t, err, workspace.ErrNotFound, "get")
	var we *workspace.Error
	if errors.As(err, &we) && (we.ID != "absent" || we.Namespace != "default") {
		t.Errorf("get: *workspace.Error = %+v, want id and namespace", we)
	}
	_, err = s.Stat(bg, "default", "absent")
	wantErr(t, err, workspace.ErrNotFound, "stat")
	_, err = s.Stat(bg, "other", "present")
	wantErr(t, err, workspace.ErrNotFound, "stat")
	_, err = workspace.Lines(bg, s, "default", "absent", 1, 1)
	wantErr(t, err, workspace.ErrNotFound, "lines")
	_, err = workspace.Grep(bg, s, "default", workspace.GrepQuery{ID: "absent", Pattern: "x"})
	wantErr(t, err, workspace.ErrNotFound, "grep")
	wantErr(t, s.Delete(bg, "default", "absent"), workspace.ErrNotFound, "delete")
	_, err = s.Get(bg, "other", "present")
	wantErr(t, err, workspace.ErrNotFound, "get")
	if list := mustQuery(t, s, "empty-namespace", workspace.Filter{}); len(list) != 0 {
		t.Errorf("Query of an unused namespace = %v", ids(list))
	}
	res, err := workspace.Grep(bg, s, "empty-namespace", workspace.GrepQuery{Pattern: "x"})
	if err != nil || res.Searched != 0 || len(res.Hits) != 0 {
		t.Errorf("Grep of an unused namespace = %+v, %v", res, err)
	}
}

func ruleOverwrite(t *testing.T, s workspace.Store, _ string) {
	v1 := art("same", "first version\nwith two lines\n", workspace.Metadata{"a": "1", "keep": "no"}, t0)
	mustPut(t, s, "default", v1)
	v2 := workspace.Artifact{Info: workspace.Info{ID: "same", Type: workspace.TypeJSON,
		Metadata: workspace.Metadata{"b": "2"}, Created: t0.Add(time.Hour)}, Content: `{"second":true}`}
	info := mustPut(t, s, "default", v2)
	checkArtifact(t, mustGet(t, s, "default", "same"), info, v2.Content)
	if got := mustGet(t, s, "default", "same"); got.Metadata["a"] != "" || got.Type != workspace.TypeJSON {
		t.Errorf("old metadata or type survived: %+v", got.Info)
	}
	if list := mustQuery(t, s, "default", workspace.Filter{}); len(list) != 1 || !infoEqual(list[0], info) {
		t.Errorf("Query after overwrite = %+v", list)
	}
	if list := mustQuery(t, s, "default", workspace.Filter{Metadata: workspace.Metadata{"a": "1"}}); len(list) != 0 {
		t.Errorf("old metadata still matches: %v", ids(list))
	}
	res, err := workspace.Grep(bg, s, "default", workspace.GrepQuery{Pattern: "first"})
	if err != nil || res.Total != 0 {
		t.Errorf("grep finds old content: %+v, %v", res, err)
	}
	res, err = workspace.Grep(bg, s, "default", workspace.GrepQuery{Pattern: "second"})
	if err != nil || res.Total != 1 {
		t.Errorf("grep misses new content: %+v, %v", res, err)
	}
}

func rulePutStream(t *testing.T, s workspace.Store, _ string) {
	content := strings.Repeat("[\n  {\"role\":\"user\",\"content\":\"wörld ✓\"},\n", 5000) + "]\n"
	pieces := func(w io.Writer) error { // in pieces that cut runes
		for rest := content; rest != ""; {
			n := min(len(rest), 7)
			if _, err := io.WriteString(w, rest[:n]); err != nil {
				return err
			}
			rest = rest[n:]
		}
		return nil
	}
	base := workspace.Info{ID: "compact_0123", Type: workspace.TypeJSON, Metadata: workspace.Metadata{"context_type": "compaction_archive"},
		Created: time.Date(2026, 12, 2, 8, 0, 0, 0, time.FixedZone("CET", 3600))}
	measured, err := workspace.MeasureStream(base, pieces)
	if err != nil {
		t.Fatal(err)
	}
	want := driver.Measure(workspace.Artifact{Info: base, Content: content}).Info
	if !infoEqual(measured, want) {
		t.Fatalf("MeasureStream = %+v, want %+v", measured, want)
	}
	mustPut(t, s, "default", art(base.ID, "an older version\n", nil, t0))
	info, err := workspace.PutStream(bg, s, "default", workspace.Stream{Info: measured, Write: pieces})
	if err != nil {
		t.Fatalf("PutStream: %v", err)
	}
	if !infoEqual(info, want) {
		t.Errorf("PutStream returned\n %+v\nwant %+v", info, want)
	}
	checkArtifact(t, mustGet(t, s, "default", base.ID), want, content)
	if st, err := s.Stat(bg, "default", base.ID); err != nil || !infoEqual(st, want) {
		t.Errorf("Stat after PutStream = %+v, %v", st, err)
	}
	changed := func(w io.Writer) error { _, err := io.WriteString(w, strings.ToUpper(content)); return err }
	_, err = workspace.PutStream(bg, s, "default", workspace.Stream{Info: workspace.Info{ID: "other", Bytes: measured.Bytes, SHA256: measured.SHA256}, Write: changed})
	wantErr(t, err, workspace.ErrStreamChanged, "put")
	if _, err := s.Stat(bg, "default", "other"); !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("a changed stream stored something: %v", err)
	}
	_, err = workspace.PutStream(bg, s, "default", workspace.Stream{Info: measured, Write: changed})
	wantErr(t, err, workspace.ErrStreamChanged, "put")
	checkArtifact(t, mustGet(t, s, "default", base.ID), want, content)
	if _, err := workspace.PutStream(bg, s, "default", workspace.Stream{Info: workspace.Info{ID: ""}, Write: pieces}); !errors.Is(err, workspace.ErrInvalidID) {
		t.Errorf("PutStream of an empty id: %v", err)
	}
}

func ruleCreate(t *testing.T, s workspace.Store, _ string) {
	first := art("tool_result_call_1", "first result\nof call 1\n", workspace.Metadata{"session_id": "s1"}, t0)
	info, err := s.Create(bg, "default", first)
	if err != nil {
		t.Fatalf("Create of a free id: %v", err)
	}
	want := driver.Measure(first).Info
	if !infoEqual(info, want) {
		t.Errorf("Create returned\n %+v\nwant %+v", info, want)
	}
	checkArtifact(t, mustGet(t, s, "default", first.ID), want, first.Content)

	for _, other := range []workspace.Artifact{
		art(first.ID, "another result\n", workspace.Metadata{"session_id": "s2"}, t0.Add(time.Hour)),
		first, // the same artifact again: still taken
		{Info: workspace.Info{ID: first.ID, Type: workspace.TypeJSON}, Content: "{}"},
	} {
		_, err := s.Create(bg, "default", other)
		wantErr(t, err, workspace.ErrExists, "create")
		var we *workspace.Error
		if errors.As(err, &we) && (we.ID != first.ID || we.Namespace != "default") {
			t.Errorf("create: *workspace.Error = %+v, want id and namespace", we)
		}
		checkArtifact(t, mustGet(t, s, "default", first.ID), want, first.Content)
		if st, err := s.Stat(bg, "default", first.ID); err != nil || !infoEqual(st, want) {
			t.Errorf("Stat after a refused Create = %+v, %v; want %+v", st, err, want)
		}
	}
	if list := mustQuery(t, s, "default", workspace.Filter{Metadata: workspace.Metadata{"session_id": "s2"}}); len(list) != 0 {
		t.Errorf("a refused Create left metadata behind: %q", ids(list))
	}
	if res, err := workspace.Grep(bg, s, "default", workspace.GrepQuery{Pattern: "another"}); err != nil || res.Total != 0 {
		t.Errorf("a refused Create left content behind: %+v, %v", res, err)
	}

	// The id is free in another namespace, and again after a Delete.
	if _, err := s.Create(bg, "other", art(first.ID, "other namespace", nil, t0)); err != nil {
		t.Errorf("Create of the id in another namespace: %v", err)
	}
	if err := s.Delete(bg, "default", first.ID); err != nil {
		t.Fatal(err)
	}
	again := art(first.ID, "after delete\n", nil, t0)
	info, err = s.Create(bg, "default", again)
	if err != nil {
		t.Fatalf("Create after Delete: %v", err)
	}
	checkArtifact(t, mustGet(t, s, "default", first.ID), info, again.Content)
	// Put still replaces what Create stored.
	put := mustPut(t, s, "default", art(first.ID, "put over\n", workspace.Metadata{"k": "v"}, t0))
	checkArtifact(t, mustGet(t, s, "default", first.ID), put, "put over\n")
	if got := mustGet(t, s, "other", first.ID); got.Content != "other namespace" {
		t.Errorf("other namespace: %q", got.Content)
	}
}

// raceContent is writer w's content for a raced id: sizes differ, so that
// a mix of two writers shows.
func raceContent(id string, w int) string {
	return strings.Repeat(fmt.Sprintf("%s written by writer %d\n", id, w), 1+w%5*30)
}

func ruleCreateRace(t *testing.T, s workspace.Store, _ string) {
	const writers, ids = 8, 20
	type outcome struct {
		won    bool
		info   workspace.Info
		failed error
	}
	results := make([][]outcome, ids)
	for i := range results {
		results[i] = make([]outcome, writers)
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			<-start
			for i := range ids {
				id := fmt.Sprintf("tool_result_race_%02d", i)
				md := workspace.Metadata{"writer": strconv.Itoa(w)}
				info, err := s.Create(bg, "default", art(id, raceContent(id, w), md, t0))
				switch {
				case err == nil:
					results[i][w] = outcome{won: true, info: info}
				case !errors.Is(err, workspace.ErrExists):
					results[i][w] = outcome{failed: err}
				}
			}
		})
	}
	close(start)
	wg.Wait()
	for i := range ids {
		id := fmt.Sprintf("tool_result_race_%02d", i)
		winner := -1
		for w, o := range results[i] {
			if o.failed != nil {
				t.Errorf("%s: writer %d: Create failed with %v, want success or ErrExists", id, w, o.failed)
			}
			if o.won {
				if winner >= 0 {
					t.Errorf("%s: writers %d and %d both created it", id, winner, w)
				}
				winner = w
			}
		}
		if winner < 0 {
			t.Errorf("%s: no writer created it", id)
			continue
		}
		got := mustGet(t, s, "default", id)
		if got.Content != raceContent(id, winner) || got.Metadata["writer"] != strconv.Itoa(winner) {
			t.Errorf("%s: holds writer %s's artifact (%d bytes), but writer %d won", id, got.Metadata["writer"], len(got.Content), winner)
		}
		checkArtifact(t, got, results[i][winner].info, raceContent(id, winner))
	}
}

// oddIDs are ids that a naive file or SQL backend gets wrong.
var oddIDs = []string{
	"tool_result_toolu_01ABCdef", "a/b", "a/b/c", "/abs", "../escape", "..", ".", ".hidden", "a\\b", "C:\\x",
	"nul\x00byte", "ctl\x01\x1f\x7f", "new\nline", "with space", " ", "ünïcödé ✓", "emoji😀", "%", "%2F", "%252F",
	"a.meta", "a.meta.json", "a.txt", "a", "CASE", "case", "-dash", "~tilde", "quote'\"`", "semi;DROP TABLE x;--",
	"*?[glob]", strings.Repeat("x", 300), strings.Repeat("é/", 200), strings.Repeat("y", 300) + "1",
}

func ruleStat(t *testing.T, s workspace.Store, _ string) {
	stat := func(id string) workspace.Info {
		t.Helper()
		info, err := s.Stat(bg, "default", id)
		if err != nil {
			t.Fatalf("Stat(%q): %v", id, err)
		}
		return info
	}
	contents := map[string]string{"empty": "", "text": "a\nwörld ✓\n", "bytes": "\xff\x00 not UTF-8", "big": strings.Repeat("0123456789abcdef\n", 1<<16)}
	for id, content := range contents {
		md := workspace.Metadata{"context_type": "tool_result", "id": id}
		info := mustPut(t, s, "default", art(id, content, md, t0.Add(time.Duration(len(content)))))
		got := stat(id)
		if !infoEqual(got, info) {
			t.Errorf("Stat(%q) = %+v, Put returned %+v", id, got, info)
		}
		if want := driver.Measure(art(id, content, md, t0)); got.SHA256 != want.SHA256 || got.Bytes != len(content) {
			t.Errorf("Stat(%q): sha256 %s bytes %d, want %s %d", id, got.SHA256, got.Bytes, want.SHA256, len(content))
		}
		if a := mustGet(t, s, "default", id); !infoEqual(a.Info, got) {
			t.Errorf("Stat(%q) = %+v, Get says %+v", id, got, a.Info)
		}
		if got.Created.Location() != time.UTC {
			t.Errorf("Stat(%q): Created %v is not UTC", id, got.Created)
		}
	}
	v2 := workspace.Artifact{Info: workspace.Info{ID: "text", Type: workspace.TypeJSON, Metadata: workspace.Metadata{"b": "2"}}, Content: `{"v":2}`}
	info := mustPut(t, s, "default", v2)
	if got := stat("text"); !infoEqual(got, info) || !got.Created.IsZero() {
		t.Errorf("Stat after overwrite = %+v, want %+v", got, info)
	}
	if err := s.Delete(bg, "default", "text"); err != nil {
		t.Fatal(err)
	}
	_, err := s.Stat(bg, "default", "text")
	wantErr(t, err, workspace.ErrNotFound, "stat")
	if got := stat("big"); got.Lines != 1<<16 || got.Bytes != 17<<16 {
		t.Errorf("Stat(big) = %+v", got)
	}
}

func ruleOddIDs(t *testing.T, s workspace.Store, dir string) {
	parent := filepath.Dir(dir)
	for i, id := range oddIDs {
		mustPut(t, s, "default", art(id, "content of "+strconv.Quote(id), workspace.Metadata{"n": strconv.Itoa(i)}, t0))
	}
	for i, id := range oddIDs {
		got := mustGet(t, s, "default", id)
		if got.ID != id || got.Content != "content of "+strconv.Quote(id) || got.Metadata["n"] != strconv.Itoa(i) {
			t.Errorf("id %q: got id %q content %q metadata %v", id, got.ID, got.Content, got.Metadata)
		}
		if info, err := s.Stat(bg, "default", id); err != nil || !infoEqual(info, got.Info) {
			t.Errorf("Stat(%q) = %+v, %v; Get says %+v", id, info, err, got.Info)
		}
	}
	list := mustQuery(t, s, "default", workspace.Filter{})
	got := ids(list)
	want := slices.Clone(oddIDs)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Query ids:\n got %q\nwant %q", got, want)
	}
	res, err := workspace.Grep(bg, s, "default", workspace.GrepQuery{Pattern: "content of", MaxResults: -1})
	if err != nil || res.Total != len(oddIDs) {
		t.Errorf("Grep over odd ids: total %d, err %v", res.Total, err)
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != filepath.Base(dir) {
			t.Errorf("a file escaped the store's directory: %s", filepath.Join(parent, e.Name()))
		}
	}
	for _, id := range oddIDs {
		if err := s.Delete(bg, "default", id); err != nil {
			t.Errorf("Delete(%q): %v", id, err)
		}
	}
	if list := mustQuery(t, s, "default", workspace.Filter{}); len(list) != 0 {
		t.Errorf("left after deleting all: %q", ids(list))
	}
}

func ruleInvalidKeys(t *testing.T, s workspace.Store, _ string) {
	for _, id := range []string{"", "bad\xffutf8"} {
		_, err := s.Put(bg, "default", art(id, "x", nil, t0))
		wantErr(t, err, workspace.ErrInvalidID, "put")
		_, err = s.Create(bg, "default", art(id, "x", nil, t0))
		wantErr(t, err, workspace.ErrInvalidID, "create")
		_, err = s.Get(bg, "default", id)
		wantErr(t, err, workspace.ErrInvalidID, "get")
		_, err = s.Stat(bg, "default", id)
		wantErr(t, err, workspace.ErrInvalidID, "stat")
		_, err = workspace.Lines(bg, s, "default", id, 1, 1)
		wantErr(t, err, workspace.ErrInvalidID, "lines")
		wantErr(t, s.Delete(bg, "default", id), workspace.ErrInvalidID, "delete")
	}
	for _, ns := range []string{"", "bad\xff"} {
		_, err := s.Put(bg, ns, art("x", "x", nil, t0))
		wantErr(t, err, workspace.ErrInvalidNamespace, "put")
		_, err = s.Create(bg, ns, art("x", "x", nil, t0))
		wantErr(t, err, workspace.ErrInvalidNamespace, "create")
		_, err = s.Query(bg, ns, workspace.Filter{})
		wantErr(t, err, workspace.ErrInvalidNamespace, "query")
		_, err = s.Stat(bg, ns, "x")
		wantErr(t, err, workspace.ErrInvalidNamespace, "stat")
		_, err = workspace.Grep(bg, s, ns, workspace.GrepQuery{Pattern: "x"})
		wantErr(t, err, workspace.ErrInvalidNamespace, "grep")
	}
	for _, md := range []workspace.Metadata{{"": "v"}, {"k": "\xff"}, {"\xfe": "v"}} {
		_, err := s.Put(bg, "default", art("x", "x", md, t0))
		wantErr(t, err, workspace.ErrInvalidMetadata, "put")
		_, err = s.Create(bg, "default", art("x", "x", md, t0))
		wantErr(t, err, workspace.ErrInvalidMetadata, "create")
	}
	if list := mustQuery(t, s, "default", workspace.Filter{}); len(list) != 0 {
		t.Errorf("rejected puts stored something: %q", ids(list))
	}
}

func ruleNamespaces(t *testing.T, s workspace.Store, _ string) {
	spaces := []string{"default", "other", "a/b", "..", "ünï", "Default"}
	for _, ns := range spaces {
		mustPut(t, s, ns, art("shared", "in "+ns, workspace.Metadata{"ns": ns}, t0))
		mustPut(t, s, ns, art("only-"+ns, "x", nil, t0))
	}
	for _, ns := range spaces {
		if got := mustGet(t, s, ns, "shared"); got.Content != "in "+ns || got.Metadata["ns"] != ns {
			t.Errorf("namespace %q: got %q %v", ns, got.Content, got.Metadata)
		}
		if got := ids(mustQuery(t, s, ns, workspace.Filter{})); !slices.Equal(got, []string{"only-" + ns, "shared"}) {
			t.Errorf("namespace %q lists %q", ns, got)
		}
		res, err := workspace.Grep(bg, s, ns, workspace.GrepQuery{Pattern: "^in "})
		if err != nil || res.Total != 1 || res.Hits[0].Lines[0].Text != "in "+ns {
			t.Errorf("namespace %q grep: %+v %v", ns, res, err)
		}
	}
	if err := s.Delete(bg, "other", "shared"); err != nil {
		t.Fatal(err)
	}
	for _, ns := range spaces {
		_, err := s.Get(bg, ns, "shared")
		if (ns == "other") != errors.Is(err, workspace.ErrNotFound) {
			t.Errorf("after deleting in other: Get in %q: %v", ns, err)
		}
	}
}

func ruleListNamespaces(t *testing.T, s workspace.Store, _ string) {
	if got, err := s.Namespaces(bg); err != nil || len(got) != 0 {
		t.Fatalf("Namespaces of an empty store = %q, %v", got, err)
	}
	long := "z" + strings.Repeat("namespace", 40) // a name too long for a file name
	spaces := []string{"default", "Default", "a/b", "..", "ünï", "x\x00y", "t/tenants/abc", long}
	for _, ns := range spaces {
		mustPut(t, s, ns, art("a", "x", nil, t0))
	}
	mustPut(t, s, "gone", art("a", "x", nil, t0))
	if err := s.Delete(bg, "gone", "a"); err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(spaces)
	slices.Sort(want)
	got, err := s.Namespaces(bg)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("Namespaces = %q, %v; want %q (an emptied namespace is not listed)", got, err, want)
	}
	c, cancel := context.WithCancel(bg)
	cancel()
	_, err = s.Namespaces(c)
	wantErr(t, err, context.Canceled, "namespaces")
	s.Close()
	_, err = s.Namespaces(bg)
	wantErr(t, err, workspace.ErrClosed, "namespaces")
}

func ruleContentForms(t *testing.T, s workspace.Store, _ string) {
	cases := []struct {
		content             string
		chars, lines, bytes int
	}{
		{"", 0, 0, 0},
		{"\n", 1, 1, 1},
		{"a", 1, 1, 1},
		{"a\n", 2, 1, 2},
		{"a\nb", 3, 2, 3},
		{"\r\n\r\n", 4, 2, 4},
		{"tab\tand\x00nul", 11, 1, 11},
		{"😀", 1, 1, 4},
		{"\xff\xfe not UTF-8", 12, 1, 12},
		{"  leading and trailing spaces  \n\n\n", 34, 3, 34},
	}
	for i, c := range cases {
		id := "c" + strconv.Itoa(i)
		info := mustPut(t, s, "default", art(id, c.content, nil, t0))
		if info.Chars != c.chars || info.Lines != c.lines || info.Bytes != c.bytes {
			t.Errorf("%q: chars/lines/bytes = %d/%d/%d, want %d/%d/%d", c.content, info.Chars, info.Lines, info.Bytes, c.chars, c.lines, c.bytes)
		}
		checkArtifact(t, mustGet(t, s, "default", id), info, c.content)
	}
}

func ruleLargeContent(t *testing.T, s workspace.Store, _ string) {
	var b strings.Builder
	for i := 1; i <= 50_000; i++ {
		fmt.Fprintf(&b, "line %06d of a large tool result, padded to about forty bytes\n", i)
	}
	big := b.String() // ~3 MB
	info := mustPut(t, s, "default", art("big", big, nil, t0))
	if info.Lines != 50_000 || info.Bytes != len(big) {
		t.Errorf("big: %+v", info)
	}
	got := mustGet(t, s, "default", "big")
	if got.Content != big {
		t.Errorf("big content changed (%d bytes, want %d)", len(got.Content), len(big))
	}
	lr, err := workspace.Lines(bg, s, "default", "big", 49_999, 300_000)
	if err != nil || lr.End != 50_000 || len(lr.Lines) != 2 || !strings.HasPrefix(lr.Lines[1], "line 050000 ") {
		t.Errorf("Lines of big: %+v %v", lr, err)
	}
	res, err := workspace.Grep(bg, s, "default", workspace.GrepQuery{ID: "big", Pattern: `^line 0[2-4]\d{4} `, MaxResults: 5})
	if err != nil || res.Matches != 5 || res.Total != 30_000 || res.Hits[0].Lines[0].Number != 20_000 {
		t.Errorf("Grep of big: matches %d total %d err %v", res.Matches, res.Total, err)
	}
	oneLine := strings.Repeat("0123456789", 100_000) // 1 MB, no newline
	info = mustPut(t, s, "default", art("one-line", oneLine, nil, t0))
	if info.Lines != 1 || info.Chars != len(oneLine) {
		t.Errorf("one-line: %+v", info)
	}
	res, err = workspace.Grep(bg, s, "default", workspace.GrepQuery{ID: "one-line", Pattern: "9$"})
	if err != nil || res.Total != 1 {
		t.Errorf("Grep of one long line: %+v %v", res, err)
	}
}

func ruleLines(t *testing.T, s workspace.Store, _ string) {
	mustPut(t, s, "default", art("f", "l1\nl2\r\nl3\nl4\nl5\n", nil, t0))
	mustPut(t, s, "default", art("noeol", "a\nb", nil, t0))
	mustPut(t, s, "default", art("empty", "", nil, t0))
	ok := []struct {
		id                string
		start, end        int
		wantEnd, wantTotl int
		want              []string
	}{
		{"f", 1, 1, 1, 5, []string{"l1"}},
		{"f", 2, 3, 3, 5, []string{"l2", "l3"}},
		{"f", 4, 99, 5, 5, []string{"l4", "l5"}},
		{"f", 5, 5, 5, 5, []string{"l5"}},
		{"f", 1, 5, 5, 5, []string{"l1", "l2", "l3", "l4", "l5"}},
		{"noeol", 2, 2, 2, 2, []string{"b"}},
		{"noeol", 1, 1 << 40, 2, 2, []string{"a", "b"}},
	}
	for _, c := range ok {
		lr, err := workspace.Lines(bg, s, "default", c.id, c.start, c.end)
		if err != nil {
			t.Errorf("Lines(%s, %d, %d): %v", c.id, c.start, c.end, err)
			continue
		}
		if lr.ID != c.id || lr.Start != c.start || lr.End != c.wantEnd || lr.Total != c.wantTotl || !slices.Equal(lr.Lines, c.want) {
			t.Errorf("Lines(%s, %d, %d) = %+v, want end %d total %d lines %q", c.id, c.start, c.end, lr, c.wantEnd, c.wantTotl, c.want)
		}
	}
	bad := []struct {
		id         string
		start, end int
	}{
		{"f", 0, 1}, {"f", -1, 3}, {"f", 3, 2}, {"f", 6, 6}, {"f", 6, 10}, {"noeol", 3, 3}, {"empty", 1, 1},
	}
	for _, c := range bad {
		_, err := workspace.Lines(bg, s, "default", c.id, c.start, c.end)
		if !errors.Is(err, workspace.ErrInvalidRange) {
			t.Errorf("Lines(%s, %d, %d): got %v, want ErrInvalidRange", c.id, c.start, c.end, err)
		}
	}
}

// grepLines renders a result like grep: "--" between groups only when
// context lines were asked for.
func grepLines(res *workspace.GrepResult, context int) string {
	var b strings.Builder
	for _, h := range res.Hits {
		prev := 0
		for _, l := range h.Lines {
			if context > 0 && prev > 0 && l.Number > prev+1 {
				b.WriteString("--|")
			}
			sep := "-"
			if l.Match {
				sep = ":"
			}
			fmt.Fprintf(&b, "%d%s%s|", l.Number, sep, l.Text)
			prev = l.Number
		}
	}
	return b.String()
}

func ruleGrep(t *testing.T, s workspace.Store, _ string) {
	text := "alpha\nbeta ERROR one\ngamma\ndelta\nepsilon\nerror two\r\nzeta\neta\ntheta\niota\nkappa\nlambda error three\n"
	mustPut(t, s, "default", art("log", text, nil, t0))
	mustPut(t, s, "default", art("temp", "temperature: 300 \u212Aelvin\nLONG ſ TEXT\n", nil, t0))
	var many strings.Builder
	for i := 1; i <= 150; i++ {
		fmt.Fprintf(&many, "match %d\nskip %d\n", i, i)
	}
	mustPut(t, s, "default", art("many", many.String(), nil, t0))
	cases := []struct {
		q              workspace.GrepQuery
		want           string
		matches, total int
	}{
		{workspace.GrepQuery{ID: "log", Pattern: "error"}, "6:error two|12:lambda error three|", 2, 2},
		{workspace.GrepQuery{ID: "log", Pattern: "error", IgnoreCase: true}, "2:beta ERROR one|6:error two|12:lambda error three|", 3, 3},
		{workspace.GrepQuery{ID: "log", Pattern: "(?i)error", Context: 1},
			"1-alpha|2:beta ERROR one|3-gamma|--|5-epsilon|6:error two|7-zeta|--|11-kappa|12:lambda error three|", 3, 3},
		{workspace.GrepQuery{ID: "log", Pattern: "(?i)error", Context: 2},
			"1-alpha|2:beta ERROR one|3-gamma|4-delta|5-epsilon|6:error two|7-zeta|8-eta|--|10-iota|11-kappa|12:lambda error three|", 3, 3},
		{workspace.GrepQuery{ID: "log", Pattern: "(?i)error", MaxResults: 1, Context: 5},
			"1-alpha|2:beta ERROR one|3-gamma|4-delta|5-epsilon|", 1, 3},
		{workspace.GrepQuery{ID: "log", Pattern: `^e`}, "5:epsilon|6:error two|8:eta|", 3, 3},
		{workspace.GrepQuery{ID: "log", Pattern: `two$`}, "6:error two|", 1, 1},
		{workspace.GrepQuery{ID: "log", Pattern: `\beta\b`}, "8:eta|", 1, 1},
		{workspace.GrepQuery{ID: "log", Pattern: `nothing here`}, "", 0, 0},
		{workspace.GrepQuery{ID: "temp", Pattern: "kelvin", IgnoreCase: true}, "1:temperature: 300 \u212Aelvin|", 1, 1},
		{workspace.GrepQuery{ID: "temp", Pattern: "long s text", IgnoreCase: true}, "2:LONG ſ TEXT|", 1, 1},
		{workspace.GrepQuery{ID: "many", Pattern: "^match"}, "", 100, 150},
		{workspace.GrepQuery{ID: "many", Pattern: "^match", MaxResults: -1}, "", 150, 150},
		{workspace.GrepQuery{ID: "many", Pattern: "^match 1[0-9]*$", MaxResults: 2}, "1:match 1|19:match 10|", 2, 62},
	}
	for _, c := range cases {
		res, err := workspace.Grep(bg, s, "default", c.q)
		if err != nil {
			t.Errorf("Grep(%+v): %v", c.q, err)
			continue
		}
		got := grepLines(res, c.q.Context)
		if res.Matches != c.matches || res.Total != c.total || (c.want != "" || c.matches == 0) && got != c.want {
			t.Errorf("Grep(%+v):\n got %d/%d %s\nwant %d/%d %s", c.q, res.Matches, res.Total, got, c.matches, c.total, c.want)
		}
		if res.Searched != 1 {
			t.Errorf("Grep(%+v): searched %d", c.q, res.Searched)
		}
		if res.Limited() != (c.total > c.matches) {
			t.Errorf("Grep(%+v): Limited() = %v", c.q, res.Limited())
		}
	}
	for _, p := range []string{"(", "a**", `\p{Nope}`, "(?<name"} {
		_, err := workspace.Grep(bg, s, "default", workspace.GrepQuery{ID: "log", Pattern: p})
		wantErr(t, err, workspace.ErrInvalidPattern, "grep")
		_, err = workspace.Grep(bg, s, "default", workspace.GrepQuery{Pattern: p})
		wantErr(t, err, workspace.ErrInvalidPattern, "grep")
	}
}

func ruleGrepFilter(t *testing.T, s workspace.Store, _ string) {
	s1 := workspace.Metadata{"context_type": "tool_result", "session_id": "s1"}
	s2 := workspace.Metadata{"context_type": "tool_result", "session_id": "s2"}
	put := func(id, content string, md workspace.Metadata, at int) {
		mustPut(t, s, "default", art(id, content, md, t0.Add(time.Duration(at)*time.Second)))
	}
	put("c", "first needle here\nnothing\n", s1, 1)
	put("a", "no match\nNEEDLE upper\n", s1, 2)
	put("b", "temperature 300 \u212Aelvin\n", s1, 2)
	put("d", "needle in another session\n", s2, 0)
	put("e", "needle in a note\n", workspace.Metadata{"context_type": "note", "session_id": "s1"}, 3)
	put("f", "\xffnot utf-8 needle\n", s1, 4)
	f := workspace.Filter{Metadata: workspace.Metadata{"context_type": "tool_result", "session_id": "s1"}}
	cases := []struct {
		pattern string
		fold    bool
		want    []string
		total   int
	}{
		{"needle", false, []string{"c", "f"}, 2},
		{"needle", true, []string{"c", "a", "f"}, 3},
		{"NEEDLE", false, []string{"a"}, 1},
		{"needle|kelvin", true, []string{"c", "a", "b", "f"}, 4},
		{"KELVIN", true, []string{"b"}, 1},
		{"(?i)temperature [0-9]+ kelvin", false, []string{"b"}, 1},
		{"ne+dle", false, []string{"c", "f"}, 2},
		{"absent literal", false, nil, 0},
	}
	for _, c := range cases {
		res, err := workspace.Grep(bg, s, "default", workspace.GrepQuery{Filter: f, Pattern: c.pattern, IgnoreCase: c.fold})
		if err != nil {
			t.Errorf("Grep(%q): %v", c.pattern, err)
			continue
		}
		var got []string
		for _, h := range res.Hits {
			got = append(got, h.ID)
		}
		if !slices.Equal(got, c.want) || res.Total != c.total {
			t.Errorf("Grep(%q, ignore case %v) over session s1: hits %q total %d, want %q total %d", c.pattern, c.fold, got, res.Total, c.want, c.total)
		}
		if res.Searched != 4 {
			t.Errorf("Grep(%q): searched %d artifacts, want the 4 that match the filter", c.pattern, res.Searched)
		}
	}
	res, err := workspace.Grep(bg, s, "default", workspace.GrepQuery{Filter: f, Pattern: "needle", MaxResults: 1})
	if err != nil || res.Matches != 1 || res.Total != 2 || len(res.Hits) != 1 || res.Hits[0].ID != "c" {
		t.Errorf("Grep over a filter with MaxResults 1: %+v %v", res, err)
	}
	res, err = workspace.Grep(bg, s, "default", workspace.GrepQuery{Pattern: "needle"})
	if err != nil || res.Total != 4 || res.Searched != 6 {
		t.Errorf("Grep over a namespace: %+v %v", res, err)
	}
}

func ruleQuery(t *testing.T, s workspace.Store, _ string) {
	put := func(id string, at int, md workspace.Metadata) {
		mustPut(t, s, "default", art(id, "content "+id, md, t0.Add(time.Duration(at)*time.Millisecond)))
	}
	put("z-first", 0, workspace.Metadata{"context_type": "tool_result", "task_id": "t1", "session_id": "s1", "biz_id": "1"})
	put("b-tie", 5, workspace.Metadata{"context_type": "tool_result", "task_id": "t1", "session_id": "s2", "biz_id": "2"})
	put("a-tie", 5, workspace.Metadata{"context_type": "tool_result", "task_id": "t2", "session_id": "s1", "biz_id": "3"})
	put("m-note", 3, workspace.Metadata{"context_type": "note", "session_id": "s1"})
	put("last", 9, workspace.Metadata{"context_type": "tool_result", "session_id": "s1", "biz_id": "4", "task_id": ""})
	cases := []struct {
		f    workspace.Filter
		want []string
	}{
		{workspace.Filter{}, []string{"z-first", "m-note", "a-tie", "b-tie", "last"}},
		{workspace.Filter{Metadata: workspace.Metadata{}}, []string{"z-first", "m-note", "a-tie", "b-tie", "last"}},
		{workspace.Filter{Metadata: workspace.Metadata{"context_type": "tool_result"}}, []string{"z-first", "a-tie", "b-tie", "last"}},
		{workspace.Filter{Metadata: workspace.Metadata{"context_type": "tool_result", "session_id": "s1"}}, []string{"z-first", "a-tie", "last"}},
		{workspace.Filter{Metadata: workspace.Metadata{"task_id": "t1"}}, []string{"z-first", "b-tie"}},
		{workspace.Filter{Metadata: workspace.Metadata{"task_id": ""}}, []string{"m-note", "last"}},
		{workspace.Filter{Metadata: workspace.Metadata{"biz_id": "3"}}, []string{"a-tie"}},
		{workspace.Filter{Metadata: workspace.Metadata{"biz_id": "nope"}}, nil},
		{workspace.Filter{Metadata: workspace.Metadata{"unknown_key": "x"}}, nil},
		{workspace.Filter{Metadata: workspace.Metadata{"unknown_key": ""}}, []string{"z-first", "m-note", "a-tie", "b-tie", "last"}},
		{workspace.Filter{Limit: 2}, []string{"z-first", "m-note"}},
		{workspace.Filter{Offset: 3}, []string{"b-tie", "last"}},
		{workspace.Filter{Offset: 1, Limit: 2}, []string{"m-note", "a-tie"}},
		{workspace.Filter{Offset: 10}, nil},
		{workspace.Filter{Metadata: workspace.Metadata{"session_id": "s1"}, Offset: 1, Limit: 1}, []string{"m-note"}},
	}
	for _, c := range cases {
		list := mustQuery(t, s, "default", c.f)
		if got := ids(list); !slices.Equal(got, c.want) {
			t.Errorf("Query(%+v) = %q, want %q", c.f, got, c.want)
		}
	}
	list := mustQuery(t, s, "default", workspace.Filter{Metadata: workspace.Metadata{"biz_id": "3"}})
	if len(list) == 1 {
		want := driver.Measure(art("a-tie", "content a-tie", nil, t0)).Info
		if list[0].Chars != want.Chars || list[0].SHA256 != want.SHA256 || !list[0].Created.Equal(t0.Add(5*time.Millisecond)) || list[0].Metadata["task_id"] != "t2" {
			t.Errorf("Query info = %+v", list[0])
		}
	}
}

func ruleDelete(t *testing.T, s workspace.Store, _ string) {
	mustPut(t, s, "default", art("gone", "x\n", workspace.Metadata{"k": "v"}, t0))
	mustPut(t, s, "default", art("stays", "y\n", workspace.Metadata{"k": "v"}, t0))
	if err := s.Delete(bg, "default", "gone"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	_, err := s.Get(bg, "default", "gone")
	wantErr(t, err, workspace.ErrNotFound, "get")
	if got := ids(mustQuery(t, s, "default", workspace.Filter{Metadata: workspace.Metadata{"k": "v"}})); !slices.Equal(got, []string{"stays"}) {
		t.Errorf("Query after Delete = %q", got)
	}
	if res, err := workspace.Grep(bg, s, "default", workspace.GrepQuery{Pattern: "x"}); err != nil || res.Total != 0 {
		t.Errorf("Grep finds deleted content: %+v %v", res, err)
	}
	wantErr(t, s.Delete(bg, "default", "gone"), workspace.ErrNotFound, "delete")
	mustPut(t, s, "default", art("gone", "back\n", nil, t0))
	if got := mustGet(t, s, "default", "gone"); got.Content != "back\n" || len(got.Metadata) != 0 {
		t.Errorf("Put after Delete: %+v", got)
	}
}

func ruleNoAliasing(t *testing.T, s workspace.Store, _ string) {
	md := workspace.Metadata{"k": "v"}
	info := mustPut(t, s, "default", art("x", "x", md, t0))
	md["k"] = "changed"
	md["new"] = "1"
	info.Metadata["k"] = "changed too"
	got := mustGet(t, s, "default", "x")
	if got.Metadata["k"] != "v" || len(got.Metadata) != 1 {
		t.Fatalf("stored metadata follows the caller's map: %v", got.Metadata)
	}
	got.Metadata["k"] = "changed by reader"
	list := mustQuery(t, s, "default", workspace.Filter{})
	list[0].Metadata["k"] = "changed by lister"
	if info, err := s.Stat(bg, "default", "x"); err != nil {
		t.Fatalf("Stat: %v", err)
	} else {
		info.Metadata["k"] = "changed by stat"
	}
	if got := mustGet(t, s, "default", "x"); got.Metadata["k"] != "v" {
		t.Errorf("stored metadata follows a returned map: %v", got.Metadata)
	}
}

func ruleCancelled(t *testing.T, s workspace.Store, _ string) {
	mustPut(t, s, "default", art("kept", "x\n", nil, t0))
	ctx, cancel := context.WithCancel(bg)
	cancel()
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v", op, err)
		}
	}
	_, err := s.Put(ctx, "default", art("new", "y", nil, t0))
	check("Put", err)
	_, err = s.Put(ctx, "default", art("kept", "overwritten", nil, t0))
	check("Put over", err)
	_, err = s.Create(ctx, "default", art("created", "y", nil, t0))
	check("Create", err)
	_, err = s.Create(ctx, "default", art("kept", "y", nil, t0))
	check("Create over", err)
	_, err = s.Get(ctx, "default", "kept")
	check("Get", err)
	_, err = s.Stat(ctx, "default", "kept")
	check("Stat", err)
	_, err = workspace.Lines(ctx, s, "default", "kept", 1, 1)
	check("Lines", err)
	_, err = workspace.Grep(ctx, s, "default", workspace.GrepQuery{Pattern: "x"})
	check("Grep", err)
	_, err = workspace.Grep(ctx, s, "default", workspace.GrepQuery{ID: "kept", Pattern: "x"})
	check("Grep one", err)
	_, err = s.Query(ctx, "default", workspace.Filter{})
	check("Query", err)
	check("Delete", s.Delete(ctx, "default", "kept"))
	dctx, dcancel := context.WithDeadline(bg, time.Now().Add(-time.Second))
	defer dcancel()
	_, err = s.Get(dctx, "default", "kept")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Get with an expired deadline: %v", err)
	}
	if got := ids(mustQuery(t, s, "default", workspace.Filter{})); !slices.Equal(got, []string{"kept"}) {
		t.Errorf("cancelled calls changed the store: %q", got)
	}
	if got := mustGet(t, s, "default", "kept"); got.Content != "x\n" {
		t.Errorf("cancelled Put overwrote: %q", got.Content)
	}
}

// versionContent is the content written for version v of a shared id: its
// size varies, so a torn read shows.
func versionContent(id string, v int) string {
	return strings.Repeat(fmt.Sprintf("%s version %d\n", id, v), 1+v%7*40)
}

func ruleConcurrent(t *testing.T, s workspace.Store, _ string) {
	const writers, rounds, readers, readRounds = 6, 25, 4, 300
	shared := []string{"s0", "s1", "s2"}
	var wg sync.WaitGroup
	errc := make(chan error, 1000)
	report := func(err error) {
		select {
		case errc <- err:
		default:
		}
	}
	done := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			for r := range rounds {
				id := shared[(w+r)%len(shared)]
				v := w*rounds + r
				if _, err := s.Put(bg, "default", art(id, versionContent(id, v), workspace.Metadata{"v": strconv.Itoa(v)}, t0)); err != nil {
					report(fmt.Errorf("Put %s: %w", id, err))
				}
				uid := fmt.Sprintf("u-%d-%d", w, r)
				if _, err := s.Put(bg, "default", art(uid, uid, workspace.Metadata{"w": strconv.Itoa(w)}, t0)); err != nil {
					report(fmt.Errorf("Put %s: %w", uid, err))
				}
			}
		})
	}
	var rg sync.WaitGroup
	for r := range readers {
		rg.Go(func() {
			for i := range readRounds {
				if i > readRounds/2 {
					select {
					case <-done:
						return
					default:
					}
				}
				concurrentRead(s, shared[(r+i)%len(shared)], i, report)
			}
		})
	}
	wg.Wait()
	close(done)
	rg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	list := mustQuery(t, s, "default", workspace.Filter{})
	if len(list) != len(shared)+writers*rounds {
		t.Errorf("after concurrent writes: %d artifacts, want %d", len(list), len(shared)+writers*rounds)
	}
	for _, id := range shared {
		a := mustGet(t, s, "default", id)
		v, _ := strconv.Atoi(a.Metadata["v"])
		if a.Content != versionContent(id, v) {
			t.Errorf("%s: final content is not version %d", id, v)
		}
	}
}

// concurrentRead is round i of a reader of ruleConcurrent: it reads the
// shared id, which must be absent or one whole version (its content and
// sizes those of the version its metadata names), and every 30th round
// runs a Query and a Grep; report gets what went wrong.
func concurrentRead(s workspace.Store, id string, i int, report func(error)) {
	a, err := s.Get(bg, "default", id)
	if errors.Is(err, workspace.ErrNotFound) {
		return
	}
	if err != nil {
		report(fmt.Errorf("Get %s: %w", id, err))
		return
	}
	v, _ := strconv.Atoi(a.Metadata["v"])
	if a.Content != versionContent(id, v) {
		report(fmt.Errorf("Get %s: content of another version than metadata v=%d (%d bytes)", id, v, len(a.Content)))
	} else if m := driver.Measure(*a); m.Chars != a.Chars || m.SHA256 != a.SHA256 {
		report(fmt.Errorf("Get %s: sizes of another version", id))
	}
	if i%30 == 0 {
		if _, err := s.Query(bg, "default", workspace.Filter{Metadata: workspace.Metadata{"w": "1"}}); err != nil {
			report(fmt.Errorf("Query: %w", err))
		}
		if _, err := workspace.Grep(bg, s, "default", workspace.GrepQuery{Pattern: "version 1[0-9]$"}); err != nil {
			report(fmt.Errorf("Grep: %w", err))
		}
	}
}

func ruleClosed(t *testing.T, s workspace.Store, _ string) {
	mustPut(t, s, "default", art("x", "x", nil, t0))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, err := s.Get(bg, "default", "x")
	wantErr(t, err, workspace.ErrClosed, "get")
	_, err = s.Put(bg, "default", art("y", "y", nil, t0))
	wantErr(t, err, workspace.ErrClosed, "put")
	_, err = s.Create(bg, "default", art("y", "y", nil, t0))
	wantErr(t, err, workspace.ErrClosed, "create")
	_, err = s.Query(bg, "default", workspace.Filter{})
	wantErr(t, err, workspace.ErrClosed, "query")
	_, err = workspace.Grep(bg, s, "default", workspace.GrepQuery{Pattern: "x"})
	wantErr(t, err, workspace.ErrClosed, "grep")
	_, err = workspace.Lines(bg, s, "default", "x", 1, 1)
	wantErr(t, err, workspace.ErrClosed, "lines")
	_, err = s.Stat(bg, "default", "x")
	wantErr(t, err, workspace.ErrClosed, "stat")
	wantErr(t, s.Delete(bg, "default", "x"), workspace.ErrClosed, "delete")
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// ruleSessionScopedRead: two sessions whose agents number their calls
// alike (call_0) store their results as tool_result_call_0 and
// tool_result_call_0-2; a read by the plain id within a session reads that
// session's own, whatever the backend's Query finds first, and a read that
// names no session is told the id is ambiguous, with the candidates.
func ruleSessionScopedRead(t *testing.T, s workspace.Store, _ string) {
	contents := map[string]string{"s1": "s1 output\nline two\n", "s2": "s2 output\nline two\n"}
	for _, sess := range []string{"s1", "s2"} {
		ws := workspace.New(s, workspace.Options{Namespace: "ns", SessionID: sess, Now: func() time.Time { return t0 }})
		if _, _, err := ws.OffloadToolResult(bg, workspace.ToolCall{ID: "call_0", Name: "bash"}, agentctx.Text(contents[sess])); err != nil {
			t.Fatalf("offload of session %s: %v", sess, err)
		}
	}
	if _, err := s.Stat(bg, "ns", "tool_result_call_0-2"); err != nil {
		t.Fatalf("the second session's result is not at tool_result_call_0-2: %v", err)
	}
	for _, c := range []struct {
		session, id string
		want        string // content; "" means ErrAmbiguousID
	}{
		{"s1", "tool_result_call_0", contents["s1"]},
		{"s2", "tool_result_call_0", contents["s2"]},
		{"s2", "tool_result_call_0-2", contents["s2"]},
		{"s1", "tool_result_call_0-2", contents["s2"]}, // a suffixed id names one artifact
		{"s3", "tool_result_call_0", contents["s1"]},   // no result of s3: the id as it is
		{"", "tool_result_call_0-2", contents["s2"]},
		{"", "tool_result_call_0", ""},
	} {
		ws := workspace.New(s, workspace.Options{Namespace: "ns", SessionID: c.session, MaxChars: workspace.NoLimit})
		id, err := ws.Resolve(bg, c.id)
		if c.want == "" {
			var amb *workspace.AmbiguousIDError
			if !errors.As(err, &amb) || !errors.Is(err, workspace.ErrAmbiguousID) ||
				fmt.Sprint(amb.Candidates) != "[{tool_result_call_0 s1} {tool_result_call_0-2 s2}]" {
				t.Errorf("session %q: Resolve(%s) = %q, %v; want an *AmbiguousIDError listing both sessions' results", c.session, c.id, id, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("session %q: Resolve(%s): %v", c.session, c.id, err)
			continue
		}
		for name, read := range map[string]func() (string, error){
			"get":   func() (string, error) { return ws.GetKnowledgeByID(bg, c.id, 0) },
			"lines": func() (string, error) { return ws.GetKnowledgeByLines(bg, c.id, 1, 1) },
			"grep":  func() (string, error) { return ws.GrepKnowledge(bg, c.id, "output", workspace.GrepOptions{}) },
		} {
			first, _, _ := strings.Cut(c.want, "\n")
			want := map[string]string{"get": c.want, "lines": "Lines 1-1 of 2\n" + first, "grep": "1:" + first}[name]
			if got, err := read(); err != nil || got != want {
				t.Errorf("session %q: %s %s = %q, %v; want %q", c.session, name, c.id, got, err, want)
			}
		}
	}
}
