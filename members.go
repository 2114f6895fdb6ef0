package agentctx

import (
	"fmt"

	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// member is one JSON object member as it was decoded. Known members are
// mirrored by a typed field of the owning struct; the typed field is the
// truth, and raw is reused on output only while the typed value still equals
// what was decoded. Unknown members are written back exactly as they came.
type member struct {
	key    string
	rawKey []byte // key token as written; nil for members added by code
	raw    []byte // value as written (or as set by code)
	str    string // decoded original value of a known string member
	flags  memberFlags
}

type memberFlags uint8

const (
	known    memberFlags = 1 << iota // mirrored by a typed field
	isString                         // raw is a string token and str holds its value
	injected                         // added by a reader (Claude Code record timestamp)
	// canonicalToken: a string member whose token, rawjson.AppendString
	// of str, is not kept (raw is nil; see DecodeOwnedMessage).
	canonicalToken
	// dropped: a content member whose JSON is not kept: the decoded
	// blocks hold it all (raw is nil; see DecodeOwnedMessage).
	dropped
	// boolToken: a boolean typed member (is_error) whose token is not
	// kept: the field holds it all (raw is nil; see DecodeOwnedMessage).
	boolToken
)

// encMode selects how values are written.
type encMode uint8

const (
	// modePreserve writes every unchanged value byte for byte (compacted).
	modePreserve encMode = iota
	// modeCanonical writes what JavaScript's JSON.stringify would write for
	// the decoded value: this is the form characters are counted on.
	modeCanonical
)

// encoder accumulates JSON output and the first error.
//
// An encoder that checks (EncodesAs) keeps no output: it compares what it
// writes with the bytes it is checked against, a few kilobytes at a time,
// and large strings and values in place, without writing them.
type encoder struct {
	buf          []byte
	mode         encMode
	skipInjected bool // leave out members injected by a reader
	err          error

	checking bool   // compare the output with against instead of keeping it
	against  []byte // what the output is checked against
	matched  int    // bytes of against the output matched so far
	differs  bool   // the output differs from against
}

// checkAt is how many bytes an encoder that checks holds before it
// compares them, and the size from which it compares a string or a value
// in place.
const checkAt = 4 << 10

// check compares the bytes buf holds with the next bytes of against and
// empties buf; past a difference it only empties buf.
func (e *encoder) check() {
	e.compare(e.buf)
	e.buf = e.buf[:0]
}

// compare matches p with the next bytes of against.
func (e *encoder) compare(p []byte) {
	if e.differs {
		return
	}
	rest := e.against[e.matched:]
	if len(rest) < len(p) || string(rest[:len(p)]) != string(p) {
		e.differs = true
		return
	}
	e.matched += len(p)
}

// wrote checks buf once it holds checkAt bytes, when the encoder checks.
func (e *encoder) wrote() {
	if e.checking && len(e.buf) >= checkAt {
		e.check()
	}
}

// write appends p; an encoder that checks compares a large p in place.
func (e *encoder) write(p []byte) {
	if e.checking && len(p) >= checkAt {
		e.check()
		e.compare(p)
		return
	}
	e.buf = append(e.buf, p...)
	e.wrote()
}

func (e *encoder) fail(format string, args ...any) {
	if e.err == nil {
		e.err = fmt.Errorf(format, args...)
	}
}

// key writes a separator (unless first) and a member key.
func (e *encoder) key(first *bool, m *member, key string) {
	if !*first {
		e.buf = append(e.buf, ',')
	}
	*first = false
	if m != nil && m.rawKey != nil && e.mode == modePreserve {
		e.buf = append(e.buf, m.rawKey...)
	} else {
		e.buf = rawjson.AppendString(e.buf, key)
	}
	e.buf = append(e.buf, ':')
}

// str writes a string value, reusing the original token while unchanged.
func (e *encoder) str(m *member, cur string) {
	if e.mode == modePreserve && m != nil && m.flags&isString != 0 && m.str == cur && m.flags&canonicalToken == 0 {
		e.write(m.raw)
		return
	}
	if e.checking && len(cur) >= checkAt {
		e.check()
		if !e.differs {
			n, ok := rawjson.StringPrefix(e.against[e.matched:], cur)
			e.matched, e.differs = e.matched+n, !ok
		}
		return
	}
	e.buf = rawjson.AppendString(e.buf, cur)
	e.wrote()
}

// raw writes a raw JSON value: compacted in preserve mode, canonical otherwise.
func (e *encoder) raw(v []byte) {
	switch {
	case e.checking && len(v) >= checkAt: // only in preserve mode
		if !e.differs {
			rawjson.CompactRuns(v, e.write)
		}
	case e.mode == modePreserve:
		e.buf = rawjson.AppendCompact(e.buf, v)
		e.wrote()
	default:
		e.buf = rawjson.AppendCanonical(e.buf, v)
	}
}

func (e *encoder) boolean(v bool) {
	if v {
		e.buf = append(e.buf, "true"...)
	} else {
		e.buf = append(e.buf, "false"...)
	}
}

// decodeMembers splits raw into members and marks the ones whose key is
// claimed by decodeKnown, which returns false when the value has a type the
// typed field cannot hold (the member then stays opaque and is written back
// as it came).
//
// The list is taken from a (see memberArena); nil: allocated.
func decodeMembers(raw []byte, a *memberArena, decodeKnown func(m *member) bool) ([]member, error) {
	var buf [8]rawjson.Member // split on the stack: only the members kept are allocated
	ms, err := rawjson.AppendMembers(buf[:0], raw)
	if err != nil {
		return nil, err
	}
	out := a.take(len(ms))
	for i, m := range ms {
		out[i] = member{key: m.Key, rawKey: m.RawKey, raw: m.Value}
		if decodeKnown(&out[i]) {
			out[i].flags |= known
		}
	}
	return out, nil
}

// memberArena hands out the member lists of one message being decoded
// from a buffer an OwnedDecoder reuses from message to message: most
// lists, once owned, are a shared shape (sharedMembers) and the others are
// copied out (OwnedDecoder.Decode), so decoding many small messages makes
// no list only to let it go.
type memberArena struct{ buf []member }

// take returns a list of n members (every one to be set by the caller);
// a nil arena allocates it.
func (a *memberArena) take(n int) []member {
	if a == nil {
		return make([]member, n)
	}
	if n == 0 {
		return []member{} // not nil, as make's: a decoded object, however empty
	}
	if cap(a.buf)-len(a.buf) < n {
		a.buf = make([]member, 0, max(2*cap(a.buf), n, 64)) // the lists handed out before keep the old buffer
	}
	l := len(a.buf)
	a.buf = a.buf[:l+n]
	return a.buf[l : l+n : l+n]
}

// reset makes the whole buffer free again: no list handed out may be in
// use any more.
func (a *memberArena) reset() { a.buf = a.buf[:0] }

// opaqueMembers returns scanned members as members no typed field claims.
func opaqueMembers(ms []rawjson.Member) []member {
	out := make([]member, len(ms))
	for i, m := range ms {
		out[i] = member{key: m.Key, rawKey: m.RawKey, raw: m.Value}
	}
	return out
}

// decodeString fills m.str when m.raw is a string token.
func decodeString(m *member) (string, bool) {
	if rawjson.Kind(m.raw) != '"' {
		return "", false
	}
	m.str = rawjson.Unquote(m.raw)
	m.flags |= isString
	return m.str, true
}

// findMember returns the last member with the key, or nil.
func findMember(ms []member, key string) *member {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].key == key {
			return &ms[i]
		}
	}
	return nil
}

// hasKnown reports whether a known member with the key exists.
func hasKnown(ms []member, key string) bool {
	m := findMember(ms, key)
	return m != nil && m.flags&known != 0
}

// withMember returns a copy of ms with the member for key set to raw
// (replacing the last one with that key, else appended). ms is not modified.
func withMember(ms []member, key string, raw []byte) []member {
	out := make([]member, len(ms), len(ms)+1)
	copy(out, ms)
	for i := len(out) - 1; i >= 0; i-- {
		if out[i].key == key {
			out[i] = member{key: key, rawKey: out[i].rawKey, raw: raw}
			return out
		}
	}
	return append(out, member{key: key, raw: raw})
}

// withoutMembers returns a copy of ms without the members whose key is in keys.
func withoutMembers(ms []member, keys ...string) []member {
	out := make([]member, 0, len(ms))
next:
	for _, m := range ms {
		for _, k := range keys {
			if m.key == k {
				continue next
			}
		}
		out = append(out, m)
	}
	return out
}
