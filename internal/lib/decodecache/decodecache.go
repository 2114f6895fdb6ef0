// Package decodecache keeps, per conversation, the messages decoded for its
// last request, so that the next request reuses the ones it sends again
// byte for byte: a conversation grows at its end, so decoding a request
// costs what is new in it. The proxy and the SDK middleware
// (internal/lib/sdkmw) share it.
//
// The cache keeps no copy of a request's bytes: a Print (the length and a
// 64-bit hash seeded at random per cache) tells the same bytes again. What
// a message decodes to is the caller's (an Entry); the cache bounds the
// memory of its entries (least recently used conversations go first).
package decodecache

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"reflect"
	"sync/atomic"
	"unsafe"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/base/sizedlru"
	"github.com/agentctx/agentctx/internal/lib/respitems"
)

// Print identifies the bytes of a message: their length and fingerprint
// (Cache.PrintOf).
type Print struct {
	N   int
	Sum uint64
}

// Entry is one decoded message as a cache keeps it. It must never be
// modified once made, so that requests share it.
type Entry interface {
	comparable
	// Print is that of the message's bytes in the request that sent it.
	Print() Print
	// Size estimates the memory the entry holds.
	Size() int64
}

// List is what a Cache keeps of a conversation's last request: an entry
// per element of its list of messages and, when the caller keeps them
// there (Scan.DecodeMessages), the messages the entries decoded to.
type List[E Entry] struct {
	Entries []E
	// Messages, when not nil, holds Entries[k]'s message at k: once, in
	// the very slice the request handed on (its document's), rather than a
	// copy in each entry and another in the document. Neither the caller
	// nor anyone it hands them to may modify them.
	Messages []agentctx.Message
}

// Cache holds the entries of the last request of each conversation,
// under a key the caller derives (Scan derives it from a prefix and the
// first message's bytes). Its memory is bounded by the sum of the entries'
// sizes. A nil *Cache caches nothing. It is safe for concurrent use.
type Cache[E Entry] struct {
	kept *sizedlru.Cache[string, List[E]]
	seed maphash.Seed

	// Reused and Decoded count the messages taken from the cache and
	// decoded (by Scan.Decode).
	Reused, Decoded atomic.Int64
}

// New returns a cache bounded to max bytes (by the entries' estimates).
func New[E Entry](max int64) *Cache[E] {
	return &Cache[E]{kept: sizedlru.New[string, List[E]](max), seed: maphash.MakeSeed()}
}

// Fingerprint is what tells a message's bytes again, with the length kept
// beside it: a 64-bit hash whose seed is the cache's own, drawn at random
// (hash/maphash), so no one sending requests can know it. Two different
// messages of one length match with a chance of 2^-64 per comparison; a
// second independently seeded hash (tried before) cost a second pass over
// every request's bytes, a sixth of the proxy's time on a warm 1 MB
// request. c must not be nil.
func (c *Cache[E]) Fingerprint(raw []byte) uint64 {
	return maphash.Bytes(c.seed, raw)
}

// PrintOf returns the Print of raw; the zero Print when c is nil.
func (c *Cache[E]) PrintOf(raw []byte) Print {
	if c == nil {
		return Print{N: len(raw)}
	}
	return Print{N: len(raw), Sum: c.Fingerprint(raw)}
}

// Same reports whether data holds the bytes of e.
func (c *Cache[E]) Same(e E, data []byte) bool {
	p := e.Print()
	return len(data) == p.N && c.Fingerprint(data) == p.Sum
}

// Get returns the list cached under key, or the zero List.
func (c *Cache[E]) Get(key string) List[E] {
	if c == nil {
		return List[E]{}
	}
	l, _ := c.kept.Get(key)
	return l
}

// Put caches l under key, replacing what was there, and drops the least
// recently used conversations beyond the bound. A conversation larger than
// the bound is not cached. Its size is the sum of the entries' and, when
// it holds messages, ListBytes of them.
func (c *Cache[E]) Put(key string, l List[E]) {
	if c == nil || key == "" {
		return
	}
	size := ListBytes(l.Messages)
	for _, m := range l.Entries {
		size += m.Size()
	}
	c.kept.Put(key, l, size)
}

// Bytes reports the memory the cache holds, by its estimate.
func (c *Cache[E]) Bytes() int64 {
	if c == nil {
		return 0
	}
	return c.kept.Bytes()
}

