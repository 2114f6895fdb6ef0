package thinking

import (
	"hash/fnv"
	"slices"
	"testing"

	"github.com/agentctx/agentctx"
)

func msg(t *testing.T, js string) agentctx.Message {
	t.Helper()
	m, err := agentctx.DecodeMessage([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func hashOf(m *agentctx.Message) uint64 {
	enc, _ := m.AppendJSON(nil)
	h := fnv.New64a()
	h.Write(enc)
	return h.Sum64()
}

type mem map[string]Prefix

func (m mem) Known(k string) (Prefix, bool) { p, ok := m[k]; return p, ok }
func (m mem) Sent(string) (Prefix, bool)    { return 0, false }

// TestFix: the thinking of an ended turn after an edit is removed, valid
// thinking is kept, and the open turn's invalid thinking is kept with
// DropBlock while thinking is on.
func TestFix(t *testing.T) {
	const (
		user    = `{"role":"user","content":"task"}`
		edited  = `{"role":"user","content":"task (edited)"}`
		ended   = `{"role":"assistant","content":[{"type":"thinking","thinking":"a","signature":"s1"},{"type":"text","text":"ok"}]}`
		next    = `{"role":"user","content":"more"}`
		open    = `{"role":"assistant","content":[{"type":"thinking","thinking":"b","signature":"s2"},{"type":"tool_use","id":"t1","name":"bash","input":{}}]}`
		results = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"out"}]}`
	)
	cases := []struct {
		name       string
		msgs       []string
		first      int
		known      func(h []uint64) mem
		thinkingOn bool
		want       Verdict
		kept       []bool // thinking kept, by message
	}{
		{"unchanged prefix keeps thinking", []string{user, ended, next}, 1,
			func(h []uint64) mem { return mem{"s1": Prefix(0).Next(h[0])} }, true, Valid, []bool{false, true, false}},
		{"edit before an ended turn removes its thinking", []string{edited, ended, next}, 0,
			func(h []uint64) mem { return mem{"s1": Prefix(0).Next(hashOf(ptr(msg(t, user))))} }, true, Valid, []bool{false, false, false}},
		{"unknown block after an edit is removed", []string{edited, ended, next}, 0,
			func([]uint64) mem { return mem{} }, true, Valid, []bool{false, false, false}},
		{"open turn after an edit keeps its thinking, drop_block", []string{edited, open, results}, 0,
			func([]uint64) mem { return mem{"s2": 42} }, true, DropBlock, []bool{false, true, false}},
		{"open turn with thinking off loses it", []string{edited, open, results}, 0,
			func([]uint64) mem { return mem{"s2": 42} }, false, Valid, []bool{false, false, false}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msgs := make([]agentctx.Message, len(c.msgs))
			hs := make([]uint64, len(c.msgs))
			for i, js := range c.msgs {
				msgs[i] = msg(t, js)
				hs[i] = hashOf(&msgs[i])
			}
			// Fix writes nothing into the list it is given (the proxy's
			// may be the decode cache's): the messages it replaces go to
			// Replace, which keeps them in a copy.
			out := slices.Clone(msgs)
			v, err := Fix(List{
				Messages: msgs, FirstChanged: c.first,
				Hash:    func(j int) uint64 { return hashOf(&out[j]) },
				Replace: func(j int, m agentctx.Message) error { out[j] = m; return nil },
			}, c.known(hs), c.thinkingOn)
			if err != nil {
				t.Fatal(err)
			}
			if v != c.want {
				t.Errorf("verdict %v, want %v", v, c.want)
			}
			for i := range out {
				if Has(&out[i]) != c.kept[i] {
					t.Errorf("message %d: thinking kept %v, want %v", i, Has(&out[i]), c.kept[i])
				}
				if hashOf(&msgs[i]) != hs[i] {
					t.Errorf("message %d of the list given was written into", i)
				}
			}
		})
	}
}

func ptr(m agentctx.Message) *agentctx.Message { return &m }
