package agentctx_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/lib/wire"
)

// TestRequestDocumentSplitIsParseDocument: a document built from a body
// split once (wire.SplitBody, as the proxy splits it) is the one
// ParseDocument returns; members that are not the body's split are
// refused.
func TestRequestDocumentSplitIsParseDocument(t *testing.T) {
	body := []byte(` {"model":"m","system":"sys","messages":[{"role":"user","content":"hi"},` +
		`{"role":"assistant","content":[{"type":"text","text":"yo"}]}],"tools":[{"name":"t"}],"messages2":[1]} `)
	want, err := agentctx.ParseDocument(context.Background(), body)
	if err != nil {
		t.Fatal(err)
	}
	b, err := wire.SplitBody(body, nil)
	if err != nil {
		t.Fatal(err)
	}
	list := b.Get("messages")
	msgs, err := agentctx.UnmarshalMessages(list)
	if err != nil {
		t.Fatal(err)
	}
	got, err := agentctx.RequestDocumentSplit(body, b.Members, list, msgs)
	if err != nil {
		t.Fatal(err)
	}
	wa, _ := want.AppendJSON(nil)
	ga, _ := got.AppendJSON(nil)
	if !bytes.Equal(wa, ga) || got.Format != want.Format {
		t.Fatalf("RequestDocumentSplit encodes\n%s\nParseDocument\n%s", ga, wa)
	}
	if tools, ok := got.Member("tools"); !ok || string(tools) != `[{"name":"t"}]` {
		t.Fatalf("tools %s", tools)
	}

	other := bytes.Clone(body)
	ob, _ := wire.SplitBody(other, nil)
	swapped := append([]agentctx.BodyMember(nil), b.Members...)
	swapped[0], swapped[1] = swapped[1], swapped[0]
	for name, tc := range map[string]struct {
		ms   []agentctx.BodyMember
		list []byte
	}{
		"members of another body": {ob.Members, list},
		"members out of order":    {swapped, list},
		"list copied":             {b.Members, bytes.Clone(list)},
		"list of another member":  {b.Members, b.Get("messages2")},
		"no members":              {nil, list},
	} {
		if _, err := agentctx.RequestDocumentSplit(body, tc.ms, tc.list, msgs); !errors.Is(err, agentctx.ErrInvalidInput) {
			t.Errorf("%s: err %v, want ErrInvalidInput", name, err)
		}
	}
}

// FuzzRequestDocumentSplit: no split makes RequestDocumentSplit panic; the
// body's own split gives ParseDocument's document, and one cut short,
// reordered or of a copy of the body is refused.
func FuzzRequestDocumentSplit(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[]}`), uint8(0), uint8(1))
	f.Add([]byte(` {"messages":[] , "a":{"b":[1]}} `), uint8(2), uint8(0))
	f.Add([]byte(`{"messages":[{"role":"user","content":"x"}],"messages":[]}`), uint8(3), uint8(1))
	f.Fuzz(func(t *testing.T, body []byte, mode, k uint8) {
		b, err := wire.SplitBody(body, nil)
		if err != nil {
			return
		}
		list := b.Get("messages")
		msgs, err := agentctx.UnmarshalMessages(list)
		if err != nil {
			msgs = nil
		}
		ms := b.Members
		switch mode % 4 {
		case 1: // reordered
			if len(ms) > 1 {
				ms = append([]agentctx.BodyMember(nil), ms...)
				i := int(k) % len(ms)
				ms[0], ms[i] = ms[i], ms[0]
			}
		case 2: // of a copy of the body
			c, _ := wire.SplitBody(bytes.Clone(body), nil)
			ms = c.Members
		case 3: // cut short
			ms = ms[:int(k)%(len(ms)+1)]
		}
		doc, err := agentctx.RequestDocumentSplit(body, ms, list, msgs)
		if err != nil {
			if mode%4 == 0 && msgs != nil && isArray(list) {
				t.Fatalf("the body's own split refused: %v", err)
			}
			return
		}
		if mode%4 == 2 && len(ms) > 0 {
			t.Fatalf("members of a copy accepted")
		}
		if mode%4 != 0 {
			return
		}
		want, err := agentctx.ParseDocument(context.Background(), body)
		if err != nil || want.Format != agentctx.FormatObject {
			return // a body ParseDocument reads otherwise (another format)
		}
		wa, _ := want.AppendJSON(nil)
		ga, _ := doc.AppendJSON(nil)
		if !bytes.Equal(wa, ga) {
			t.Fatalf("split encodes\n%s\nParseDocument\n%s", ga, wa)
		}
	})
}

// isArray reports whether list is a JSON array (the messages member).
func isArray(list []byte) bool { return len(list) > 0 && list[0] == '[' }
