package proxy

import (
	"bytes"
	"errors"
	"hash/maphash"
	"io"
	"slices"
	"sort"
	"sync"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
)

var errNotObject = errors.New("the body is not a JSON object")

// alignment maps the messages to send onto the messages received.
type alignment struct {
	out     []agentctx.Message
	outEnc  [][]byte // encoding of each message to send
	outHash []uint64 // msgHash of each, 0 until known (see hash)
	// outBreaks is the number of cache_control breakpoints in each, -1
	// until known (see breakpoints).
	outBreaks []int
	match     []int // out index → input index whose encoding it has, or -1
	// firstChanged is the first out index whose message is not the input
	// message at the same index (len(out) when the lists are equal up to
	// the end of the shorter one and of the same length).
	firstChanged int
	// ownOut is set once out is a copy of the list the engine returned
	// (which may be the request's own, shared with the decode cache), so
	// that it may be written into.
	ownOut bool
}

// unchanged reports whether the lists are the same.
func (a *alignment) unchanged(nIn int) bool {
	return len(a.out) == nIn && a.firstChanged == len(a.out)
}

// align matches each message to send with an input message of the same
// encoding, in order: the messages an Engine kept are found again, the ones
// it changed or added are not. in are the input messages, inEnc their
// encodings and inHash their msgHash (nil when not known). sources and
// facts are what the Engine said of out (Prepared.Sources and
// Prepared.Facts, nil when it did not say): a message it kept, the next
// input message, is matched without being encoded, and a message whose
// encoding it gave is not encoded again. Either way each message is
// matched with the first input message of its encoding after the last
// match.
func align(in []agentctx.Message, inEnc [][]byte, inHash []uint64, inBreaks []int, out []agentctx.Message, sources []int, facts []agentctx.Facts) (*alignment, error) {
	a := &alignment{out: out, outEnc: make([][]byte, len(out)), outHash: make([]uint64, len(out)), outBreaks: make([]int, len(out)),
		match: make([]int, len(out)), firstChanged: -1}
	if len(sources) != len(out) {
		sources = nil
	}
	if len(facts) != len(out) {
		facts = nil
	}
	next := 0
	var scratch []byte // the encoding of a message, until it is kept
	for j := range out {
		a.match[j] = -1
		src := -1
		if sources != nil {
			src = sources[j]
		}
		if src >= 0 && src == next && next < len(in) && next < len(inEnc) {
			a.match[j], a.outEnc[j] = next, inEnc[next]
			if next < len(inHash) {
				a.outHash[j] = inHash[next]
			}
			next++
		} else {
			enc, own, err := outEncoding(out, j, in, inEnc, src, facts, scratch)
			if err != nil {
				return nil, err
			}
			if own {
				scratch = enc
			}
			var h uint64
			if inHash != nil {
				if src >= 0 && src < len(inHash) && inHash[src] != 0 {
					h = inHash[src]
				} else {
					h = msgHash(enc)
				}
				a.outHash[j] = h
			}
			for k := next; k < len(inEnc); k++ {
				if k < len(inHash) && inHash[k] != 0 && inHash[k] != h {
					continue // another message: equal encodings hash alike
				}
				if inEnc[k] == nil && k < len(in) {
					// Not kept (a Responses item's message): encode it
					// now that it is needed.
					if inEnc[k], err = in[k].AppendJSON(nil); err != nil {
						return nil, err
					}
				}
				if len(inEnc[k]) == len(enc) && bytes.Equal(inEnc[k], enc) {
					a.match[j] = k // its hash is h, computed above
					next = k + 1
					enc, own = inEnc[k], false
					break
				}
			}
			if own {
				enc = bytes.Clone(enc)
			}
			a.outEnc[j] = enc
		}
		if a.firstChanged < 0 && a.match[j] != j {
			a.firstChanged = j
		}
	}
	if a.firstChanged < 0 {
		a.firstChanged = len(out)
	}
	for j, k := range a.match {
		a.outBreaks[j] = -1
		if k >= 0 && k < len(inBreaks) {
			a.outBreaks[j] = inBreaks[k]
		}
	}
	return a, nil
}

