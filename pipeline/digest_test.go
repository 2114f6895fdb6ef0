package pipeline

import (
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/agentctx/agentctx"
)

// TestPrefixHashesFromEncodings holds the digest and marks computed from
// the encodings the facts give (the proxy's: the request's own bytes) to
// those computed by encoding each message: they are kept in the session
// state and compared across processes, so one byte of difference would
// drop every compaction. Messages with cache_control (at the top and
// nested) are hashed without it either way.
func TestPrefixHashesFromEncodings(t *testing.T) {
	var msgs []agentctx.Message
	for i := range 40 {
		raw := fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":"m%d <&> \u2028"}]}`, i)
		switch i % 4 {
		case 1:
			raw = fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","id":"t%d","name":"Bash","input":{"command":"ls","cache_control":1}}],"cache_control":{"type":"ephemeral"}}`, i)
		case 2:
			raw = fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":"ok","cache_control":{"type":"ephemeral"}}]}`, i-1)
		}
		m, err := agentctx.DecodeMessage([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	conv, err := agentctx.NewConversation(msgs)
	if err != nil {
		t.Fatal(err)
	}
	for _, from := range []int{0, 1, 17, 39, 40, 64} {
		wantD, wantMarks, ok := prefixHashes(msgs, nil, from)
		if !ok {
			t.Fatal("cannot hash")
		}
		gotD, gotMarks, ok := prefixHashes(msgs, conv.Facts, from)
		if !ok || gotD != wantD || fmt.Sprint(gotMarks) != fmt.Sprint(wantMarks) {
			t.Fatalf("from %d: the encodings give another digest or marks", from)
		}
		// Each mark is the digest of the prefix it marks, cut.
		for k, mark := range wantMarks {
			d, _ := digestOf(msgs[:max(from, 1)+k])
			if hex.EncodeToString(d[:markSize]) != mark {
				t.Fatalf("from %d: mark %d is not the digest of its prefix", from, k)
			}
		}
		p := &Pipeline{}
		d, marks, ok := p.prefixDigestMarks(msgs, conv.Facts, from)
		if !ok || d != wantD || fmt.Sprint(marks) != fmt.Sprint(wantMarks) {
			t.Fatalf("from %d: prefixDigestMarks differs", from)
		}
		// The memo answers the digest alone, not marks it did not keep.
		if d, marks, _ := p.prefixDigestMarks(msgs, conv.Facts, from); d != wantD || fmt.Sprint(marks) != fmt.Sprint(wantMarks) {
			t.Fatalf("from %d: the memo lost the marks", from)
		}
	}
	// A fact's encoding that is not the message's is what is hashed: the
	// facts are trusted, so the test above is the guard that they agree.
	wrong := append([]agentctx.Facts(nil), conv.Facts...)
	wrong[3].Encoding = []byte(`{"role":"user","content":"other"}`)
	if d1, _, _ := prefixHashes(msgs, wrong, 40); d1 == func() [32]byte { d, _ := digestOf(msgs); return d }() {
		t.Fatal("the encodings were not used")
	}
}
