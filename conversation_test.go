package agentctx_test

import (
	"bytes"
	"testing"

	"github.com/agentctx/agentctx"
)

// TestFacts checks that facts follow content, not memory: a copy, a clone
// and the same bytes decoded again have the facts of the message; a
// changed message has others.
func TestFacts(t *testing.T) {
	raw := []byte(`{"role":"user","content":[{"type":"text","text":"hi"}],"extra":true}`)
	m, err := agentctx.DecodeMessage(raw)
	if err != nil {
		t.Fatal(err)
	}
	want, err := agentctx.FactsOf(m)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want.Encoding, raw) || want.Hash.IsZero() {
		t.Fatalf("facts %s %v", want.Encoding, want.Hash)
	}
	other, _ := agentctx.DecodeMessage(bytes.Clone(raw))
	cp := m
	for _, tc := range []struct {
		name string
		o    agentctx.Message
		same bool
	}{
		{"copy", cp, true},
		{"decoded apart", other, true},
		{"clone", m.Clone(), true},
		{"new content", m.WithContent(agentctx.Text("hi")), false},
		{"new block", m.WithBlock(0, agentctx.TextBlock("ho")), false},
		{"without a field", m.WithoutFields("extra"), false},
	} {
		h, _, err := agentctx.HashOf(tc.o, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := h == want.Hash; got != tc.same {
			t.Errorf("%s: same hash = %v, want %v", tc.name, got, tc.same)
		}
	}
	conv, err := agentctx.NewConversation([]agentctx.Message{m, other, m.WithoutFields("extra")})
	if err != nil {
		t.Fatal(err)
	}
	if conv.Fact(0).Hash != want.Hash || conv.Fact(1).Hash != want.Hash || conv.Fact(2).Hash == want.Hash || conv.Fact(0).Encoding != nil {
		t.Errorf("conversation facts %+v", conv.Facts)
	}
	if f := (agentctx.Conversation{}).Fact(3); f.Encoding != nil || !f.Hash.IsZero() || f.Tokens != 0 {
		t.Error("no facts known must give the zero Facts")
	}
}