// outEncoding returns the encoding of message j to send: the input
// message's when the Engine kept input message src, the one the Engine
// gave, or else its own, written over scratch (own reports that case: the
// caller copies it to keep it).
func outEncoding(out []agentctx.Message, j int, in []agentctx.Message, inEnc [][]byte, src int, facts []agentctx.Facts, scratch []byte) (enc []byte, own bool, err error) {
	switch {
	case src >= 0 && src < len(inEnc) && inEnc[src] != nil:
		return inEnc[src], false, nil
	case src >= 0 && src < len(in):
		enc, err := in[src].AppendJSON(nil)
		if err == nil {
			inEnc[src] = enc
		}
		return enc, false, err
	case facts != nil && facts[j].Encoding != nil:
		return facts[j].Encoding, false, nil
	}
	enc, err = out[j].AppendJSON(scratch[:0])
	return enc, true, err
}

// facts returns the facts of the cut's tail, given those of the whole
// history (nil when not known): the restored block's message has none.
func (c *compactionCut) facts(all []agentctx.Facts) []agentctx.Facts {
	if len(all) != c.at+len(c.tail) {
		return nil
	}
	tail := all[c.at:]
	if c.restored {
		tail = append([]agentctx.Facts{{}}, tail[1:]...)
	}
	return tail
}

// joinSources returns the sources of the list join makes from what the
// Engine prepared for the cut history (p.Sources index the tail): the
// prefix's are not known (-1: compared by encoding), the tail's are the
// Engine's, moved past the prefix; the restored block's message is not the
// request's. nil when the Engine gave none.
func (c *compactionCut) joinSources(p *Prepared) []int {
	tail := p.Sources
	if p.Unchanged || p.Messages == nil {
		tail = identitySources(len(c.tail))
	}
	if tail == nil || (!p.Unchanged && p.Messages != nil && len(tail) != len(p.Messages)) {
		return nil
	}
	src := make([]int, 0, len(c.prefix)+len(tail))
	for range c.prefix {
		src = append(src, -1)
	}
	for _, k := range tail {
		if k < 0 || k == 0 && c.restored {
			k = -1
		} else {
			k += c.at
		}
		src = append(src, k)
	}
	return src
}

// identitySources returns the sources of n messages kept as they came.
func identitySources(n int) []int {
	src := make([]int, n)
	for i := range src {
		src[i] = i
	}
	return src
}

// breakpoints returns the number of cache_control breakpoints in message j
// to send.
func (a *alignment) breakpoints(j int) int {
	if a.outBreaks[j] < 0 {
		a.outBreaks[j] = countBreakpoints(a.outEnc[j])
	}
	return a.outBreaks[j]
}

// hash returns the msgHash of message j to send.
func (a *alignment) hash(j int) uint64 {
	if a.outHash[j] == 0 {
		a.outHash[j] = msgHash(a.outEnc[j])
	}
	return a.outHash[j]
}

// encodeAll encodes each message.
func encodeAll(msgs []agentctx.Message) ([][]byte, error) {
	out := make([][]byte, len(msgs))
	for i := range msgs {
		enc, err := msgs[i].AppendJSON(nil)
		if err != nil {
			return nil, err
		}
		out[i] = enc
	}
	return out, nil
}

// replaceMember returns raw with the value of its top-level member value
// (a subslice of raw) replaced by repl.
func replaceValue(raw, value, repl []byte) []byte {
	off := offsetIn(raw, value)
	out := make([]byte, 0, len(raw)-len(value)+len(repl))
	out = append(out, raw[:off]...)
	out = append(out, repl...)
	return append(out, raw[off+len(value):]...)
}

// offsetIn returns the offset of sub within data; sub must be a subslice
// of data that kept its capacity (the rawjson scanner never trims it).
func offsetIn(data, sub []byte) int {
	return cap(data) - cap(sub)
}

