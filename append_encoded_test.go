package agentctx_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
)

// TestAppendJSONEncoded: given no encodings, or the messages' own, the
// document is written as AppendJSON writes it; an encoding given is
// copied in the message's place (the caller's word is taken).
func TestAppendJSONEncoded(t *testing.T) {
	for _, in := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"text","text":"yo"}],"x":1},{"role":"user","content":"go"}],"tools":[]}`,
		`[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"},{"role":"user","content":"go"}]`,
		"{\"role\":\"user\",\"content\":\"hi\"}\n{\"role\":\"assistant\",\"content\":\"yo\"}\n{\"role\":\"user\",\"content\":\"go\"}\n",
	} {
		doc, err := agentctx.ParseDocument(context.Background(), []byte(in))
		if err != nil {
			t.Fatal(err)
		}
		want, err := doc.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		own := func(k int) []byte {
			if k%2 == 1 {
				return nil
			}
			b, err := doc.Messages[k].AppendJSON(nil)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		for name, enc := range map[string]func(int) []byte{"nil": nil, "own": own} {
			got, err := doc.AppendJSONEncoded(nil, enc)
			if err != nil || string(got) != string(want) {
				t.Errorf("%s, %s: %s, %v; want %s", in[:12], name, got, err, want)
			}
		}
		marker := `{"role":"user","content":"given"}`
		got, err := doc.AppendJSONEncoded(nil, func(k int) []byte {
			if k == 2 {
				return []byte(marker)
			}
			return nil
		})
		if err != nil || !strings.Contains(string(got), marker) || strings.Contains(string(got), `"go"`) {
			t.Errorf("%s: the encoding given is not in its place: %s, %v", in[:12], got, err)
		}
	}
}
