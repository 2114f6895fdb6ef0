package thinking

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// Prefix is a running hash of a list of messages, chained from the hash of
// each message: the prefix a signed thinking block was produced after. The
// zero Prefix is the empty list. Next mixes with fixed constants (no
// per-process seed), so a Prefix chained from MessageDigest values is the
// same in every process: it may be stored in the session state, where the
// replicas of a proxy read it (pipeline.ThinkingEntry).
type Prefix uint64

// Next returns the prefix extended by a message whose hash is msg.
func (h Prefix) Next(msg uint64) Prefix {
	z := (uint64(h)+0x9e3779b97f4a7c15)*0xbf58476d1ce4e5b9 ^ msg
	// The finalizer of MurmurHash3.
	z ^= z >> 33
	z *= 0xff51afd7ed558ccd
	z ^= z >> 33
	z *= 0xc4ceb9fe1a85ec53
	z ^= z >> 33
	return Prefix(z)
}

// MessageDigest returns a message's hash that is the same in every process:
// the first 8 bytes of the SHA-256 of its encoding (in the form its
// caller compares prefixes in).
func MessageDigest(enc []byte) uint64 {
	sum := sha256.Sum256(enc)
	return binary.LittleEndian.Uint64(sum[:8])
}

// KeyDigest returns the digest of a block's Key that is stored in place of
// the key (a signature is hundreds of bytes): the first 8 bytes of its
// SHA-256.
func KeyDigest(key string) uint64 {
	sum := sha256.Sum256([]byte(key))
	return binary.LittleEndian.Uint64(sum[:8])
}

// Key returns what identifies a thinking block: its signature, or the data
// of a redacted_thinking block; "" for another block.
func Key(b agentctx.Block) string {
	var raw []byte
	switch b.Type {
	case agentctx.BlockThinking:
		raw, _ = b.Field("signature")
	case agentctx.BlockRedactedThinking:
		raw, _ = b.Field("data")
	default:
		return ""
	}
	if rawjson.Kind(raw) != '"' {
		return ""
	}
	return rawjson.Unquote(raw)
}

// Memory is what a caller remembers of a session's thinking blocks, by Key.
// Its methods may be called concurrently with the caller's own updates.
type Memory interface {
	// Known returns the prefix the block was produced after.
	Known(key string) (Prefix, bool)
	// Sent returns the prefix the block was last sent after, whole in its
	// message.
	Sent(key string) (Prefix, bool)
}

// NoMemory remembers nothing.
type NoMemory struct{}

// Known implements Memory.
func (NoMemory) Known(string) (Prefix, bool) { return 0, false }

// Sent implements Memory.
func (NoMemory) Sent(string) (Prefix, bool) { return 0, false }

// Verdict is what Fix decided.
type Verdict int

const (
	// Valid: send the messages as Fix left them.
	Valid Verdict = iota
	// DropBlock: a thinking block kept in the messages is invalid; send
	// them with thinking.block_binding.prefix_mismatch_behavior
	// "drop_block" (and its beta), or the API rejects the request.
	DropBlock
)

// List is a request's messages as Fix reads and edits them.
type List struct {
	// Messages are the messages to send. Fix never writes into them: a
	// message whose thinking blocks it removes is handed to Replace.
	Messages []agentctx.Message
	// FirstChanged is the index of the first message that differs from
	// the client's own history (len(Messages) when none does).
	FirstChanged int
	// Hash returns the hash of Messages[j] as it stands (after a
	// replacement by Fix too), in the form prefixes are compared in.
	Hash func(j int) uint64
	// Client, when set, returns the prefix the client's own history had
	// before Messages[j], when Messages[j] is the client's own message:
	// the prefix taken for a thinking block Memory does not know.
	Client func(j int) (Prefix, bool)
	// Replace stores m as the message j is now (the slice Messages may
	// be shared: a copy of it, say); Hash(j) is asked after it. Nil means
	// Messages[j] = m.
	Replace func(j int, m agentctx.Message) error
}

func (l *List) replace(j int, m agentctx.Message) error {
	if l.Replace == nil {
		l.Messages[j] = m
		return nil
	}
	return l.Replace(j, m)
}

// Fix applies the signed-thinking prefix rule of Anthropic's preserved
// thinking ("prefix checks") to the messages a caller is about to send
// after its own edits: a thinking or redacted_thinking block is valid only
// when the system prompt, tools and messages before it are what they were
// when Claude produced it. Callers never change system or tools, so the
// rule is about messages.
//
// For each message at or after FirstChanged that holds thinking, the prefix
// its blocks were produced after is mem.Known, or, for a block mem does
// not know, List.Client (none: the block is taken as invalid). When the
// prefix now sent differs, the message's thinking blocks are removed, the
// documented way to keep older turns after trimming or summarizing.
// Nothing is ever changed inside a thinking block, and a message of
// nothing but thinking keeps it.
//
// The verdict is DropBlock, and the block kept, in three cases: with
// thinkingOn, the open turn (the last assistant message followed only by
// tool results, which must keep its thinking while thinking is on; see
// Bound for how an edit avoids it); a block mem.Sent says went whole after
// this very prefix last time (removing it now would change a message the
// provider has cached, and with it the prefix of every later block, so
// each request would invalidate the next one's); and, thinking on or off,
// a message of nothing but thinking. Otherwise invalid blocks are removed.
//
// A caller that never asks for drop_block (anthropicx) gives a Memory
// whose Sent knows nothing, and binds its edits with Bound.
func Fix(l List, mem Memory, thinkingOn bool) (Verdict, error) {
	if mem == nil {
		mem = NoMemory{}
	}
	last := -1
	for j := max(l.FirstChanged, 0); j < len(l.Messages); j++ {
		if Has(&l.Messages[j]) {
			last = j
		}
	}
	if last < 0 {
		return Valid, nil
	}
	open := OpenTurn(l.Messages)
	verdict := Valid
	var out Prefix
	for j := 0; j <= last; j++ {
		m := &l.Messages[j]
		if j >= l.FirstChanged && Has(m) {
			valid, resent := true, true
			for _, b := range m.Content.Blocks() {
				if !IsBlock(b) {
					continue
				}
				key := Key(b)
				want, ok := mem.Known(key)
				if !ok && l.Client != nil {
					want, ok = l.Client(j)
				}
				if !ok || want != out {
					valid = false
				}
				if at, ok := mem.Sent(key); !ok || at != out {
					resent = false
				}
			}
			switch {
			case valid:
			case resent && thinkingOn:
				// Sent as it is after this very prefix last time: keep
				// the bytes the provider has cached; the API drops it.
				verdict = DropBlock
			case j == open && thinkingOn:
				verdict = DropBlock
			default:
				kept := make([]agentctx.Block, 0, len(m.Content.Blocks()))
				for _, b := range m.Content.Blocks() {
					if !IsBlock(b) {
						kept = append(kept, b)
					}
				}
				if len(kept) == 0 {
					verdict = DropBlock // nothing but thinking: keep it, the API drops it
					break
				}
				if err := l.replace(j, m.WithContent(agentctx.BlockList(kept...))); err != nil {
					return Valid, err
				}
			}
		}
		out = out.Next(l.Hash(j))
	}
	return verdict, nil
}