// splicedParts returns the parts of the JSON array of the messages to
// send, read in place (rawjson.ArrayParts): the original bytes of every
// message matched to an input message, the encoding of the others.
func splicedParts(raw []byte, inRaw [][]byte, a *alignment) [][]byte {
	w := rawjson.NewArrayParts(raw)
	for j := range a.out {
		if k := a.match[j]; k >= 0 {
			w.Kept(inRaw[k])
		} else {
			w.New(a.outEnc[j])
		}
	}
	return w.Parts()
}

// withBlockMember returns b with a member set (added at the end when
// absent), through its lossless JSON.
func withBlockMember(b agentctx.Block, key string, value []byte) (agentctx.Block, error) {
	raw, err := b.MarshalJSON()
	if err != nil {
		return b, err
	}
	buf := rawjson.Set(raw, key, value)
	var nb agentctx.Block
	if err := nb.UnmarshalJSON(buf); err != nil {
		return b, err
	}
	return nb, nil
}

// span is a value inside a body and what replaces it: repl, or, when
// parts is not nil, the bytes of parts in order (read in place, not
// joined).
type span struct {
	value, repl []byte
	parts       [][]byte
}

// replaceParts returns raw with each span's value (a subslice of raw)
// replaced, as the parts of the body: raw's bytes between the spans and
// what replaces each. The spans must not overlap.
func replaceParts(raw []byte, spans ...span) sendBody {
	sort.Slice(spans, func(i, j int) bool { return offsetIn(raw, spans[i].value) < offsetIn(raw, spans[j].value) })
	b := sendBody{read: true, parts: make([][]byte, 0, 2*len(spans)+1)}
	at := 0
	for _, s := range spans {
		off := offsetIn(raw, s.value)
		b.add(raw[at:off])
		if s.parts != nil {
			for _, p := range s.parts {
				b.add(p)
			}
		} else {
			b.add(s.repl)
		}
		at = off + len(s.value)
	}
	b.add(raw[at:])
	return b
}

// appendMember returns b with a member key set to value at the end of its
// top-level object, as ctxedit.AppendMember writes it into the bytes
// (the last part with the closing brace split around it).
func appendMember(b sendBody, key string, value []byte) sendBody {
	for i := len(b.parts) - 1; i >= 0; i-- {
		p := b.parts[i]
		end := bytes.LastIndexByte(p, '}')
		if end < 0 {
			continue
		}
		mem := []byte{}
		if !emptyObjectBefore(b.parts[:i], p[:end]) {
			mem = append(mem, ',')
		}
		mem = rawjson.AppendString(mem, key)
		mem = append(mem, ':')
		mem = append(mem, value...)
		out := sendBody{read: true, parts: make([][]byte, 0, len(b.parts)+2)}
		for _, q := range b.parts[:i] {
			out.add(q)
		}
		out.add(p[:end])
		out.add(mem)
		out.add(p[end:])
		for _, q := range b.parts[i+1:] {
			out.add(q)
		}
		return out
	}
	return b
}

// emptyObjectBefore reports whether the bytes of parts then last, from
// the first '{' on, hold nothing but spaces (an object with no member
// yet, to which a member is added without a comma).
func emptyObjectBefore(parts [][]byte, last []byte) bool {
	open := false
	for _, p := range append(slices.Clip(parts), last) {
		if !open {
			i := bytes.IndexByte(p, '{')
			if i < 0 {
				continue
			}
			open, p = true, p[i+1:]
		}
		if len(bytes.TrimSpace(p)) > 0 {
			return false
		}
	}
	return true
}

// appendStripped appends the compact JSON of raw without any member named
// cache_control, at any depth (strings copied as written). With normalize,
// a "content" given as a string is written as the one text block the API
// reads it as: the form in which two prefixes are compared for signed
// thinking (breakpoints move between requests, and clients send the same
// content as a string or as a text block, without changing what the model
// read).
func appendStripped(dst, raw []byte, normalize bool) []byte {
	w := &strippedAppender{b: dst}
	writeStripped(w, raw, normalize)
	return w.b
}

