package proxy

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/workspace"
)

// TestAlignSources: what an Engine says of its messages (Prepared.Sources
// and Facts) only spares encoding them: the alignment is the one made by
// comparing encodings, and sources that do not fit the list are ignored.
func TestAlignSources(t *testing.T) {
	in, err := agentctx.UnmarshalMessages([]byte(history(6, false)))
	if err != nil {
		t.Fatal(err)
	}
	in = append(in, in[1], in[2]) // a repeated exchange: equal encodings at two places
	inEnc, err := encodeAll(in)
	if err != nil {
		t.Fatal(err)
	}
	inHash := hashesOf(inEnc, nil)
	summary := agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("summary"))
	pruned := in[4].WithContent(agentctx.Text("[pruned]"))
	for _, tc := range []struct {
		name    string
		out     []agentctx.Message
		sources []int
	}{
		{"unchanged", in, identitySources(len(in))},
		{"one changed", append(append(slices.Clone(in[:4]), pruned), in[5:]...), append(append(identitySources(4), -1), 5, 6, 7, 8, 9, 10, 11, 12, 13, 14)},
		{"summary", append([]agentctx.Message{in[0], summary}, in[7:]...), []int{0, -1, 7, 8, 9, 10, 11, 12, 13, 14}},
		{"the later of equal messages", []agentctx.Message{in[0], summary, in[13], in[14]}, []int{0, -1, 13, 14}},
		{"messages dropped", []agentctx.Message{in[0], in[3], in[9]}, []int{0, 3, 9}},
		{"sources of another list", []agentctx.Message{in[0], summary}, []int{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := align(in, slices.Clone(inEnc), inHash, nil, tc.out, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			facts := make([]agentctx.Facts, len(tc.out))
			for j, m := range tc.out {
				if len(tc.sources) == len(tc.out) && tc.sources[j] < 0 {
					facts[j], _ = agentctx.FactsOf(m)
				}
			}
			got, err := align(in, slices.Clone(inEnc), inHash, nil, tc.out, tc.sources, facts)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.match, want.match) || got.firstChanged != want.firstChanged || !slices.Equal(got.outHash, want.outHash) {
				t.Fatalf("match %v (first changed %d), by encodings %v (%d)", got.match, got.firstChanged, want.match, want.firstChanged)
			}
			for j := range got.outEnc {
				if !bytes.Equal(got.outEnc[j], want.outEnc[j]) {
					t.Fatalf("message %d encodes as %s, by encodings %s", j, got.outEnc[j], want.outEnc[j])
				}
			}
		})
	}
}

// withoutSources hides what an Engine says of its messages.
type withoutSources struct{ Engine }

func (e withoutSources) Prepare(ctx context.Context, req *Request) (*Prepared, error) {
	req2 := *req
	req2.Facts = nil
	p, err := e.Engine.Prepare(ctx, &req2)
	if p != nil {
		q := *p
		q.Sources, q.Facts = nil, nil
		p = &q
	}
	return p, err
}

// TestPipelineEngineSources: the pipeline engine's sources and facts
// change nothing the proxy sends: a session told them, and one not, send
// the same bodies upstream request after request (results stored, pruned,
// offloaded and paths added: every request is edited).
func TestPipelineEngineSources(t *testing.T) {
	dir := t.TempDir()
	run := func(name string, hide bool) [][]byte {
		e, err := NewPipelineEngine(PipelineOptions{Pipeline: pipeline.Options{WorkspaceDir: filepath.Join(dir, name), NoCompact: true, Workspace: workspace.Options{InlineLimit: 40}}})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		var engine Engine = e
		if hide {
			engine = withoutSources{e}
		}
		tr := &recordingTransport{}
		srv, err := New(Options{Engine: engine, Transport: tr})
		if err != nil {
			t.Fatal(err)
		}
		for n := 8; n <= 40; n += 4 {
			req := httptest.NewRequest(http.MethodPost, "/v1/messages", bytes.NewReader(anthropicBody(history(n, n%8 == 0))))
			req.Header.Set("X-Claude-Code-Session-Id", "s")
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, req)
			if w.Code != 200 {
				t.Fatalf("status %d", w.Code)
			}
		}
		if st := srv.Stats(); len(st) != 1 || st[0].Edited == 0 {
			t.Fatalf("nothing edited: %+v", st)
		}
		return tr.bodies
	}
	told, hidden := run("a1", false), run("a2", true) // names of one length: the paths added are as long
	if len(told) != len(hidden) {
		t.Fatalf("%d and %d requests", len(told), len(hidden))
	}
	for i := range told {
		if !bytes.Equal(told[i], bytes.ReplaceAll(hidden[i], []byte(filepath.Join(dir, "a2")), []byte(filepath.Join(dir, "a1")))) {
			t.Fatalf("request %d differs:\n%s\n%s", i, told[i], hidden[i])
		}
	}
}

