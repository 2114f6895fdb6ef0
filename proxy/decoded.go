package proxy

import (
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/lib/decodecache"
)

// DefaultDecodeCacheBytes bounds, by default, the memory the proxy keeps
// of the messages it decoded (see Options.DecodeCacheBytes).
const DefaultDecodeCacheBytes = 256 << 20

// decodedMsg is what the proxy derives from one message of a request,
// the message itself aside: that one is decoded into memory of its own
// (agentctx.DecodeOwnedMessage) and kept once, in the request's document,
// which the cache keeps beside the entries (decodecache.List). It is never
// modified once made, so requests share it. It keeps no copy of the
// request's bytes: a fingerprint and the length tell the same bytes again.
type decodedMsg struct {
	raw  decodecache.Print // of the message's bytes in the request
	hash uint64            // msgHash of the encoding
	key  agentctx.Hash     // agentctx.HashEncoding of the encoding (the facts handed to the Engine)
	bp   int               // countBreakpoints of the encoding
	// more is what few messages have: nil for a message whose encoding is
	// the request's bytes, as clients write them (a request of 100,000
	// small messages keeps 56 bytes for each instead of 88).
	more *decodedMore
}

// decodedMore is the part of a decodedMsg that most messages do not have.
type decodedMore struct {
	enc []byte // the message's encoding when it is not the request's bytes
	// item is what a Responses input item maps to (nil for messages);
	// hash, key and bp are then those of item.Msg, and enc is not kept
	// (the item's bytes are not the message's encoding).
	item *responseItem
	// group is, on the first item of a run of Responses calls and
	// reasoning, the assistant message the run made last time, so that
	// the same run makes the very same message value again.
	group atomic.Pointer[groupedMsg]
}

// item returns the Responses item d maps to; nil for a message.
func (d *decodedMsg) item() *responseItem {
	if d.more == nil {
		return nil
	}
	return d.more.item
}

// encoded is a message with what the proxy derives from its encoding.
type encoded struct {
	msg  agentctx.Message
	enc  []byte
	hash uint64        // msgHash(enc)
	key  agentctx.Hash // agentctx.HashEncoding(enc)
	bp   int           // countBreakpoints(enc)
}

func encode(m agentctx.Message) (encoded, error) { return encodeSized(m, 0) }

// encodeSized is encode with room for size bytes made at once (the size
// of the message's bytes, which its encoding usually is), so that a large
// message is not copied as its encoding grows.
func encodeSized(m agentctx.Message, size int) (encoded, error) {
	enc, err := m.AppendJSON(make([]byte, 0, size))
	if err != nil {
		return encoded{}, err
	}
	return encoded{msg: m, enc: enc, hash: msgHash(enc), key: agentctx.HashEncoding(enc), bp: countBreakpoints(enc)}, nil
}

// groupedMsg is the assistant message a run of Responses items maps to.
type groupedMsg struct {
	items []*decodedMsg
	encoded
}

// grouped returns the message the run of items makes: the one made last
// time when the run is the same items, else msg (newly made), remembered.
func grouped(run []*decodedMsg, msg agentctx.Message) (*groupedMsg, error) {
	if g := run[0].more.group.Load(); g != nil && len(g.items) == len(run) {
		same := true
		for i := range run {
			same = same && g.items[i] == run[i]
		}
		if same {
			return g, nil
		}
	}
	e, err := encode(msg)
	if err != nil {
		return nil, err
	}
	g := &groupedMsg{items: run, encoded: e}
	run[0].more.group.Store(g)
	return g, nil
}

// decodeItem reads a Responses input item of a request.
func decodeItem(c *decodeCache, raw []byte) (*decodedMsg, error) {
	it, err := parseResponseItem(raw)
	if err != nil {
		return nil, err
	}
	d := &decodedMsg{raw: c.PrintOf(raw), more: &decodedMore{item: it}}
	if it.Kind == itemMessage || it.Kind == itemOutput {
		e, err := encode(it.Msg)
		if err != nil {
			return nil, err
		}
		d.hash, d.key, d.bp = e.hash, e.key, e.bp
	}
	return d, nil
}

// decodeMsg decodes a message of a request with dec.
func decodeMsg(c *decodeCache, dec *agentctx.OwnedDecoder, raw, scratch []byte) (*decodedMsg, agentctx.Message, []byte, error) {
	m, err := dec.Decode(raw)
	if err != nil {
		return nil, m, scratch, err
	}
	// The encoding is the request's bytes when they were written
	// compactly, as clients write them: checked in place, it is not
	// written out (a large tool result is not copied again).
	same, scratch, err := agentctx.EncodesAs(m, raw, scratch)
	if err != nil {
		return nil, m, scratch, err
	}
	d := &decodedMsg{raw: c.PrintOf(raw)}
	if same {
		d.hash, d.key, d.bp = msgHash(raw), agentctx.HashEncoding(raw), countBreakpoints(raw)
		return d, m, scratch, nil
	}
	e, err := encodeSized(m, len(raw))
	if err != nil {
		return nil, m, scratch, err
	}
	d.more = &decodedMore{enc: e.enc}
	d.hash, d.key, d.bp = e.hash, e.key, e.bp
	return d, m, scratch, nil
}

// encoding returns the message's encoding, given its bytes in the
// request (which it is when the request wrote it compactly).
func (d *decodedMsg) encoding(raw []byte) []byte {
	if d.more != nil {
		return d.more.enc
	}
	return raw
}