// Len reports the number of conversations cached.
func (c *Cache[E]) Len() int {
	if c == nil {
		return 0
	}
	return c.kept.Len()
}

// Scan splits the list of messages of a body while the body is split
// (its ValueAt is a rawjson.MembersFunc hook), matching each element
// against the message at the same position in the conversation's cached
// request: an element whose bytes are that message's is neither scanned
// nor decoded again. Cache may be nil (nothing is reused).
type Scan[E Entry] struct {
	Cache  *Cache[E]
	Prefix string // the cache key's start (the caller's: API, session header)
	Member string // the member holding the list: "messages", or "input"
	Noun   string // what an element is called in Decode's errors; "" means "message"

	Data   []byte // the body, as the MembersFunc sees it
	Key    string // the cache key, once the first element is known
	Items  [][]byte
	Reused []E // per item: the cached entry it repeats, or the zero E

	cached List[E] // the conversation's cached request, once matched
}

// ValueAt is the MembersFunc hook.
func (ls *Scan[E]) ValueAt(key string, i int) (int, error) {
	if key != ls.Member || i >= len(ls.Data) || ls.Data[i] != '[' {
		return -1, nil
	}
	return ls.scan(i)
}

// scan splits the array at Data[i] (the last one of the member wins) and
// returns the index past it.
func (ls *Scan[E]) scan(i int) (int, error) {
	data := ls.Data
	var zero E
	ls.Items, ls.Reused, ls.Key, ls.cached = ls.Items[:0], ls.Reused[:0], "", List[E]{}
	var cached []E
	i = rawjson.SkipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return i + 1, nil
	}
	first := i
	for k := 0; ; k++ {
		start := i
		hit := zero
		if k > 0 && k < len(cached) {
			n := cached[k].Print().N
			if i+n <= len(data) && n > 0 && data[i] == '{' && data[i+n-1] == '}' && ls.Cache.Same(cached[k], data[i:i+n]) {
				// The bytes of a complete JSON object: its end does not
				// depend on what follows it.
				hit = cached[k]
				i += n
			}
		}
		if hit == zero {
			end, err := rawjson.ValueEnd(data, i)
			if err != nil {
				return end, err
			}
			i = end
		}
		if k == 0 && ls.Cache != nil {
			fp := ls.Cache.Fingerprint(data[start:i])
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], fp)
			ls.Key = ls.Prefix + string(b[:])
			ls.cached = ls.Cache.Get(ls.Key)
			cached = ls.cached.Entries
			if len(cached) > 0 && cached[0].Print() == (Print{N: i - start, Sum: fp}) {
				hit = cached[0]
			}
		}
		if len(ls.Items) == cap(ls.Items) {
			ls.grow(len(cached), first, i)
		}
		ls.Items = append(ls.Items, data[start:i])
		ls.Reused = append(ls.Reused, hit)
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

// grow makes room for more items, the elements split so far having
// taken data[first:at]: for the cached request's number of them and a
// few more when it holds more than the lists do; else for twice as many,
// or for as many more as the rest of the body holds at the average size
// so far when that is more: all of them at once when their lists take at
// most half the rest of the body, else up to eight times as many (a long
// list of like elements is sized in a few steps, and a few small elements
// before a large one do not size the lists for a body of small ones).
// append grows a long slice by a quarter at a time, which allocated five
// times the lists' final size for a first request of 100,000 messages,
// doubling alone 2.6 times it, and steps of eight 2.2 times (issue 24,
// item 7).
func (ls *Scan[E]) grow(cached, first, at int) {
	have := cap(ls.Items)
	n := max(2*have, 16)
	if cached > have {
		n = cached + 16
	} else if k := len(ls.Items); k > 0 && at > first {
		rest := len(ls.Data) - at
		more := rest / max((at-first)/k, 1)
		est := k + more + more/16 + 16
		if k < 1024 || (est-k)*ls.itemSize() > rest/2 {
			est = min(est, 8*have)
		}
		n = max(n, est)
	}
	ls.Items = append(make([][]byte, 0, n), ls.Items...)
	ls.Reused = append(make([]E, 0, n), ls.Reused...)
}

// itemSize is the bytes an element takes in the lists: its bytes' slice
// and its entry.
func (ls *Scan[E]) itemSize() int {
	var e E
	return int(unsafe.Sizeof([]byte(nil)) + unsafe.Sizeof(e))
}