// hashStripped returns hash64(appendStripped(nil, raw, true)) without
// writing the stripped form out: a large message is hashed as it is read.
func hashStripped(raw []byte) uint64 {
	w := strippedHashers.Get().(*strippedHasher[*maphash.Hash])
	w.h.SetSeed(hashSeed) // and reset
	writeStripped(w, raw, true)
	sum := w.h.Sum64()
	if cap(w.scratch) <= maxPooledScratch {
		strippedHashers.Put(w)
	}
	return sum
}

// strippedHashers are hashStripped's hashers: it escapes to the heap (it
// is written to through an interface), and a request of 100,000 small
// messages with string contents allocated one of ~180 bytes for each
// (issue 24, item 7).
var strippedHashers = sync.Pool{New: func() any { return &strippedHasher[*maphash.Hash]{h: new(maphash.Hash)} }}

// maxPooledScratch bounds the scratch buffer of a pooled hasher: one that
// hashed a huge value is left to the collector.
const maxPooledScratch = 64 << 10

// strippedWriter receives the stripped form of a value (see
// writeStripped) in pieces.
type strippedWriter interface {
	lit(s string)       // JSON punctuation
	raw(b []byte)       // bytes as they are
	str(s string)       // s as a JSON string (rawjson.AppendString)
	compact(raw []byte) // a JSON value, compacted (rawjson.AppendCompact)
}

// strippedAppender appends to b.
type strippedAppender struct{ b []byte }

func (w *strippedAppender) lit(s string)       { w.b = append(w.b, s...) }
func (w *strippedAppender) raw(b []byte)       { w.b = append(w.b, b...) }
func (w *strippedAppender) str(s string)       { w.b = rawjson.AppendString(w.b, s) }
func (w *strippedAppender) compact(raw []byte) { w.b = rawjson.AppendCompact(w.b, raw) }

// strippedHasher hashes what it receives, the small pieces through a
// scratch buffer; a string token, compact as written, is hashed in place.
type strippedHasher[H io.Writer] struct {
	h       H
	scratch []byte
}

func (w *strippedHasher[H]) lit(s string) {
	w.scratch = append(w.scratch[:0], s...)
	w.h.Write(w.scratch)
}
func (w *strippedHasher[H]) raw(b []byte) { w.h.Write(b) }
func (w *strippedHasher[H]) str(s string) {
	w.scratch = rawjson.AppendString(w.scratch[:0], s)
	w.h.Write(w.scratch)
}
func (w *strippedHasher[H]) compact(raw []byte) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		w.h.Write(raw) // a string token: AppendCompact copies it as it is
		return
	}
	w.scratch = rawjson.AppendCompact(w.scratch[:0], raw)
	w.h.Write(w.scratch)
}

// writeStripped writes the stripped form of raw (see appendStripped) to w.
func writeStripped(w strippedWriter, raw []byte, normalize bool) {
	switch rawjson.Kind(raw) {
	case '{':
		var buf [8]rawjson.Member // split on the stack: a message hashes without garbage
		ms, err := rawjson.AppendMembers(buf[:0], raw)
		if err != nil {
			w.compact(raw)
			return
		}
		w.lit("{")
		first := true
		for _, m := range ms {
			if m.Key == "cache_control" {
				continue
			}
			if !first {
				w.lit(",")
			}
			first = false
			w.str(m.Key)
			w.lit(":")
			if normalize && m.Key == "content" && rawjson.Kind(m.Value) == '"' {
				w.lit(`[{"type":"text","text":`)
				w.raw(m.Value)
				w.lit("}]")
				continue
			}
			writeStripped(w, m.Value, normalize)
		}
		w.lit("}")
		return
	case '[':
		var buf [8][]byte
		els, err := rawjson.AppendElements(buf[:0], raw)
		if err != nil {
			w.compact(raw)
			return
		}
		w.lit("[")
		for i, el := range els {
			if i > 0 {
				w.lit(",")
			}
			writeStripped(w, el, normalize)
		}
		w.lit("]")
		return
	}
	w.compact(raw)
}
