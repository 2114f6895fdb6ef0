package agentctx_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
)

func TestRequestDocumentIsParseDocument(t *testing.T) {
	body := []byte(` {"model":"m","system":[{"type":"text","text":"sys"}],"messages":[{"role":"user","content":"hi"},` +
		`{"role":"assistant","content":[{"type":"text","text":"yo"}],"x":1}],"tools":[{"name":"t"}],"messages2":[1]} `)
	want, err := agentctx.ParseDocument(context.Background(), body)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := rawjson.Members(bytes.TrimSpace(body))
	if err != nil {
		t.Fatal(err)
	}
	var list []byte
	for _, m := range ms {
		if m.Key == "messages" {
			list = m.Value
		}
	}
	// list must alias body itself.
	off := bytes.Index(body, list)
	list = body[off : off+len(list)]
	elems, _ := rawjson.Elements(list)
	msgs := make([]agentctx.Message, len(elems))
	for i, el := range elems {
		if msgs[i], err = agentctx.DecodeMessage(el); err != nil {
			t.Fatal(err)
		}
	}
	got, err := agentctx.RequestDocument(body, list, msgs)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := want.AppendJSON(nil)
	b, _ := got.AppendJSON(nil)
	if !bytes.Equal(a, b) || got.Format != want.Format {
		t.Fatalf("RequestDocument encodes\n%s\nParseDocument\n%s", b, a)
	}
	sys, ok := got.System()
	if !ok || len(sys.Blocks()) != 1 || sys.Blocks()[0].Text != "sys" {
		t.Fatalf("system %q %v", sys.AsText(), ok)
	}
	if tools, ok := got.Member("tools"); !ok || string(tools) != `[{"name":"t"}]` {
		t.Fatalf("tools %s", tools)
	}

	for name, l := range map[string][]byte{
		"copy":       bytes.Clone(list),
		"other":      body[bytes.Index(body, []byte(`[1]`)):][:3],
		"empty":      nil,
		"system":     body[bytes.Index(body, []byte(`[{"type"`)):][:len(`[{"type":"text","text":"sys"}]`)],
		"not a list": body[bytes.Index(body, []byte(`"m"`)):][:3],
	} {
		if _, err := agentctx.RequestDocument(body, l, msgs); !errors.Is(err, agentctx.ErrInvalidInput) {
			t.Errorf("%s: err %v, want ErrInvalidInput", name, err)
		}
	}
	if _, err := agentctx.RequestDocument(body[:len(body)-3], list, msgs); !errors.Is(err, agentctx.ErrInvalidInput) {
		t.Errorf("truncated body: err %v", err)
	}
}
