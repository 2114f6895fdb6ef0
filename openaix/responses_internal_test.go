package openaix

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit/memtest"
	"github.com/agentctx/agentctx/internal/testkit/respbody"
)

// responsesBody is a Responses request (store false) of a task and n
// function calls with their outputs.
func responsesBody(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"gpt-5","store":false,"instructions":"be brief","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"fix it"}]}`)
	for i := range n {
		fmt.Fprintf(&b, `,{"type":"reasoning","id":"rs_%d","summary":[],"encrypted_content":"e%d"}`, i, i)
		fmt.Fprintf(&b, `,{"type":"function_call","id":"fc_%d","call_id":"c%d","name":"bash","arguments":"{\"command\":\"make %d\"}","status":"completed"}`, i, i, i)
		fmt.Fprintf(&b, `,{"type":"function_call_output","call_id":"c%d","output":"ok %d\n%s"}`, i, i, strings.Repeat("line\\n", i))
	}
	b.WriteString(`],"tools":[]}`)
	return []byte(b.String())
}

// TestResponsesItemCache: reading a growing conversation through the item
// cache gives the messages and the bodies to send that reading it without
// gives, and parses only the items the last request did not send.
func TestResponsesItemCache(t *testing.T) {
	c := newItemCache(0)
	ctx := context.Background()
	for n := 1; n <= 6; n++ {
		body := responsesBody(n)
		doc, enc, err := decodeResponsesCached(ctx, c, body)
		if err != nil {
			t.Fatal(err)
		}
		want, wantEnc, err := decodeResponsesCached(ctx, nil, body)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := agentctx.MarshalMessages(doc.Messages)
		exp, _ := agentctx.MarshalMessages(want.Messages)
		if string(got) != string(exp) {
			t.Fatalf("n=%d: cached messages %s, want %s", n, got, exp)
		}
		// The bodies to send for the messages kept, and with the last
		// tool result replaced.
		src := make([]int, len(doc.Messages))
		for j := range src {
			src[j] = j
		}
		last := len(doc.Messages) - 1
		for _, edit := range []bool{false, true} {
			out, wantOut := doc.Messages, want.Messages
			s := src
			if edit {
				out = append([]agentctx.Message(nil), out...)
				out[last] = out[last].WithContent(agentctx.Text("[cleared]"))
				wantOut = append([]agentctx.Message(nil), wantOut...)
				wantOut[last] = wantOut[last].WithContent(agentctx.Text("[cleared]"))
				s = append([]int(nil), src...)
				s[last] = -1
			}
			a, err1 := enc(out, s)
			b, err2 := wantEnc(wantOut, s)
			if err1 != nil || err2 != nil || string(a) != string(b) {
				t.Fatalf("n=%d edit=%v: cached body %s (%v), want %s (%v)", n, edit, a, err1, b, err2)
			}
			if !edit && string(a) != string(body) {
				t.Errorf("n=%d: a request kept whole is not sent as its bytes", n)
			}
		}
	}
	// Items parsed: 4 for the first request, 3 more for each after it.
	if d, want := c.Decoded.Load(), int64(4+3*5); d != want {
		t.Errorf("parsed %d items, want %d (only the new ones)", d, want)
	}
}

// TestItemCacheSizeIsHonest holds the item cache's estimate of what it
// holds (what Options.DecodeCacheBytes bounds) to the heap its entries
// really keep, within a third either way, for conversations of small
// calls and outputs (with their reasoning items) and of messages of many
// text parts.
func TestItemCacheSizeIsHonest(t *testing.T) {
	for name, items := range map[string]func(int) string{"calls": respbody.Calls, "parts": respbody.Parts} {
		c := newItemCache(0)
		if _, _, err := decodeResponsesCached(context.Background(), c, respbody.Body(2500, items)); err != nil {
			t.Fatal(err)
		}
		est := c.Bytes()
		held := memtest.HeldBy(func() { c = nil })
		memtest.CheckEstimate(t, "the item cache of "+name, est, held)
	}
}
