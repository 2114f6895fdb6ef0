package proxy

import (
	"bytes"
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"sync"

	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// One session per conversation. A client's session id (SessionKey: the
// x-claude-code-session-id header, metadata.user_id, prompt_cache_key,
// X-Agentctx-Session, other clients' session headers) may be shared by
// several conversations: Claude Code's subagents (its Task tool) and side
// requests send the main conversation's id, and two conversations that
// start alike hash to one fallback key. A conversation of another history would drop the
// compaction of the one it shares the session with (the pipeline prepares
// a request whose history does not continue the session's compaction from
// its own messages), and the main conversation would compact again, a
// billed summary and a cache break each time.
//
// So the Server tells the conversations under a session key apart by how
// they open: the hash of their start (the system prompt, any system or
// developer messages before the first user message, and the first user
// message) and, once a request carries it, the hash of their first reply
// (the element after the first user message). The first conversation seen
// under a key keeps the key; each other one gets the key and a suffix
// derived from its opening ("<key>-c<hex>"). The registry is in memory and
// bounded: maxConversations, least recently used forgotten first, about
// 280 bytes each under keys of 36 characters (18 MB when full, measured).
// A restart forgets it: the first conversation seen again under a key
// keeps the key.

// maxConversations bounds the conversations the registry remembers; the
// least recently used are forgotten first.
const maxConversations = 1 << 16

// openingHash is the hash of a conversation's start or first reply.
type openingHash [16]byte

// conversations is the Server's registry of the conversations seen under
// each session key (Server.convs), in memory.
type conversations struct {
	mu     sync.Mutex
	max    int                        // 0 means maxConversations
	lru    list.List                  // of *knownConversation, most recent first
	byBase map[string][]*list.Element // scope (session key) → its conversations
}

// knownConversation is one conversation of the registry.
type knownConversation struct {
	scope   string // its entry in conversations.byBase
	start   openingHash
	reply   openingHash
	replied bool   // reply is known
	key     string // the conversation's session key
}

// key returns the session key of the conversation under base that opens
// with start (and, when replied, reply):
//   - a known conversation of that start and reply keeps its key;
//   - a request with its first reply continues a conversation of that
//     start whose reply was not known yet (its first request's session is
//     carried over);
//   - a request without a reply yet continues a conversation of that start
//     whose reply is not known yet;
//   - anything else is a new conversation: base itself when it is the
//     first under base, else base and a suffix of its opening.
//
// scope names the registry's entry (the session key, within its tenant).
func (c *conversations) key(scope, base string, start, reply openingHash, replied bool) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byBase == nil {
		c.byBase = make(map[string][]*list.Element)
	}
	known := c.byBase[scope]
	var pending *list.Element // the most recent conversation of start without its reply
	for i := len(known) - 1; i >= 0; i-- {
		kc := known[i].Value.(*knownConversation)
		if kc.start != start {
			continue
		}
		if replied && kc.replied && kc.reply == reply {
			c.lru.MoveToFront(known[i])
			return kc.key
		}
		if !kc.replied && pending == nil {
			pending = known[i]
		}
	}
	if pending != nil {
		kc := pending.Value.(*knownConversation)
		kc.reply, kc.replied = reply, replied
		c.lru.MoveToFront(pending)
		return kc.key
	}
	kc := &knownConversation{scope: scope, start: start, reply: reply, replied: replied, key: base}
	if len(known) > 0 {
		kc.key = suffixedKey(base, start, reply, replied, known)
	}
	c.byBase[scope] = append(known, c.lru.PushFront(kc))
	max := c.max
	if max <= 0 {
		max = maxConversations
	}
	for c.lru.Len() > max {
		c.forget(c.lru.Back())
	}
	return kc.key
}

// suffixedKey returns the key of a conversation that is not the first
// under base: base and a suffix derived from its opening, and from the
// count of the keys taken where two conversations open alike.
func suffixedKey(base string, start, reply openingHash, replied bool, known []*list.Element) string {
	taken := func(k string) bool {
		for _, e := range known {
			if e.Value.(*knownConversation).key == k {
				return true
			}
		}
		return false
	}
	for n := 0; ; n++ {
		s := sha256.New()
		s.Write(start[:])
		if replied {
			s.Write(reply[:])
		}
		if n > 0 {
			s.Write([]byte(strconv.Itoa(n)))
		}
		k := base + "-c" + hex.EncodeToString(s.Sum(nil)[:4])
		if !taken(k) {
			return k
		}
	}
}

