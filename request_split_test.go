package agentctx_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/wire"
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