// factsSeen records the facts the proxy hands the Engine and those it
// gets back.
type factsSeen struct {
	Engine
	given, back []agentctx.Facts
}

func (e *factsSeen) Prepare(ctx context.Context, req *Request) (*Prepared, error) {
	e.given = req.Facts
	p, err := e.Engine.Prepare(ctx, req)
	if p != nil {
		e.back = p.Facts
	}
	return p, err
}

// TestPipelineEngineFillsTheRequestsFacts: the Facts the proxy makes for
// a request are the Engine's to fill (Request.Facts): the pipeline engine
// hands them to its pipeline as its own (pipeline.CallOptions.OwnFacts)
// and gets them back filled in, not a copy of 48 bytes a message (4.8 MB
// for a request of 100,000 messages; issue 24, item 7).
func TestPipelineEngineFillsTheRequestsFacts(t *testing.T) {
	e, err := NewPipelineEngine(PipelineOptions{Pipeline: pipeline.Options{WorkspaceDir: filepath.Join(t.TempDir(), "ws"), NoCompact: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	seen := &factsSeen{Engine: e}
	srv, err := New(Options{Engine: seen, Transport: &recordingTransport{}})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/v1/messages", bytes.NewReader(anthropicBody(history(8, false))))
	req.Header.Set("X-Claude-Code-Session-Id", "s")
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	if w.Code != 200 {
		t.Fatalf("status %d", w.Code)
	}
	if len(seen.given) == 0 || len(seen.back) != len(seen.given) || &seen.back[0] != &seen.given[0] {
		t.Fatalf("the engine gave back other facts than the request's (%d given, %d back)", len(seen.given), len(seen.back))
	}
	for i, f := range seen.back {
		if f.Tokens <= 0 || f.Hash.IsZero() || f.Encoding == nil {
			t.Errorf("message %d: facts not filled in: %d tokens", i, f.Tokens)
		}
	}
}

// TestCompactionCutSources: the facts handed to the Engine for a history
// cut at a compaction block are the tail's, and the Engine's sources, which
// index the tail, come back indexing the whole list; the restored block's
// message and the prefix are not the request's as they stand.
func TestCompactionCutSources(t *testing.T) {
	msgs := make([]agentctx.Message, 5)
	all := make([]agentctx.Facts, 5)
	for i := range msgs {
		msgs[i] = agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(string(rune('a'+i))))
		all[i], _ = agentctx.FactsOf(msgs[i])
	}
	for _, restored := range []bool{false, true} {
		c := &compactionCut{at: 2, prefix: msgs[:2], tail: msgs[2:], restored: restored}
		tail := c.facts(all)
		if len(tail) != 3 || tail[1].Hash != all[3].Hash || tail[2].Hash != all[4].Hash || (tail[0].Hash == all[2].Hash) == restored {
			t.Fatalf("restored %v: tail facts %v", restored, tail)
		}
		if c.facts(all[:4]) != nil {
			t.Fatal("facts of another list kept")
		}
		first := 2
		if restored {
			first = -1
		}
		for _, tc := range []struct {
			p    Prepared
			want []int
		}{
			{Prepared{Unchanged: true}, []int{-1, -1, first, 3, 4}},
			{Prepared{Messages: msgs[2:], Sources: []int{0, -1, 2}}, []int{-1, -1, first, -1, 4}},
			{Prepared{Messages: msgs[3:], Sources: []int{1, 2}}, []int{-1, -1, 3, 4}},
			{Prepared{Messages: msgs[2:]}, nil},
			{Prepared{Messages: msgs[2:], Sources: []int{0}}, nil},
		} {
			if got := c.joinSources(&tc.p); !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Errorf("restored %v, %+v: sources %v, want %v", restored, tc.p.Sources, got, tc.want)
			}
		}
	}
}