// Decode returns the entries of the scanned list, decoding with decode
// the ones the cache did not hold, and caches them for the next request.
func (ls *Scan[E]) Decode(decode func(raw []byte) (E, error)) ([]E, error) {
	out, err := ls.decodeEach(func(k int, raw []byte) (E, error) { return decode(raw) })
	if err != nil {
		return nil, err
	}
	ls.Cache.Put(ls.Key, List[E]{Entries: out})
	return out, nil
}

// DecodeMessages is Decode for entries that do not hold their message:
// decode returns the message beside the entry, the cache keeps the
// messages once, in the slice returned (List.Messages), and a message the
// cache held is that slice's of the last request. The slice returned must
// never be modified.
func (ls *Scan[E]) DecodeMessages(decode func(raw []byte) (E, agentctx.Message, error)) ([]E, []agentctx.Message, error) {
	msgs := make([]agentctx.Message, len(ls.Items))
	last := ls.cached.Messages
	if len(last) != len(ls.cached.Entries) {
		last = nil
	}
	if last == nil {
		clear(ls.Reused) // the messages are not kept: all decoded again
	}
	out, err := ls.decodeEach(func(k int, raw []byte) (e E, err error) {
		e, msgs[k], err = decode(raw)
		return e, err
	})
	if err != nil {
		return nil, nil, err
	}
	var zero E
	for k, e := range ls.Reused {
		if e != zero {
			msgs[k] = last[k]
		}
	}
	ls.Cache.Put(ls.Key, List[E]{Entries: out, Messages: msgs})
	return out, msgs, nil
}

// decodeEach returns the entries of the scanned list, decoding with decode
// the ones the cache did not hold.
func (ls *Scan[E]) decodeEach(decode func(k int, raw []byte) (E, error)) ([]E, error) {
	ls.cached = List[E]{} // the callers took what they use: the last request's list is not held through this one
	var zero E
	out := make([]E, len(ls.Items))
	for k, it := range ls.Items {
		if d := ls.Reused[k]; d != zero {
			out[k] = d
			continue
		}
		if ls.Cache != nil {
			ls.Cache.Decoded.Add(1)
		}
		d, err := decode(k, it)
		if err != nil {
			return nil, fmt.Errorf("%s %d: %w", cmp.Or(ls.Noun, "message"), k, err)
		}
		out[k] = d
	}
	if ls.Cache != nil {
		ls.Cache.Reused.Add(int64(len(out)) - int64(CountNew(ls.Reused)))
	}
	return out, nil
}

// CountNew counts the items the cache did not hold (the zero E).
func CountNew[E comparable](reused []E) int {
	var zero E
	n := 0
	for _, d := range reused {
		if d == zero {
			n++
		}
	}
	return n
}

// OutsideBytes estimates the memory a decoded message holds outside the
// struct it is in: its content blocks and tool calls (their strings are
// about the size of the message's bytes, counted by the entry from its
// Print). An Entry's Size is about the bytes of its message, the size of
// its own struct, what it keeps besides, and this.
func OutsideBytes(m agentctx.Message) int64 {
	return int64(len(m.Content.Blocks()))*blockBytes + int64(len(m.ToolCalls))*ToolCallBytes
}

var (
	messageBytes = int64(reflect.TypeFor[agentctx.Message]().Size())
	blockBytes   = int64(reflect.TypeFor[agentctx.Block]().Size())
	itemBytes    = int64(reflect.TypeFor[respitems.Item]().Size())
	// ToolCallBytes is the size of an agentctx.ToolCall.
	ToolCallBytes = int64(reflect.TypeFor[agentctx.ToolCall]().Size())
)

// ItemBytes estimates the memory a parsed Responses input item holds
// besides its strings: its Item, its message's blocks and tool calls
// (OutsideBytes), and its call.
func ItemBytes(it *respitems.Item) int64 {
	n := itemBytes + OutsideBytes(it.Msg)
	if it.Call != nil {
		n += ToolCallBytes
	}
	return n
}

// ListBytes estimates the memory a list of decoded messages holds besides
// their strings: each Message and what it holds outside it (OutsideBytes).
func ListBytes(msgs []agentctx.Message) int64 {
	n := int64(len(msgs)) * messageBytes
	for i := range msgs {
		n += OutsideBytes(msgs[i])
	}
	return n
}
