package proxy

import (
	"testing"

	"github.com/agentctx/agentctx"
)

// Tests that each kill a mutation of the thinking check no other test
// caught (issue 24 item 8).

func mustMessage(t *testing.T, js string) agentctx.Message {
	t.Helper()
	m, err := agentctx.DecodeMessage([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func encodings(t *testing.T, msgs []agentctx.Message) ([][]byte, []uint64) {
	t.Helper()
	enc, err := encodeAll(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return enc, hashesOf(enc, nil)
}

// thinkingMem is a thinking.Memory of fixed answers.
type thinkingMem struct{ knownAt, sentAt map[string]prefixHash }

func (m thinkingMem) Known(k string) (prefixHash, bool) { h, ok := m.knownAt[k]; return h, ok }
func (m thinkingMem) Sent(k string) (prefixHash, bool)  { h, ok := m.sentAt[k]; return h, ok }

// TestDeletionOnlyEditMovesFirstChanged: an edit that only deletes a
// message shifts every later one; those keep their bytes but not their
// index, so they count as changed from the deletion on, and a thinking
// block after it, whose prefix is no longer the one it was produced
// after, is removed (sent as it is, the API answers 400).
func TestDeletionOnlyEditMovesFirstChanged(t *testing.T) {
	in := []agentctx.Message{
		mustMessage(t, `{"role":"user","content":"start"}`),
		mustMessage(t, `{"role":"assistant","content":[{"type":"text","text":"a long answer the engine drops"}]}`),
		mustMessage(t, `{"role":"user","content":"go on"}`),
		mustMessage(t, `{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"sig-1"},{"type":"text","text":"done"}]}`),
		mustMessage(t, `{"role":"user","content":"thanks"}`),
	}
	inEnc, inHash := encodings(t, in)
	out := []agentctx.Message{in[0], in[2], in[3], in[4]} // message 1 deleted, nothing else changed
	a, err := align(in, inEnc, inHash, nil, out, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.firstChanged != 1 {
		t.Errorf("firstChanged = %d, want 1 (the messages after the deletion moved); match %v", a.firstChanged, a.match)
	}
	verdict, err := fixThinking(inEnc, inHash, a, thinkingMem{}, true, &stableHashes{})
	if err != nil {
		t.Fatal(err)
	}
	if verdict != thinkingOK || hasThinking(&a.out[2]) {
		t.Errorf("verdict %v, thinking kept %v: want the block removed from the shifted message", verdict, hasThinking(&a.out[2]))
	}
	if got := string(a.outEnc[2]); got != `{"role":"assistant","content":[{"type":"text","text":"done"}]}` {
		t.Errorf("the rest of the message: %s", got)
	}
}

// TestResentInvalidThinkingWithThinkingOff: a block sent last time after
// the very prefix it has now, but produced after another one, is kept
// (and dropped by the API) only while extended thinking is on: drop_block
// is a member of the thinking object, which a request without thinking
// does not have. With thinking off the block is removed.
func TestResentInvalidThinkingWithThinkingOff(t *testing.T) {
	in := []agentctx.Message{
		mustMessage(t, `{"role":"user","content":"start, long"}`),
		mustMessage(t, `{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"sig-2"},{"type":"text","text":"ok"}]}`),
		mustMessage(t, `{"role":"user","content":"next"}`),
	}
	inEnc, inHash := encodings(t, in)
	out := []agentctx.Message{mustMessage(t, `{"role":"user","content":"start"}`), in[1], in[2]}
	a, err := align(in, inEnc, inHash, nil, out, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var digests stableHashes
	var now prefixHash
	now = now.Next(digests.of(a.hash(0), a.outEnc[0])) // the prefix of message 1 as sent now
	mem := thinkingMem{
		knownAt: map[string]prefixHash{"sig-2": now + 1}, // produced after another prefix: invalid
		sentAt:  map[string]prefixHash{"sig-2": now},     // sent after this one last time
	}
	for _, on := range []bool{true, false} {
		b, _ := align(in, inEnc, inHash, nil, out, nil, nil)
		verdict, err := fixThinking(inEnc, inHash, b, mem, on, &digests)
		if err != nil {
			t.Fatal(err)
		}
		kept := hasThinking(&b.out[1])
		switch {
		case on && (verdict != thinkingDrop || !kept):
			t.Errorf("thinking on: verdict %v, kept %v; want the resent block kept and drop_block", verdict, kept)
		case !on && (verdict != thinkingOK || kept):
			t.Errorf("thinking off: verdict %v, kept %v; want the block removed", verdict, kept)
		}
	}
}
