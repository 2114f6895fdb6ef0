package proxy

import (
	"bytes"
	"container/list"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/rawjson"
)

// DefaultDecodeCacheBytes bounds, by default, the memory the proxy keeps
// of the messages it decoded (see Options.DecodeCacheBytes).
const DefaultDecodeCacheBytes = 256 << 20

// decodedMsg is one message as a request sent it and as the proxy decoded
// it. It is never modified once made, so requests share it. It keeps no
// copy of the request's bytes: a fingerprint (two independently seeded
// 64-bit hashes and the length) tells the same bytes again, and the
// message is decoded into memory of its own (agentctx.DecodeOwnedMessage).
type decodedMsg struct {
	n    int       // length of the message's bytes in the request
	sum  [2]uint64 // their fingerprint (decodeCache.fingerprint)
	msg  agentctx.Message
	enc  []byte        // msg's encoding when it is not the request's bytes (nil: it is)
	hash uint64        // msgHash of the encoding
	key  agentctx.Hash // agentctx.HashEncoding of the encoding (the facts handed to the Engine)
	bp   int           // countBreakpoints of the encoding

	// item is what a Responses input item maps to (nil for messages);
	// msg, hash, key and bp are then those of item.Msg, and enc is not kept
	// (the item's bytes are not the message's encoding).
	item *responseItem
	// group is, on the first item of a run of Responses calls and
	// reasoning, the assistant message the run made last time, so that
	// the same run makes the very same message value again.
	group atomic.Pointer[groupedMsg]
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
	if g := run[0].group.Load(); g != nil && len(g.items) == len(run) {
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
	run[0].group.Store(g)
	return g, nil
}

// decodeItem reads a Responses input item of a request.
func (c *decodeCache) decodeItem(raw []byte) (*decodedMsg, error) {
	it, err := parseResponseItem(raw)
	if err != nil {
		return nil, err
	}
	d := &decodedMsg{n: len(raw), item: it}
	if c != nil {
		d.sum = c.fingerprint(raw)
	}
	if it.Kind == itemMessage || it.Kind == itemOutput {
		e, err := encode(it.Msg)
		if err != nil {
			return nil, err
		}
		d.msg, d.hash, d.key, d.bp = e.msg, e.hash, e.key, e.bp
	}
	return d, nil
}

// decodeMsg decodes a message of a request.
func (c *decodeCache) decodeMsg(raw []byte) (*decodedMsg, error) {
	m, err := agentctx.DecodeOwnedMessage(raw)
	if err != nil {
		return nil, err
	}
	e, err := encodeSized(m, len(raw))
	if err != nil {
		return nil, err
	}
	d := &decodedMsg{n: len(raw), msg: m, hash: e.hash, key: e.key, bp: e.bp}
	if c != nil {
		d.sum = c.fingerprint(raw)
	}
	if !bytes.Equal(e.enc, raw) {
		d.enc = e.enc
	}
	return d, nil
}

// encoding returns the message's encoding, given its bytes in the
// request (which it is when the request wrote it compactly).
func (d *decodedMsg) encoding(raw []byte) []byte {
	if d.enc != nil || d.item != nil {
		return d.enc
	}
	return raw
}

// facts returns what the Engine is told of the message, given its bytes
// in the request.
func (d *decodedMsg) facts(raw []byte) agentctx.Facts {
	return agentctx.Facts{Encoding: d.encoding(raw), Hash: d.key}
}

// size estimates the memory a decoded message holds: its decoded strings
// and the structure around them (about the size of its bytes), and its
// encoding when kept.
func (d *decodedMsg) size() int64 {
	return int64(d.n) + int64(len(d.enc)) + 256
}

// decodeCache keeps, per conversation, the messages decoded for its last
// request, for the next request to reuse the ones it sends again byte for
// byte: a conversation grows at its end, so decoding a request costs what
// is new in it. Its memory is bounded (least recently used conversations
// go first).
//
// A conversation is found by the session header the client sent (if any)
// and the bytes of its first message, which every request of it repeats,
// so that the cache needs no session key (those are read from the body).
// Different conversations that share both only take turns in the cache:
// messages are reused only when their bytes are the request's.
type decodeCache struct {
	mu    sync.Mutex
	max   int64
	size  int64
	lru   list.List // of *decodeEntry, most recent first
	byKey map[string]*list.Element
	seed  maphash.Seed
	seed2 maphash.Seed

	reused, decoded atomic.Int64 // messages taken from the cache, and decoded
}

type decodeEntry struct {
	key  string
	msgs []*decodedMsg
	size int64
}

func newDecodeCache(max int64) *decodeCache {
	return &decodeCache{max: max, byKey: map[string]*list.Element{}, seed: maphash.MakeSeed(), seed2: maphash.MakeSeed()}
}

// fingerprint is what tells a message's bytes again: 128 bits of two
// independently seeded hashes (with the length kept beside them).
func (c *decodeCache) fingerprint(raw []byte) [2]uint64 {
	return [2]uint64{maphash.Bytes(c.seed, raw), maphash.Bytes(c.seed2, raw)}
}

// same reports whether data holds the bytes of d.
func (c *decodeCache) same(d *decodedMsg, data []byte) bool {
	return len(data) == d.n && c.fingerprint(data) == d.sum
}

// get returns the messages cached under key, or nil.
func (c *decodeCache) get(key string) []*decodedMsg {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.byKey[key]
	if el == nil {
		return nil
	}
	c.lru.MoveToFront(el)
	return el.Value.(*decodeEntry).msgs
}

// put caches msgs under key, replacing what was there, and drops the least
// recently used conversations beyond the bound. A conversation larger than
// the bound is not cached.
func (c *decodeCache) put(key string, msgs []*decodedMsg) {
	if c == nil || key == "" {
		return
	}
	var size int64
	for _, m := range msgs {
		size += m.size()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el := c.byKey[key]; el != nil {
		c.size -= el.Value.(*decodeEntry).size
		c.lru.Remove(el)
		delete(c.byKey, key)
	}
	if size > c.max {
		return
	}
	for c.size+size > c.max {
		old := c.lru.Back()
		e := old.Value.(*decodeEntry)
		c.size -= e.size
		c.lru.Remove(old)
		delete(c.byKey, e.key)
	}
	c.byKey[key] = c.lru.PushFront(&decodeEntry{key: key, msgs: msgs, size: size})
	c.size += size
}

// bytes reports the memory the cache holds, by its estimate.
func (c *decodeCache) bytes() int64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}

// listScan splits the list of messages of a body while the body is split
// (as a rawjson.MembersFunc hook), matching each element against the
// message at the same position in the conversation's cached request: an
// element whose bytes are that message's is neither scanned nor decoded
// again.
type listScan struct {
	cache     *decodeCache
	prefix    string // the cache key's start: API and session header
	member    string // the member holding the list: "messages", or "input"
	responses bool   // the list holds Responses input items

	data   []byte // the body, as MembersFunc sees it
	key    string // the cache key, once the first element is known
	items  [][]byte
	reused []*decodedMsg // per item: the cached message it repeats, or nil
}

// newListScan returns a scan for the body of an editable request.
func (c *decodeCache) newListScan(api API, h http.Header) *listScan {
	var sb strings.Builder
	sb.WriteString(string(api))
	sb.WriteByte(0)
	sb.WriteString(h.Get("X-Claude-Code-Session-Id"))
	sb.WriteByte(0)
	sb.WriteString(h.Get(HeaderSession))
	sb.WriteByte(0)
	if api == APIResponses {
		return &listScan{cache: c, prefix: sb.String(), member: "input", responses: true}
	}
	return &listScan{cache: c, prefix: sb.String(), member: "messages"}
}

// valueAt is the MembersFunc hook.
func (ls *listScan) valueAt(key string, i int) (int, error) {
	if key != ls.member || i >= len(ls.data) || ls.data[i] != '[' {
		return -1, nil
	}
	return ls.scan(i)
}

// scan splits the array at data[i] (the last one of the member wins, as
// for body.get) and returns the index past it.
func (ls *listScan) scan(i int) (int, error) {
	data := ls.data
	ls.items, ls.reused, ls.key = ls.items[:0], ls.reused[:0], ""
	var cached []*decodedMsg
	i = rawjson.SkipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return i + 1, nil
	}
	for k := 0; ; k++ {
		start := i
		var hit *decodedMsg
		if k > 0 && k < len(cached) && i+cached[k].n <= len(data) && data[i] == '{' && data[i+cached[k].n-1] == '}' &&
			ls.cache.same(cached[k], data[i:i+cached[k].n]) {
			// The bytes of a complete JSON object: its end does not
			// depend on what follows it.
			hit = cached[k]
			i += hit.n
		} else {
			end, err := rawjson.ValueEnd(data, i)
			if err != nil {
				return end, err
			}
			i = end
		}
		if k == 0 && ls.cache != nil {
			fp := ls.cache.fingerprint(data[start:i])
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], fp[0])
			ls.key = ls.prefix + string(b[:])
			cached = ls.cache.get(ls.key)
			if len(cached) > 0 && cached[0].n == i-start && cached[0].sum == fp {
				hit = cached[0]
			}
		}
		ls.items = append(ls.items, data[start:i])
		ls.reused = append(ls.reused, hit)
		i = rawjson.SkipSpace(data, i)
		if i < len(data) && data[i] == ',' {
			i = rawjson.SkipSpace(data, i+1)
			continue
		}
		if i < len(data) && data[i] == ']' {
			return i + 1, nil
		}
		return i, &rawjson.SyntaxError{Offset: int64(i), Msg: "invalid character after array element"}
	}
}

// decode returns the decoded messages of the scanned list, decoding the
// ones the cache did not hold, and caches them for the next request.
func (ls *listScan) decode() ([]*decodedMsg, error) {
	out := make([]*decodedMsg, len(ls.items))
	for k, it := range ls.items {
		if d := ls.reused[k]; d != nil {
			out[k] = d
			continue
		}
		if ls.cache != nil {
			ls.cache.decoded.Add(1)
		}
		var d *decodedMsg
		var err error
		if ls.responses {
			d, err = ls.cache.decodeItem(it)
		} else {
			d, err = ls.cache.decodeMsg(it)
		}
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", k, err)
		}
		out[k] = d
	}
	if ls.cache != nil {
		ls.cache.reused.Add(int64(len(out)) - int64(countNew(ls.reused)))
	}
	ls.cache.put(ls.key, out)
	return out, nil
}

// countNew counts the items the cache did not hold.
func countNew(reused []*decodedMsg) int {
	n := 0
	for _, d := range reused {
		if d == nil {
			n++
		}
	}
	return n
}
