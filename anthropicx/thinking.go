package anthropicx

import (
	"encoding/json"
	"hash/maphash"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/lib/ctxedit"
	"github.com/agentctx/agentctx/internal/lib/sdkmw"
	"github.com/agentctx/agentctx/internal/lib/thinking"
	"github.com/agentctx/agentctx/pipeline"
)

// thinkingOn reports whether a request turns extended thinking on: its
// "thinking" member is an object whose "type" is not "disabled". It reads
// the member of the decoded document (the last one of a repeated key, as
// the proxy reads it), not the body, which is not split again.
func thinkingOn(doc *agentctx.Document) bool {
	t, ok := doc.Member("thinking")
	if !ok || rawjson.Kind(t) != '{' {
		return false
	}
	return rawjson.Unquote(rawjson.Get(t, "type")) != "disabled"
}

// maxThinkingKeys bounds what a middleware remembers of thinking blocks.
const maxThinkingKeys = 4096

// thinkingMemory is what one middleware remembers of the thinking blocks
// of its loop, for thinking.Fix: the prefix each block was produced after.
//
// The middleware does not read the answers' blocks; it infers: the
// thinking of an assistant message that was not in the previous request
// (the loop appended it since) was produced after the messages that
// request sent. This holds for a loop that sends its requests one at a
// time, the shape of an agent loop on one Pipeline (one session). A block
// it cannot place is taken to be bound to the client's own history before
// its message.
type thinkingMemory struct {
	mu    sync.Mutex
	seed  maphash.Seed
	canon map[uint64]uint64 // by the hash of a message's encoding: its hash in the compared form
	known map[string]thinking.Prefix
	keys  []string // known's keys, oldest first

	sent      bool            // a request went
	lastIn    int             // the number of the client's messages it held
	lastChain thinking.Prefix // the prefix of the messages it sent

	// native delegates the clearing of results already sent before a
	// thinking block to Anthropic's context editing (NativeMiddleware);
	// lastOut and lastOutHash are the messages the last request sent.
	native      bool
	lastOut     []agentctx.Message
	lastOutHash []uint64
	// Native compaction (the proxy's, see internal/lib/ctxedit): asked is
	// what the request that asked the API to compact sent, until its block
	// comes back; prefix is the messages before the last compaction
	// block, as that request sent them.
	asked, prefix []agentctx.Message
}

// compactionCut is NativeMiddleware's sdkmw.Provider.Cut: the pipeline
// reads the history from the last compaction block on, as the API does.
func compactionCut(doc *agentctx.Document) int { return ctxedit.CompactionIndex(doc.Messages) }

// summaryText returns the text of the pipeline's compaction summary in
// msgs, or "".
func summaryText(msgs []agentctx.Message) string {
	for i := range msgs {
		if msgs[i].Role != agentctx.RoleUser {
			continue
		}
		var t string
		if msgs[i].Content.IsText() {
			t = msgs[i].Content.Text()
		} else if bs := msgs[i].Content.Blocks(); len(bs) > 0 {
			t = bs[0].Text
		}
		if strings.HasPrefix(t, compact.SummaryTitle) {
			return t
		}
	}
	return ""
}

func newThinkingMemory() *thinkingMemory {
	return &thinkingMemory{seed: maphash.MakeSeed(), canon: map[uint64]uint64{}, known: map[string]thinking.Prefix{}}
}

// Known implements thinking.Memory; mu is held by the caller (finish).
func (m *thinkingMemory) Known(key string) (thinking.Prefix, bool) {
	h, ok := m.known[key]
	return h, ok
}

// Sent implements thinking.Memory: the middleware never asks for
// drop_block, so it never keeps a block it knows is invalid.
func (m *thinkingMemory) Sent(string) (thinking.Prefix, bool) { return 0, false }

func (m *thinkingMemory) remember(key string, h thinking.Prefix) {
	if _, ok := m.known[key]; ok || key == "" {
		return
	}
	m.known[key] = h
	m.keys = append(m.keys, key)
	if len(m.keys) > maxThinkingKeys {
		delete(m.known, m.keys[0])
		m.keys = m.keys[1:]
	}
}

// hash hashes a message in the form prefixes are compared in: without
// cache_control (breakpoints move without changing what the model read)
// and with string content read as the one text block it stands for.
func (m *thinkingMemory) hash(msg *agentctx.Message) uint64 { return m.hashKnown(msg, nil) }

// hashKnown is hash given the message's encoding, when known (nil: it is
// made).
func (m *thinkingMemory) hashKnown(msg *agentctx.Message, enc []byte) uint64 {
	if enc == nil {
		var err error
		if enc, err = msg.AppendJSON(nil); err != nil {
			return 0
		}
	}
	raw := maphash.Bytes(m.seed, enc)
	if h, ok := m.canon[raw]; ok {
		return h
	}
	h := m.canonicalHash(enc)
	if len(m.canon) >= maxThinkingKeys*4 {
		clear(m.canon) // a loop's messages come back every request: the memo refills
	}
	m.canon[raw] = h
	return h
}

