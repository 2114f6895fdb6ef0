package proxy

import (
	"sync"

	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// A client's own compaction request on an OpenAI API repeats the
// conversation it sent last with a summary instruction appended, but
// offers no tools: Codex's ("You are performing a CONTEXT CHECKPOINT
// COMPACTION", sent when its count of the context reaches
// model_auto_compact_token_limit) has "tools": [] and "parallel_tool_calls":
// false, the rest of its input unchanged. OpenAI's prompt cache matches the
// prompt as rendered from its start, and the tools are rendered before the
// conversation ("images and tools ... must be identical between requests",
// OpenAI's prompt caching guide): such a request shares nothing with the one
// before it past the first items and is billed whole at the uncached input
// price (costsim, Codex 0.169: about 163,000 uncached tokens, $0.20 a
// compaction, ten times the request before it).
//
// The proxy sends such a request with the tools of the session's last
// request that offered some, and "tool_choice": "none", so the model still
// cannot call a tool: the prompt is then that request's prefix followed by
// what is new, read from the cache. It does so only when the request's
// list of messages (Chat) or input items (Responses), as forwarded, starts
// with the whole list that request sent: the same conversation, one step
// on. Anthropic is left alone: there a change of tool_choice invalidates
// the cached messages (Anthropic's prompt caching guide), and Claude Code's
// compaction request keeps its tools anyway.
//
// Such a request is also marked for the Engine (Request.ClientSummary,
// pipeline.CallOptions.ClientSummary) when its list as the client wrote
// it starts with the whole list the session's last request with tools
// came with: its answer is the summary the client goes on from, so the
// tool results new in it (the model has never read them) are sent whole,
// not by reference. Only the OpenAI APIs' toolless requests are
// recognised: Claude Code's compaction request ("Your task is to create
// a detailed summary of the conversation so far") keeps its tools and
// differs from a step only by its instruction's text, which the proxy
// does not match.

// maxToolSets bounds the distinct tool lists kept (clients of one version
// share theirs); maxToolMemos the sessions remembered.
const (
	maxToolSets  = 64
	maxToolMemos = maxStatsSessions
)

// toolMemo is what a session keeps of its last request forwarded with
// tools: the tools' hash (their bytes are in toolMemos.sets) and the list
// it sent, as the length and hash of its bytes before the closing bracket;
// and the same of its list as read (the client's, before the Engine's
// edits: the same as sent when the list went as read).
type toolMemo struct {
	tools    uint64
	listLen  int
	listHash uint64
	readLen  int
	readHash uint64
}

// toolMemos are the sessions' toolMemo. The zero value is ready to use.
type toolMemos struct {
	mu       sync.Mutex
	sessions map[string]toolMemo
	sets     map[uint64][]byte
}

// listKey is the member of a body that holds the conversation on the
// OpenAI APIs; "" for the others.
func listKey(api API) string {
	switch api {
	case APIResponses:
		return "input"
	case APIChat:
		return "messages"
	}
	return ""
}

// toolless reports a body, split into its top-level members ms, that
// restore may give the session's tools: it offers none of its own and
// its tool_choice names no tool.
func toolless(ms []rawjson.Member) bool {
	for _, mb := range ms {
		switch mb.Key {
		case "tools":
			if hasTools(mb.Value) || rawjson.Kind(mb.Value) != '[' && rawjson.Kind(mb.Value) != 'n' {
				return false // tools of its own
			}
		case "tool_choice":
			if c := rawjson.Unquote(mb.Value); rawjson.Kind(mb.Value) != 'n' && c != "auto" && c != "none" {
				return false // a choice that names a tool
			}
		}
	}
	return true
}

// hasTools reports a tools value that lists at least one tool.
func hasTools(v []byte) bool {
	if rawjson.Kind(v) != '[' {
		return false
	}
	els, err := rawjson.Elements(v)
	return err == nil && len(els) > 0
}

// remember records body, forwarded for session on api and answered 200,
// when it offered tools; read is its list as the client sent it (nil: as
// forwarded).
func (m *toolMemos) remember(api API, session string, body, read []byte) {
	key := listKey(api)
	if key == "" || session == "" {
		return
	}
	ms, err := rawjson.Members(body)
	if err != nil {
		return
	}
	var tools, list []byte
	for _, mb := range ms {
		switch mb.Key {
		case "tools":
			tools = mb.Value
		case key:
			list = mb.Value
		}
	}
	m.rememberParts(api, session, tools, [][]byte{list}, read)
}

// rememberParts is remember given the body's (last) "tools" member and
// its list, as the parts of its bytes (the list an edit spliced, read in
// place: see sendBody), and the list as read (nil: as sent).
func (m *toolMemos) rememberParts(api API, session string, tools []byte, list [][]byte, read []byte) {
	n := partsLen(list)
	if listKey(api) == "" || session == "" || !hasTools(tools) || n < 2 || rawjson.Kind(firstPart(list)) != '[' {
		return
	}
	th := hash64(tools)
	memo := toolMemo{tools: th, listLen: n - 1, listHash: hashPrefix(list, n-1)}
	memo.readLen, memo.readHash = memo.listLen, memo.listHash
	if len(read) >= 2 && !sameBytes(read, list) { // edited: hashed once more
		memo.readLen, memo.readHash = len(read)-1, hash64(read[:len(read)-1])
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sessions == nil {
		m.sessions, m.sets = map[string]toolMemo{}, map[uint64][]byte{}
	}
	if _, ok := m.sets[th]; !ok {
		for k := range m.sets {
			if len(m.sets) < maxToolSets {
				break
			}
			delete(m.sets, k) // any one: its sessions no longer restore
		}
		m.sets[th] = append([]byte(nil), tools...)
	}
	if _, ok := m.sessions[session]; !ok {
		for k := range m.sessions {
			if len(m.sessions) < maxToolMemos {
				break
			}
			delete(m.sessions, k)
		}
	}
	m.sessions[session] = memo
}

// sameBytes reports whether parts is the one slice b, in place.
func sameBytes(b []byte, parts [][]byte) bool {
	return len(parts) == 1 && len(parts[0]) == len(b) && (len(b) == 0 || &parts[0][0] == &b[0])
}

// clientSummary reports whether a request of session on api that offers
// no tools (toolless), whose list is list as read, is the client's own
// compaction request: its list starts with the whole list the session's
// last request with tools was read with, then holds more (the same
// conversation, one step on, with the instruction appended).
func (m *toolMemos) clientSummary(api API, session string, list []byte) bool {
	if listKey(api) == "" || session == "" {
		return false
	}
	m.mu.Lock()
	memo, ok := m.sessions[session]
	m.mu.Unlock()
	return ok && len(list) > memo.readLen+1 && hash64(list[:memo.readLen]) == memo.readHash &&
		list[rawjson.SkipSpace(list, memo.readLen)] == ','
}

// remembers reports whether restore may restore a request of session
// on api: the memos hold its tools.
func (m *toolMemos) remembers(api API, session string) bool {
	if listKey(api) == "" || session == "" {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	memo, ok := m.sessions[session]
	return ok && m.sets[memo.tools] != nil
}

// restore returns body (to be forwarded for session on api) with the tools
// of the session's last request that offered some and "tool_choice":
// "none", when body offers no tools and its list starts with that
// request's whole list; else body itself. restored reports the change.
func (m *toolMemos) restore(api API, session string, body []byte) (out []byte, restored bool) {
	key := listKey(api)
	if key == "" || session == "" {
		return body, false
	}
	m.mu.Lock()
	memo, ok := m.sessions[session]
	tools := m.sets[memo.tools]
	m.mu.Unlock()
	if !ok || tools == nil {
		return body, false
	}
	ms, err := rawjson.Members(body)
	if err != nil {
		return body, false
	}
	if !toolless(ms) {
		return body, false
	}
	var list []byte
	for _, mb := range ms {
		if mb.Key == key {
			list = mb.Value
		}
	}
	// The same conversation, further on: the list sent last, then more.
	if len(list) <= memo.listLen+1 || hash64(list[:memo.listLen]) != memo.listHash ||
		list[rawjson.SkipSpace(list, memo.listLen)] != ',' {
		return body, false
	}
	out = make([]byte, 0, len(body)+len(tools)+32)
	out = append(out, '{')
	put := func(k string, v []byte) {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = rawjson.AppendString(out, k)
		out = append(out, ':')
		out = append(out, v...)
	}
	var sawTools, sawChoice bool
	for _, mb := range ms {
		switch mb.Key {
		case "tools":
			if !sawTools {
				put("tools", tools)
			}
			sawTools = true
		case "tool_choice":
			if !sawChoice {
				put("tool_choice", []byte(`"none"`))
			}
			sawChoice = true
		default:
			put(mb.Key, mb.Value)
		}
	}
	if !sawTools {
		put("tools", tools)
	}
	if !sawChoice {
		put("tool_choice", []byte(`"none"`))
	}
	return append(out, '}'), true
}
