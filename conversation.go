package agentctx

import (
	"encoding/binary"
	"encoding/hex"
	"hash/maphash"
)

// Conversation is a list of messages with what is known of each one: the
// value that carries a request's history from the layer that decoded it
// (the proxy, the SDK middleware, the CLI) through the pipeline, so that no
// layer derives again what an earlier one knew, and none needs to know
// whether two messages are one value in memory. Messages are told apart by
// their content (Facts.Hash): a copy of a message, or the same message
// decoded again from the same bytes, has the same facts.
//
// Facts is nil (nothing known) or as long as Messages: Facts[i] is of
// Messages[i]. A step that replaces a message replaces its facts; a
// message left as it was keeps them. Neither slice is modified by the
// functions that take a Conversation.
type Conversation struct {
	Messages []Message
	Facts    []Facts
}

// Facts are what is known of one message. They depend on its content
// alone.
type Facts struct {
	// Encoding is the message's lossless JSON (Message.AppendJSON), nil
	// when not kept. It is shared: never modify it.
	Encoding []byte
	// Hash identifies the encoding (HashEncoding); the zero Hash means
	// not known.
	Hash Hash
	// Tokens is the message's token count by the counter of whoever set
	// it (a pipeline sets it in the facts it returns), 0 when not known.
	Tokens int
}

// Hash identifies a message's encoding within one process: 128 bits of
// two independently seeded hashes. Equal encodings have equal hashes;
// different encodings have different hashes but with a negligible chance.
// The seeds are chosen when the process starts, so a Hash must never be
// stored or sent to another process.
type Hash [2]uint64

// hashSeeds seed HashEncoding for the life of the process (never changed).
var hashSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// HashEncoding returns the Hash of a message's encoding. Its result is
// never the zero Hash.
func HashEncoding(enc []byte) Hash {
	h := Hash{maphash.Bytes(hashSeeds[0], enc), maphash.Bytes(hashSeeds[1], enc)}
	if h == (Hash{}) {
		h[0] = 1
	}
	return h
}

// IsZero reports whether h is the zero Hash (not known).
func (h Hash) IsZero() bool { return h == Hash{} }

// String returns h in hexadecimal, for logs and tests.
func (h Hash) String() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], h[0])
	binary.BigEndian.PutUint64(b[8:], h[1])
	return hex.EncodeToString(b[:])
}

// FactsOf returns the facts of m that its encoding gives: the encoding
// and its hash.
func FactsOf(m Message) (Facts, error) {
	enc, err := m.AppendJSON(nil)
	if err != nil {
		return Facts{}, err
	}
	return Facts{Encoding: enc, Hash: HashEncoding(enc)}, nil
}

// HashOf returns the Hash of m's encoding, encoding it into scratch
// (which may be nil), and scratch grown to hold the encoding, for the
// next call to reuse.
func HashOf(m Message, scratch []byte) (Hash, []byte, error) {
	enc, err := m.AppendJSON(scratch[:0])
	if err != nil {
		return Hash{}, scratch, err
	}
	return HashEncoding(enc), enc, nil
}

// EncodesAs reports whether m's encoding (Message.AppendJSON) is exactly
// enc, without writing it out: it is when m was decoded from enc, written
// compactly, and not changed since. What it compares at once goes into
// scratch (which may be nil), returned for the next call to reuse: a few
// kilobytes at most, since large strings and values are compared in place
// (checking a message that holds a large tool result allocates nothing of
// its size). It returns the error AppendJSON would.
func EncodesAs(m Message, enc, scratch []byte) (bool, []byte, error) {
	if want := min(len(enc), checkAt); cap(scratch) < want {
		scratch = make([]byte, 0, want)
	}
	e := encoder{buf: scratch[:0], mode: modePreserve, checking: true, against: enc}
	m.encode(&e)
	if e.err != nil {
		return false, scratch, e.err
	}
	e.check()
	return !e.differs && e.matched == len(enc), e.buf[:0], nil
}

// NewConversation returns a Conversation of msgs with every message's
// hash known (its encoding is made to hash it, then dropped).
func NewConversation(msgs []Message) (Conversation, error) {
	facts := make([]Facts, len(msgs))
	var scratch []byte
	for i := range msgs {
		h, buf, err := HashOf(msgs[i], scratch)
		if err != nil {
			return Conversation{}, err
		}
		facts[i].Hash, scratch = h, buf
	}
	return Conversation{Messages: msgs, Facts: facts}, nil
}

// Fact returns the facts known of message i (none when Facts is nil).
func (c Conversation) Fact(i int) Facts {
	if i < len(c.Facts) {
		return c.Facts[i]
	}
	return Facts{}
}