// canonicalHash hashes a message's encoding in the form prefixes are
// compared in (see hash).
func (m *thinkingMemory) canonicalHash(enc []byte) uint64 {
	var v any
	if json.Unmarshal(enc, &v) != nil {
		return maphash.Bytes(m.seed, enc)
	}
	if o, ok := v.(map[string]any); ok {
		if s, ok := o["content"].(string); ok {
			o["content"] = []any{map[string]any{"type": "text", "text": s}}
		}
	}
	canon, err := json.Marshal(stripCacheControl(v)) // map keys sorted
	if err != nil {
		return maphash.Bytes(m.seed, enc)
	}
	return maphash.Bytes(m.seed, canon)
}

func stripCacheControl(v any) any {
	switch x := v.(type) {
	case map[string]any:
		delete(x, "cache_control")
		for k, e := range x {
			x[k] = stripCacheControl(e)
		}
	case []any:
		for i, e := range x {
			x[i] = stripCacheControl(e)
		}
	}
	return v
}

// finish applies thinking.Fix to the messages the pipeline prepared: the
// thinking of an ended turn whose prefix an edit changed is removed (the
// documented way to keep older turns after trimming), so that no block the
// API judges invalid is sent. The open turn's thinking is kept: the
// pipeline does not edit the messages it binds (CallOptions.Bound).
func (m *thinkingMemory) finish(req *http.Request, _ []byte, doc *agentctx.Document, res *pipeline.Result, known sdkmw.Known) (map[string][]byte, []int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	in := doc.Messages
	if m.sent {
		m.rememberAnswered(in)
	}
	inHash := make([]uint64, len(in))
	byHash := make(map[uint64]int, len(in))
	inChain := make([]thinking.Prefix, len(in)+1)
	for j := range in {
		inHash[j] = m.hashKnown(&in[j], known.Fact(j).Encoding)
		byHash[inHash[j]] = j
		inChain[j+1] = inChain[j].Next(inHash[j])
	}
	out := slices.Clone(agentctx.StripMetadata(res.Messages))
	var compactEdits [][]byte // the compaction edit asked or declared
	instr := ""
	if m.native {
		out, compactEdits, instr = m.nativeCompaction(in, out, res)
	}
	var sources []int // of out: see sdkmw.Provider.Finish
	if !m.native && len(known.Sources) == len(out) {
		sources = slices.Clone(known.Sources)
	}
	outHash := make([]uint64, len(out))
	for j := range out {
		var enc []byte
		if !m.native {
			enc = known.Encoding(j) // out is res.Messages stripped
		}
		outHash[j] = m.hashKnown(&out[j], enc)
	}
	on := thinkingOn(doc)
	members := m.contextManagement(req, doc, res, in, out, outHash, on, instr, compactEdits)
	if instr != "" {
		m.asked = out
	}
	first := len(out)
	for j := range out {
		if j >= len(in) || outHash[j] != inHash[j] {
			first = j
			break
		}
	}
	_, err := thinking.Fix(thinking.List{
		Messages:     out,
		FirstChanged: first,
		Hash:         func(j int) uint64 { return outHash[j] },
		Client: func(j int) (thinking.Prefix, bool) {
			k, ok := byHash[outHash[j]]
			if !ok {
				return 0, false
			}
			return inChain[k], true
		},
		Replace: func(j int, msg agentctx.Message) error {
			out[j] = msg
			if sources != nil {
				sources[j] = -1
			}
			outHash[j] = m.hash(&out[j])
			return nil
		},
	}, m, on)
	if err != nil {
		return nil, nil, err
	}
	// A DropBlock verdict would need the request's thinking controls; the
	// binding leaves none to give here (an invalid block of the open turn
	// or of a message of nothing but thinking is sent as it is).
	var chain thinking.Prefix
	for _, h := range outHash {
		chain = chain.Next(h)
	}
	m.sent, m.lastIn, m.lastChain = true, len(in), chain
	m.lastOut, m.lastOutHash = out, outHash
	res.Messages = out
	return members, sources, nil
}

// rememberAnswered remembers the thinking of the assistant messages of in
// appended since the last request: they answered it, so their thinking
// was produced after what it sent.
func (m *thinkingMemory) rememberAnswered(in []agentctx.Message) {
	for j := m.lastIn; j < len(in); j++ {
		if in[j].Role != agentctx.RoleAssistant {
			continue
		}
		for _, b := range in[j].Content.Blocks() {
			if k := thinking.Key(b); k != "" {
				m.remember(k, m.lastChain)
			}
		}
	}
}

