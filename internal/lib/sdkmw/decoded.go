package sdkmw

import (
	"bytes"
	"context"
	"reflect"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/lib/decodecache"
	"github.com/agentctx/agentctx/internal/lib/wire"
	"github.com/agentctx/agentctx/pipeline"
)

// DefaultDecodeCacheBytes bounds, by default, the memory the middleware
// keeps of the messages it decoded (see Options.DecodeCacheBytes).
const DefaultDecodeCacheBytes = 64 << 20

// conversationPreparer is the ability of a Preparer to take the facts the
// middleware knows of the messages (*pipeline.Pipeline implements it), so
// that it neither encodes nor hashes again the messages the cache held.
type conversationPreparer interface {
	PrepareConversation(ctx context.Context, conv agentctx.Conversation, extraTokens int, co pipeline.CallOptions) (*pipeline.Result, error)
	RequestTokens(doc *agentctx.Document) int
}

// decodedMsg is what the middleware derives from one message of a
// request body (decodecache.Entry), the message itself aside: the cache
// keeps that one in the list of the request's document
// (decodecache.List). Never modified once made, shared by the requests
// that send its bytes again.
type decodedMsg struct {
	raw  decodecache.Print
	enc  []byte        // the message's encoding when it is not the body's bytes (nil: it is)
	hash agentctx.Hash // agentctx.HashEncoding of the encoding
}

func (d *decodedMsg) Print() decodecache.Print { return d.raw }

// Size estimates the memory the message holds: its decoded strings
// (about the size of its bytes), its encoding when kept, and the entry;
// the Message and what it holds outside it are the cached list's (the
// proxy's decodedMsg.Size says why).
func (d *decodedMsg) Size() int64 {
	return int64(d.raw.N) + int64(len(d.enc)) + decodedMsgBytes
}

var decodedMsgBytes = int64(reflect.TypeFor[decodedMsg]().Size())

type decodeCache = decodecache.Cache[*decodedMsg]

func newDecodeCache(max int64) *decodeCache {
	switch {
	case max == 0:
		return decodecache.New[*decodedMsg](DefaultDecodeCacheBytes)
	case max > 0:
		return decodecache.New[*decodedMsg](max)
	}
	return nil
}

func decodeMsg(c *decodeCache, dec *agentctx.OwnedDecoder, raw []byte) (*decodedMsg, agentctx.Message, error) {
	m, err := dec.Decode(raw)
	if err != nil {
		return nil, m, err
	}
	enc, err := m.AppendJSON(make([]byte, 0, len(raw)))
	if err != nil {
		return nil, m, err
	}
	d := &decodedMsg{raw: c.PrintOf(raw), hash: agentctx.HashEncoding(enc)}
	if !bytes.Equal(enc, raw) {
		d.enc = enc
	}
	return d, m, nil
}

// cachedDocument reads a request body as agentctx.ParseDocument does,
// decoding only the messages the cache c does not hold, and returns with
// the document the facts of its messages. ok is false when the body is not
// a plain request object with one list of messages: the caller then reads
// it with agentctx.ParseDocument (for the same result and errors).
func cachedDocument(c *decodeCache, prefix string, body []byte) (doc *agentctx.Document, facts []agentctx.Facts, ok bool) {
	ls := &decodecache.Scan[*decodedMsg]{Cache: c, Prefix: prefix, Member: "messages"}
	ls.Data = body[rawjson.SkipSpace(body, 0):]
	wb, err := wire.SplitBody(body, ls.ValueAt)
	if err != nil {
		return nil, nil, false
	}
	var list []byte
	n := 0
	for _, m := range wb.Members {
		if m.Key == "messages" {
			list, n = m.Value, n+1
		}
	}
	if n != 1 || rawjson.Kind(list) != '[' {
		return nil, nil, false
	}
	// The messages are the cache's: the document's list is never written
	// into (the pipeline's results are new lists).
	var dec agentctx.OwnedDecoder
	dm, msgs, err := ls.DecodeMessages(func(raw []byte) (*decodedMsg, agentctx.Message, error) { return decodeMsg(c, &dec, raw) })
	if err != nil {
		return nil, nil, false
	}
	facts = make([]agentctx.Facts, len(dm))
	for k, d := range dm {
		enc := d.enc
		if enc == nil {
			enc = ls.Items[k]
		}
		facts[k] = agentctx.Facts{Encoding: enc, Hash: d.hash}
	}
	doc, err = agentctx.RequestDocumentSplit(body, wb.Members, list, msgs)
	if err != nil || len(doc.Messages) != len(msgs) {
		return nil, nil, false
	}
	return doc, facts, true
}
