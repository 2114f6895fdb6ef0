package proxy

import (
	"bytes"
	"slices"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/lib/thinking"
)

// MaxBreakpoints is the most cache_control breakpoints the Anthropic API
// accepts in one request (system, tools and messages together).
const MaxBreakpoints = 4

// prefixHash is a running hash of a list of messages, from the hash of
// each message in its stripped form (see msgHash): the prefix a signed
// thinking block was produced after (thinking.Prefix).
type prefixHash = thinking.Prefix

var stringContent = []byte(`"content":"`)

// canonical returns enc in the form prefixes are compared in (see
// appendStripped); enc itself when it is already in it.
func canonical(enc []byte) []byte {
	if !bytes.Contains(enc, cacheKey) && !bytes.Contains(enc, stringContent) {
		return enc
	}
	return appendStripped(nil, enc, true)
}

// msgHash hashes a message's encoding in the form prefixes are compared
// in.
func msgHash(enc []byte) uint64 {
	if !bytes.Contains(enc, cacheKey) && !bytes.Contains(enc, stringContent) {
		return hash64(enc)
	}
	return hashStripped(enc) // hash64(canonical(enc)), not written out
}

// hashesOf returns the msgHash of each encoding, taking the ones known
// (non-zero in known, which may be shorter or nil) as they are.
func hashesOf(encs [][]byte, known []uint64) []uint64 {
	hs := make([]uint64, len(encs))
	for j, e := range encs {
		if j < len(known) && known[j] != 0 {
			hs[j] = known[j]
		} else {
			hs[j] = msgHash(e)
		}
	}
	return hs
}

// thinkingKey is what identifies a thinking block: its signature, or the
// data of a redacted_thinking block.
func thinkingKey(b agentctx.Block) string { return thinking.Key(b) }

func isThinking(b agentctx.Block) bool { return thinking.IsBlock(b) }

func hasThinking(m *agentctx.Message) bool { return thinking.Has(m) }

// openTurn returns the index of the assistant message whose turn is still
// open (followed only by messages of tool results), or -1.
func openTurn(msgs []agentctx.Message) int { return thinking.OpenTurn(msgs) }

func onlyToolResults(m *agentctx.Message) bool { return thinking.OnlyToolResults(m) }

// thinkingVerdict is what fixThinking decided.
type thinkingVerdict = thinking.Verdict

const (
	thinkingOK   = thinking.Valid     // send the edited request
	thinkingDrop = thinking.DropBlock // send the edited request asking the API to drop invalid blocks
)

// ThinkingBindingBeta is the beta that enables the thinking block_binding
// controls, and DropBlock the prefix_mismatch_behavior the proxy asks for
// when no request it can send would pass the prefix check.
const (
	ThinkingBindingBeta = "thinking-binding-controls-2026-08-01"
	DropBlock           = "drop_block"
)

// fixThinking applies the signed-thinking prefix rule (thinking.Fix, the
// implementation anthropicx shares) to the messages the proxy is about to
// send: a block the proxy relayed is bound to the prefix it recorded then
// (th), one it never saw to the client's own history before its message.
// The proxy asks for drop_block (thinkingDrop) where the rule keeps an
// invalid block: the open turn after an edit it could not place elsewhere,
// and a block sent last time after the same prefix (removing it now would
// change a message the provider has cached, and with it the prefix of
// every later block). The thinking of a turn is therefore removed only in
// a request whose prefix before it changed anyway (a prune batch or a
// compaction), and stays removed.
func fixThinking(inEnc [][]byte, inHash []uint64, a *alignment, th thinking.Memory, thinkingOn bool, digests *stableHashes) (thinkingVerdict, error) {
	var inChain []prefixHash // inChain[k]: prefix of input message k
	return thinking.Fix(thinking.List{
		Messages:     a.out,
		FirstChanged: a.firstChanged,
		Hash:         func(j int) uint64 { return digests.of(a.hash(j), a.outEnc[j]) },
		Client: func(j int) (prefixHash, bool) {
			if a.match[j] < 0 {
				return 0, false
			}
			if inChain == nil {
				inChain = make([]prefixHash, 0, len(inHash)+1)
				var h prefixHash
				inChain = append(inChain, h)
				for k, m := range inHash {
					h = h.Next(digests.of(m, inEnc[k]))
					inChain = append(inChain, h)
				}
			}
			return inChain[a.match[j]], true
		},
		Replace: func(j int, m agentctx.Message) error {
			enc, err := m.AppendJSON(nil)
			if err != nil {
				return err
			}
			if !a.ownOut {
				// a.out may be the request's messages, which the decode
				// cache keeps: never written into.
				a.out, a.ownOut = slices.Clone(a.out), true
			}
			a.out[j] = m
			a.outEnc[j], a.outHash[j], a.outBreaks[j], a.match[j] = enc, 0, -1, -1
			return nil
		},
	}, th, thinkingOn)
}