// nativeCompaction handles the API's own compaction, given the client's
// messages in and the pipeline's out: the messages before the client's
// compaction block go first (as the request that asked for it sent them),
// and when the pipeline compacted, the API is asked to compact instead.
// It returns the messages to send, the compaction edits to add to the
// request's context_management, and the instructions asked (empty when
// none).
func (m *thinkingMemory) nativeCompaction(in, out []agentctx.Message, res *pipeline.Result) ([]agentctx.Message, [][]byte, string) {
	var compactEdits [][]byte
	instr := ""
	k := ctxedit.CompactionIndex(in)
	if k >= 0 && m.asked != nil && len(m.asked) == k {
		m.prefix = m.asked // the block came back after what that request sent
	}
	m.asked = nil
	tail := in
	if k > 0 {
		tail = in[k:]
		prefix := in[:k]
		if len(m.prefix) == k {
			prefix = ctxedit.AsSent(prefix, m.prefix)
		}
		out = append(slices.Clone(prefix), out...)
	}
	full := append(slices.Clone(out[:len(out)-len(res.Messages)]), agentctx.StripMetadata(tail)...)
	if msgs := ctxedit.Uncompacted(full, m.lastOut); compacted(res) && res.Report.TokensBefore >= ctxedit.MinCompactTrigger*11/10 && msgs != nil {
		// The API compacts instead, after its prefix check: the
		// messages go as the last request sent them, then the new
		// ones, the pipeline's pointers in the instructions (it
		// archived and stored the originals).
		instr = ctxedit.Instructions(summaryText(out))
		out = msgs
		compactEdits = append(compactEdits, ctxedit.CompactEdit(ctxedit.MinCompactTrigger, instr))
	} else if k >= 0 {
		compactEdits = append(compactEdits, ctxedit.CompactEdit(ctxedit.DeclaredTrigger, ""))
	}
	return out, compactEdits, instr
}

// contextManagement returns the request members to replace: a
// context_management holding the clear edit of the tool uses the server
// is to clear (native, thinking on) and the compaction edits, with the
// betas they need added to req; nil when there is neither.
func (m *thinkingMemory) contextManagement(req *http.Request, doc *agentctx.Document, res *pipeline.Result, in, out []agentctx.Message, outHash []uint64, on bool, instr string, compactEdits [][]byte) map[string][]byte {
	var members map[string][]byte
	if m.native && on && (!compacted(res) || instr != "") {
		held := m.hold(out, outHash)
		from := max(ctxedit.CompactionIndex(out), 0) // the server clears in what it reads
		if edit := ctxedit.ClearEdit(out[from:], ctxedit.ClearedIDs(in, out, held, nil)); edit != nil && instr == "" {
			cm, _ := doc.Member("context_management")
			members = map[string][]byte{"context_management": ctxedit.WithEdit(cm, edit)}
			if req != nil && !hasBeta(req.Header, ctxedit.Beta) {
				req.Header.Add("anthropic-beta", ctxedit.Beta)
			}
		}
	}
	if compactEdits != nil {
		cm, _ := doc.Member("context_management")
		if members != nil {
			cm = members["context_management"]
		}
		members = map[string][]byte{"context_management": ctxedit.WithEdit(cm, compactEdits...)}
		if req != nil && !hasBeta(req.Header, ctxedit.CompactBeta) {
			req.Header.Add("anthropic-beta", ctxedit.CompactBeta)
		}
	}
	return members
}

// compacted reports whether the pipeline compacted the request.
func compacted(res *pipeline.Result) bool {
	s := res.Report.Step(pipeline.StepCompact)
	return s != nil && s.Compact != nil && s.Compact.Compacted
}

// hold puts back, before the last thinking block, each message of tool
// results the pipeline changed since the last request sent it, as it was
// sent (the proxy's holdEdits): the change goes as a context-management
// edit instead, which the API applies after the prefix check. It returns
// the ids of the tool calls whose results were held; it stops at the first
// changed message that is not such a held edit.
func (m *thinkingMemory) hold(out []agentctx.Message, outHash []uint64) []string {
	lt := -1
	for j := len(out) - 1; j >= 0; j-- {
		if thinking.Has(&out[j]) {
			lt = j
			break
		}
	}
	var held []string
	for j := 0; j < lt && j < len(m.lastOut); j++ {
		if outHash[j] == m.lastOutHash[j] {
			continue
		}
		ids, prev := ctxedit.ToolResultIDs(&out[j]), ctxedit.ToolResultIDs(&m.lastOut[j])
		if ids == nil || !ctxedit.EqualStrings(ids, prev) {
			break
		}
		ob, pb := out[j].Content.Blocks(), m.lastOut[j].Content.Blocks()
		for i := range ob {
			if !ctxedit.SameBlock(ob[i], pb[i]) {
				held = append(held, ob[i].ToolUseID)
			}
		}
		out[j], outHash[j] = m.lastOut[j], m.lastOutHash[j]
	}
	return held
}

func hasBeta(h http.Header, beta string) bool {
	for _, v := range h.Values("anthropic-beta") {
		for _, b := range strings.Split(v, ",") {
			if strings.TrimSpace(b) == beta {
				return true
			}
		}
	}
	return false
}