// forget removes a conversation from the registry.
func (c *conversations) forget(e *list.Element) {
	kc := c.lru.Remove(e).(*knownConversation)
	known := c.byBase[kc.scope]
	for i := range known {
		if known[i] == e {
			known = append(known[:i], known[i+1:]...)
			break
		}
	}
	if len(known) == 0 {
		delete(c.byBase, kc.scope)
	} else {
		c.byBase[kc.scope] = known
	}
}

// len returns the number of conversations remembered.
func (c *conversations) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// conversationKey returns the session key of a request: its SessionKey
// (sessionKey), told apart by conversation (conversations.key). With
// Options.Tenants, the conversations are told apart within the tenant.
func (s *Server) conversationKey(h http.Header, b *body) string {
	base, _ := sessionKey(h, b)
	scope := base
	if s.opts.Tenants {
		if t, ok := Tenant(h); ok {
			scope = t + "\x00" + base
		}
	}
	o := openingOf(b)
	return s.convs.key(scope, base, o.startHash(), o.replyHash(), o.reply != nil)
}

// opening is what every request of a conversation repeats of its start.
type opening struct {
	system []byte   // the system prompt (system, or instructions), nil when none
	before [][]byte // the system and developer messages before the first user message
	first  []byte   // the first user message's content; a string input itself
	// reply is the element after the first user message when another
	// follows it (the first reply, answered: a request that ends on it
	// is a prefill, which the reply it asks for extends), else nil.
	reply []byte
}

// openingOf returns the opening of a body's conversation (messages,
// input, or Gemini's contents, whose system prompt is systemInstruction
// and whose messages hold parts; a content without a role is the user's).
func openingOf(b *body) opening {
	o := opening{system: b.get("system")}
	if o.system == nil {
		o.system = b.get("instructions")
	}
	list, contents := b.get("messages"), false
	if list == nil {
		list = b.get("input")
	}
	if list == nil {
		list, contents = b.get("contents"), true
		if o.system == nil {
			o.system = b.get("systemInstruction")
		}
		if o.system == nil {
			o.system = b.get("system_instruction")
		}
	}
	if rawjson.Kind(list) == '"' {
		o.first = list
		return o
	}
	var elems [][]byte
	if b.scan != nil && len(list) > 0 && len(b.get(b.scan.Member)) > 0 && &list[0] == &b.get(b.scan.Member)[0] {
		elems = b.scan.Items // split already
	} else if rawjson.Kind(list) == '[' {
		elems = leadingElements(list)
	}
	for i, el := range elems {
		role := stringOf(rawjson.Get(el, "role"))
		if role == "system" || role == "developer" {
			o.before = append(o.before, el)
			continue
		}
		if contents && (role == "user" || role == "") {
			o.first = orNull(rawjson.Get(el, "parts"))
			if i+2 < len(elems) {
				o.reply = elems[i+1]
			}
			break
		}
		if role == "user" {
			o.first = orNull(rawjson.Get(el, "content"))
			if i+2 < len(elems) {
				o.reply = elems[i+1]
			}
			break
		}
	}
	return o
}

// leadingElements splits the start of a raw JSON array: its elements up
// to two past the first whose role is user (what openingOf reads), not the
// rest of a long history. A malformed array gives what precedes the fault.
func leadingElements(list []byte) [][]byte {
	var out [][]byte
	user := -1
	for i := rawjson.SkipSpace(list, rawjson.SkipSpace(list, 0)+1); i < len(list) && list[i] != ']'; {
		end, err := rawjson.ValueEnd(list, i)
		if err != nil {
			return out
		}
		el := list[i:end]
		out = append(out, el)
		if user < 0 && stringOf(rawjson.Get(el, "role")) == "user" {
			user = len(out) - 1
		}
		if user >= 0 && len(out) > user+2 {
			return out
		}
		i = rawjson.SkipSpace(list, end)
		if i < len(list) && list[i] == ',' {
			i = rawjson.SkipSpace(list, i+1)
		}
	}
	return out
}