// facts returns what the Engine is told of the message, given its bytes
// in the request.
func (d *decodedMsg) facts(raw []byte) agentctx.Facts {
	return agentctx.Facts{Encoding: d.encoding(raw), Hash: d.key}
}

// Print returns the Print of the message's bytes (decodecache.Entry).
func (d *decodedMsg) Print() decodecache.Print { return d.raw }

// Size estimates the memory a decoded message holds: its decoded strings
// (about the size of its bytes), its encoding when kept, and the
// decodedMsg; the Message, its blocks and tool calls are the cached
// list's (decodecache.ListBytes). (It counted all that as 256 bytes
// whatever the message, 0.44 to 0.76 of the truth: a bound of 256 MB let
// the cache keep up to 580 MB; TestDecodeCacheSizeIsHonest.)
//
// A Responses item adds its Item and its call; a call or reasoning item
// adds its share of the assistant message its run makes (kept on the
// run's first item once grouped): a tool call, a pointer, and about its
// bytes of encoding. (Without them: 0.48 of the truth for items of small
// calls; TestDecodeCacheSizeIsHonest.)
func (d *decodedMsg) Size() int64 {
	n := int64(d.raw.N) + decodedMsgBytes
	if d.more == nil {
		return n
	}
	n += int64(len(d.more.enc)) + decodedMoreBytes
	it := d.more.item
	if it == nil {
		return n
	}
	n += decodecache.ItemBytes(it)
	if it.Kind != itemMessage && it.Kind != itemOutput {
		n += decodecache.ToolCallBytes + 8 + int64(d.raw.N)
	}
	return n
}

var (
	decodedMsgBytes  = int64(reflect.TypeFor[decodedMsg]().Size())
	decodedMoreBytes = int64(reflect.TypeFor[decodedMore]().Size())
)

// decodeCache keeps, per conversation, the messages decoded for its last
// request, for the next request to reuse the ones it sends again byte for
// byte (internal/lib/decodecache). A conversation is found by the session
// header the client sent (if any) and the bytes of its first message,
// which every request of it repeats, so that the cache needs no session
// key (those are read from the body). Different conversations that share
// both only take turns in the cache: messages are reused only when their
// bytes are the request's.
type decodeCache = decodecache.Cache[*decodedMsg]

func newDecodeCache(max int64) *decodeCache { return decodecache.New[*decodedMsg](max) }

// listScan splits the list of messages of a body while the body is split
// (its ValueAt is a rawjson.MembersFunc hook), reusing the messages the
// conversation's cached request held (decodecache.Scan).
type listScan struct {
	decodecache.Scan[*decodedMsg]
}

// newListScan returns a scan, with the cache c (which may be nil), for
// the body of an editable request.
func newListScan(c *decodeCache, api API, h http.Header) *listScan {
	var sb strings.Builder
	sb.WriteString(string(api))
	sb.WriteByte(0)
	sb.WriteString(h.Get("X-Claude-Code-Session-Id"))
	sb.WriteByte(0)
	sb.WriteString(h.Get(HeaderSession))
	sb.WriteByte(0)
	return &listScan{Scan: decodecache.Scan[*decodedMsg]{Cache: c, Prefix: sb.String(), Member: familyOf(api).Info().List}}
}

// decodeItems returns the decoded Responses items of the scanned list,
// decoding the ones the cache did not hold, and caches them for the next
// request.
func (ls *listScan) decodeItems() ([]*decodedMsg, error) {
	c := ls.Cache
	return ls.Decode(func(raw []byte) (*decodedMsg, error) { return decodeItem(c, raw) })
}

// decodeMessages returns the decoded messages of the scanned list and
// what the proxy derives from each, decoding the ones the cache did not
// hold, and caches them for the next request. The messages must never be
// modified: the cache keeps them.
func (ls *listScan) decodeMessages() ([]*decodedMsg, []agentctx.Message, error) {
	c := ls.Cache
	var scratch []byte // decodeMsg's, for the next message
	var dec agentctx.OwnedDecoder
	return ls.DecodeMessages(func(raw []byte) (d *decodedMsg, m agentctx.Message, err error) {
		d, m, scratch, err = decodeMsg(c, &dec, raw, scratch)
		return d, m, err
	})
}

// printed is what a Server without an Engine keeps of a message of a
// conversation's last request: the Print of its bytes. Such a Server
// splits a body only to read the members around the list of messages
// (model, thinking, the session's): with the prints, the next request's
// split passes over the messages it sends again by their hash instead of
// scanning every string for its end. Nothing is decoded.
type printed struct{ p decodecache.Print }

// Print implements decodecache.Entry.
func (p printed) Print() decodecache.Print { return p.p }

// Size implements decodecache.Entry: the entry and its share of the list.
func (p printed) Size() int64 { return 48 }

// printCache is the cache of a Server without an Engine.
type printCache = decodecache.Cache[printed]

// printScan splits the list of messages of a body as listScan does, for a
// Server without an Engine (its cache holds prints).
type printScan struct{ decodecache.Scan[printed] }

func newPrintScan(c *printCache, api API, h http.Header) *printScan {
	ls := newListScan(nil, api, h) // the same key and member
	return &printScan{decodecache.Scan[printed]{Cache: c, Prefix: ls.Prefix, Member: ls.Member}}
}

// remember caches the prints of the scanned list for the next request.
func (ps *printScan) remember() {
	c := ps.Cache
	ps.Decode(func(raw []byte) (printed, error) { return printed{c.PrintOf(raw)}, nil })
}

// countNew counts the items the cache did not hold.
func countNew(reused []*decodedMsg) int { return decodecache.CountNew(reused) }