// withDropBlock returns the thinking object with
// block_binding.prefix_mismatch_behavior set to drop_block.
func withDropBlock(thinking []byte) []byte {
	return rawjson.Set(thinking, "block_binding", []byte(`{"prefix_mismatch_behavior":"`+DropBlock+`"}`))
}

var cacheKey = []byte(`"cache_control":`)

// countBreakpoints counts the cache_control members with a value other than
// null in compact JSON (a key can only appear outside strings there, whose
// quotes are escaped).
func countBreakpoints(parts ...[]byte) int {
	n := 0
	for _, p := range parts {
		for i := 0; ; {
			k := bytes.Index(p[i:], cacheKey)
			if k < 0 {
				break
			}
			i += k + len(cacheKey)
			if !bytes.HasPrefix(p[i:], []byte("null")) {
				n++
			}
		}
	}
	return n
}

// hourBreakpoint reports whether a cache_control of enc (an encoded
// message) asks for the 1-hour TTL: the bytes "ttl":"1h" elsewhere (a tool
// call's arguments) are not a breakpoint's.
func hourBreakpoint(enc []byte) bool {
	for i := 0; ; {
		k := bytes.Index(enc[i:], cacheKey)
		if k < 0 {
			return false
		}
		i += k + len(cacheKey)
		end, err := rawjson.ValueEnd(enc, rawjson.SkipSpace(enc, i))
		if err != nil {
			return false
		}
		if bytes.Contains(enc[i:end], []byte(`"ttl":"1h"`)) {
			return true
		}
		i = end
	}
}

// addBreakpoint puts a cache_control breakpoint at the end of the last
// edited message when the request holds fewer than MaxBreakpoints, so the
// new, stable prefix is cached from this request on. The client's own
// breakpoints stay where their content stays. The breakpoint takes a 1h
// TTL when a later breakpoint has one (a 5m breakpoint may not precede a
// 1h one). It reports whether it added one.
func addBreakpoint(a *alignment, system, tools []byte) bool {
	n := countBreakpoints(system, tools)
	for j := range a.outEnc {
		n += a.breakpoints(j)
	}
	if n >= MaxBreakpoints {
		return false
	}
	// The last edited message that has a block to carry it (the last
	// message has the client's own), or the last message itself when it
	// is the engine's, with none of the client's: a summary of
	// everything (an open tool loop with signed thinking), whose text
	// becomes a text block to carry it. Without it nothing after the
	// tools is cached, and the request after the summary pays its whole
	// history uncached again.
	last, first := len(a.out)-1, len(a.out)-2
	if last >= 0 && a.match[last] < 0 && a.breakpoints(last) == 0 && a.out[last].Content.IsText() {
		m := a.out[last].WithContent(agentctx.BlockList(agentctx.TextBlock(a.out[last].Content.Text())))
		if enc, err := m.AppendJSON(nil); err == nil {
			a.out[last], a.outEnc[last], a.outHash[last], a.outBreaks[last] = m, enc, 0, -1
			first = last
		}
	}
	j, bi := -1, -1
	for k := first; k >= 0 && j < 0; k-- {
		if a.match[k] >= 0 {
			continue
		}
		blocks := a.out[k].Content.Blocks()
		for i := len(blocks) - 1; i >= 0; i-- {
			if !isThinking(blocks[i]) {
				j, bi = k, i
				break
			}
		}
	}
	if j < 0 {
		return false
	}
	blocks := a.out[j].Content.Blocks()
	if _, ok := blocks[bi].Field("cache_control"); ok {
		return false
	}
	cc := []byte(`{"type":"ephemeral"}`)
	for k := j + 1; k < len(a.outEnc); k++ {
		if a.breakpoints(k) > 0 && hourBreakpoint(a.outEnc[k]) {
			cc = []byte(`{"type":"ephemeral","ttl":"1h"}`)
			break
		}
	}
	nb, err := withBlockMember(blocks[bi], "cache_control", cc)
	if err != nil {
		return false
	}
	m := a.out[j].WithBlock(bi, nb)
	enc, err := m.AppendJSON(nil)
	if err != nil {
		return false
	}
	a.out[j], a.outEnc[j], a.outHash[j], a.outBreaks[j] = m, enc, 0, -1
	return true
}