// startHash hashes the opening's start: the system prompt, the messages
// before the first user message and the first user message, unmarked.
func (o opening) startHash() openingHash {
	s := sha256.New()
	var buf []byte
	buf = unmarked(buf[:0], orNull(o.system))
	s.Write(buf)
	s.Write([]byte{0})
	for _, el := range o.before {
		buf = unmarked(buf[:0], el)
		s.Write(buf)
		s.Write([]byte{0})
	}
	if o.first != nil {
		buf = unmarkedContent(buf[:0], o.first)
		s.Write(buf)
	}
	var h openingHash
	copy(h[:], s.Sum(nil))
	return h
}

// replyHash hashes the opening's first reply, unmarked and without its
// thinking blocks (which a client may leave out of earlier turns); the
// zero hash when there is none.
func (o opening) replyHash() openingHash {
	var h openingHash
	if o.reply == nil {
		return h
	}
	form := unmarked(nil, o.reply)
	if content := rawjson.Get(form, "content"); rawjson.Kind(content) == '[' {
		if els, err := rawjson.Elements(content); err == nil {
			kept := make([][]byte, 0, len(els))
			for _, el := range els {
				switch stringOf(rawjson.Get(el, "type")) {
				case "thinking", "redacted_thinking":
					continue
				}
				kept = append(kept, el)
			}
			form = rawjson.Set(form, "content", append(append([]byte{'['}, bytes.Join(kept, []byte{','})...), ']'))
		}
	}
	sum := sha256.Sum256(form)
	copy(h[:], sum[:])
	return h
}

// clientMarks are the members clients add to and remove from a message
// between requests of one conversation without changing what the model
// reads: opencode, Kilo and Continue mark the first user message with
// cache_control only while it is the last message (and the first reply
// while it is among the last two); opencode and Kilo mark the same
// messages with copilot_cache_control, GitHub Copilot's own mark, on a
// Copilot provider.
var clientMarks = [...]string{"cache_control", "copilot_cache_control"}

// unmarked appends the canonical JSON (rawjson.AppendCanonical) of a raw
// value without clientMarks members, at any depth. A value without them
// is appended as AppendCanonical appends it.
func unmarked(dst, raw []byte) []byte {
	if !hasMark(raw) {
		return rawjson.AppendCanonical(dst, raw)
	}
	switch rawjson.Kind(raw) {
	case '{':
		ms, err := rawjson.Members(raw)
		if err != nil {
			return rawjson.AppendCanonical(dst, raw)
		}
		dst = append(dst, '{')
		first := true
	members:
		for _, m := range ms {
			for _, k := range clientMarks {
				if m.Key == k {
					continue members
				}
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = rawjson.AppendCanonical(dst, m.RawKey)
			dst = append(dst, ':')
			dst = unmarked(dst, m.Value)
		}
		return append(dst, '}')
	case '[':
		els, err := rawjson.Elements(raw)
		if err != nil {
			return rawjson.AppendCanonical(dst, raw)
		}
		dst = append(dst, '[')
		for i, el := range els {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = unmarked(dst, el)
		}
		return append(dst, ']')
	}
	return rawjson.AppendCanonical(dst, raw)
}

func hasMark(raw []byte) bool {
	for _, k := range clientMarks {
		if bytes.Contains(raw, []byte(k)) {
			return true
		}
	}
	return false
}

// unmarkedContent appends a message content unmarked, a list of one text
// block as the string it holds: a client that marks a message with
// cache_control sends a string content as a text block to carry it.
func unmarkedContent(dst, content []byte) []byte {
	start := len(dst)
	dst = unmarked(dst, content)
	if rawjson.Kind(content) != '[' {
		return dst
	}
	els, err := rawjson.Elements(dst[start:])
	if err != nil || len(els) != 1 || rawjson.Kind(els[0]) != '{' {
		return dst
	}
	ms, err := rawjson.Members(els[0])
	if err != nil || len(ms) != 2 {
		return dst
	}
	var typ, text []byte
	for _, m := range ms {
		switch m.Key {
		case "type":
			typ = m.Value
		case "text":
			text = m.Value
		}
	}
	if t := stringOf(typ); (t == "text" || t == "input_text") && rawjson.Kind(text) == '"' {
		text = append([]byte(nil), text...)
		return append(dst[:start], text...)
	}
	return dst
}
