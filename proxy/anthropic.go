package proxy

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/thinking"
)

// MaxBreakpoints is the most cache_control breakpoints the Anthropic API
// accepts in one request (system, tools and messages together).
const MaxBreakpoints = 4

// prefixHash is a running hash of a list of messages, from the hash of
// each message in its stripped form (see msgHash): the prefix a signed
// thinking block was produced after.
type prefixHash uint64

// chainSeed seeds the prefix hashes of one process (they are never stored).
var chainSeed = maphash.MakeSeed()

// next returns the hash of the prefix extended by a message of hash msg.
func (h prefixHash) next(msg uint64) prefixHash {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:], uint64(h))
	binary.LittleEndian.PutUint64(b[8:], msg)
	return prefixHash(maphash.Bytes(chainSeed, b[:]))
}

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

// chainOf returns the prefix hash of a whole list of messages, from their
// hashes.
func chainOf(hs []uint64) prefixHash {
	var h prefixHash
	for _, m := range hs {
		h = h.next(m)
	}
	return h
}

// thinkingKey is what identifies a thinking block: its signature, or the
// data of a redacted_thinking block.
func thinkingKey(b agentctx.Block) string {
	var raw []byte
	switch b.Type {
	case agentctx.BlockThinking:
		raw, _ = b.Field("signature")
	case agentctx.BlockRedactedThinking:
		raw, _ = b.Field("data")
	default:
		return ""
	}
	return stringOf(raw)
}

func isThinking(b agentctx.Block) bool { return thinking.IsBlock(b) }

func hasThinking(m *agentctx.Message) bool { return thinking.Has(m) }

// openTurn returns the index of the assistant message whose turn is still
// open (followed only by messages of tool results), or -1.
func openTurn(msgs []agentctx.Message) int { return thinking.OpenTurn(msgs) }

func onlyToolResults(m *agentctx.Message) bool { return thinking.OnlyToolResults(m) }

// thinkingVerdict is what fixThinking decided.
type thinkingVerdict int

const (
	thinkingOK   thinkingVerdict = iota // send the edited request
	thinkingDrop                        // send the edited request asking the API to drop invalid blocks
)

// ThinkingBindingBeta is the beta that enables the thinking block_binding
// controls, and DropBlock the prefix_mismatch_behavior the proxy asks for
// when no request it can send would pass the prefix check.
const (
	ThinkingBindingBeta = "thinking-binding-controls-2026-08-01"
	DropBlock           = "drop_block"
)

// fixThinking applies the signed-thinking prefix rule of Anthropic's
// preserved thinking ("prefix checks"): a thinking or redacted_thinking
// block is valid only when the system prompt, tools and messages before it
// are what they were when Claude produced it; after an edit the API
// rejects the request (400) or drops the block. The proxy never changes
// system or tools, so the rule is about messages.
//
// For each message to send at or after the first edited one that holds a
// thinking block, the prefix it was produced after is known (recorded by
// the proxy when it relayed the block: known) or, for a block the proxy
// never saw, taken to be the client's own history before the message. When
// the prefix now sent differs, the message's thinking blocks are removed,
// which is the documented way to keep older turns after trimming or
// summarizing ("remove the kept turns' thinking").
//
// The open turn (the last assistant message, followed only by tool
// results) must keep its thinking while extended thinking is on (the API
// requires the final assistant turn to start with it). When an edit
// changed its prefix, the verdict is thinkingDrop: the edited request goes
// with the documented control thinking.block_binding.
// prefix_mismatch_behavior = "drop_block", so the API drops the block
// instead of rejecting the request. (Sending the client's request unedited
// instead would postpone the engine's edits, which are sticky, to the end
// of an agentic loop that may run for hundreds of requests while the
// context grows past the window.) Nothing is ever changed inside a
// thinking block.
//
// A block the previous request sent whole, after the same prefix as now,
// is sent again as it was (with drop_block when it is invalid): removing
// it now would change a message the provider has cached, and with it the
// prefix of every later thinking block, so that each request would
// invalidate the next one's. The thinking of a turn is therefore removed
// only in a request whose prefix before it changed anyway (a prune batch
// or a compaction), and stays removed.
func fixThinking(inHash []uint64, a *alignment, th thinkingMemory, thinkingOn bool) (thinkingVerdict, error) {
	last := -1
	for j := a.firstChanged; j < len(a.out); j++ {
		if hasThinking(&a.out[j]) {
			last = j
		}
	}
	if last < 0 {
		return thinkingOK, nil
	}
	open := openTurn(a.out)
	inChain := make([]prefixHash, 0, len(inHash)+1) // inChain[k]: prefix of input message k
	var h prefixHash
	inChain = append(inChain, h)
	for _, m := range inHash {
		h = h.next(m)
		inChain = append(inChain, h)
	}
	verdict := thinkingOK
	var out prefixHash
	for j := 0; j <= last; j++ {
		m := &a.out[j]
		if j >= a.firstChanged && hasThinking(m) {
			valid, resent := true, true
			for _, b := range m.Content.Blocks() {
				if !isThinking(b) {
					continue
				}
				key := thinkingKey(b)
				want, ok := th.known(key)
				if !ok && a.match[j] >= 0 {
					want, ok = inChain[a.match[j]], true
				}
				if !ok || want != out {
					valid = false
				}
				if at, ok := th.sent(key); !ok || at != out {
					resent = false
				}
			}
			switch {
			case valid:
			case resent && thinkingOn:
				// Sent as it is after this very prefix last time: keep
				// the bytes the provider has cached; the API drops it.
				verdict = thinkingDrop
			case j == open && thinkingOn:
				// The engine's edits are sticky: sending the client's
				// request instead would only postpone them to every later
				// request of the loop, while the context grows. Keep the
				// block and let the API drop it.
				verdict = thinkingDrop
			default:
				kept := make([]agentctx.Block, 0, len(m.Content.Blocks()))
				for _, b := range m.Content.Blocks() {
					if !isThinking(b) {
						kept = append(kept, b)
					}
				}
				if len(kept) == 0 {
					verdict = thinkingDrop // nothing but thinking: keep it, the API drops it
					break
				}
				a.out[j] = m.WithContent(agentctx.BlockList(kept...))
				enc, err := a.out[j].AppendJSON(nil)
				if err != nil {
					return thinkingOK, err
				}
				a.outEnc[j], a.outHash[j], a.outBreaks[j], a.match[j] = enc, 0, -1, -1
			}
		}
		out = out.next(a.hash(j))
	}
	return verdict, nil
}

// thinkingMemory is what the proxy remembers of a session's thinking
// blocks, by thinkingKey: known, the prefix a block was produced after;
// sent, the prefix it was last sent after (whole, in its message).
type thinkingMemory interface {
	known(key string) (prefixHash, bool)
	sent(key string) (prefixHash, bool)
}

// withDropBlock returns the thinking object with
// block_binding.prefix_mismatch_behavior set to drop_block.
func withDropBlock(thinking []byte) []byte {
	return setMember(thinking, "block_binding", []byte(`{"prefix_mismatch_behavior":"`+DropBlock+`"}`))
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
	// message has the client's own).
	j, bi := -1, -1
	for k := len(a.out) - 2; k >= 0 && j < 0; k-- {
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
	for _, e := range a.outEnc[j+1:] {
		if bytes.Contains(e, []byte(`"ttl":"1h"`)) {
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
