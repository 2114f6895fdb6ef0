package pipeline

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"sync"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// digestOf hashes the lossless JSON of msgs, each message length-prefixed.
func digestOf(msgs []agentctx.Message) ([sha256.Size]byte, bool) {
	d, _, ok := prefixHashes(msgs, nil, len(msgs))
	return d, ok
}

// prefixHashes returns, in one pass over msgs, their digestOf and the
// marks of their prefixes of lengths from to len(msgs)-1
// (compactionState.Marks: mark k-from is the digestOf msgs[:k] cut to
// markSize bytes). facts, when as long as msgs, are theirs: a message
// whose encoding is known is hashed from it, not encoded again (it is
// what Message.AppendJSON writes, so the digest is the same).
func prefixHashes(msgs []agentctx.Message, facts []agentctx.Facts, from int) ([sha256.Size]byte, []string, bool) {
	from = max(from, 1)
	var marks []string
	if from < len(msgs) {
		marks = make([]string, 0, len(msgs)-from)
	}
	h := sha256.New()
	var scratch, stripped []byte
	var n [8]byte
	var d [sha256.Size]byte
	known := len(facts) == len(msgs)
	for i := range msgs {
		if i >= from {
			h.Sum(d[:0])
			marks = append(marks, hex.EncodeToString(d[:markSize]))
		}
		var enc []byte
		if known && facts[i].Encoding != nil {
			enc = facts[i].Encoding
		} else {
			var err error
			if scratch, err = msgs[i].AppendJSON(scratch[:0]); err != nil {
				return [sha256.Size]byte{}, nil, false
			}
			enc = scratch
		}
		var form []byte
		form, stripped = digestForm(enc, stripped)
		binary.LittleEndian.PutUint64(n[:], uint64(len(form)))
		h.Write(n[:])
		h.Write(form)
	}
	h.Sum(d[:0])
	return d, marks, true
}

func hexDigest(d [sha256.Size]byte) string { return hex.EncodeToString(d[:]) }

// prefixMemo remembers the digest of the history prefix a session's
// compaction stands for, with the hashes of the messages it was computed
// from (agentctx.Hash): the next call, whose history starts with messages
// of the same content (however they were made or decoded), reuses it
// instead of encoding and hashing the prefix again. It keeps no message.
type prefixMemo struct {
	mu     sync.Mutex
	hashes []agentctx.Hash
	digest [sha256.Size]byte
}

// prefixDigest is digestOf through the memo; facts are those of msgs
// (their hashes known: a message without one is never found in the memo).
func (p *Pipeline) prefixDigest(msgs []agentctx.Message, facts []agentctx.Facts) ([sha256.Size]byte, bool) {
	d, _, ok := p.prefixDigestMarks(msgs, facts, len(msgs))
	return d, ok
}

// prefixDigestMarks is prefixDigest with the marks of the prefixes of
// msgs from from on (prefixHashes), computed in the same pass; the memo
// answers only when no mark is asked for.
func (p *Pipeline) prefixDigestMarks(msgs []agentctx.Message, facts []agentctx.Facts, from int) ([sha256.Size]byte, []string, bool) {
	m := &p.prefix
	known := len(facts) == len(msgs) && len(msgs) > 0
	for i := 0; known && i < len(facts); i++ {
		known = !facts[i].Hash.IsZero()
	}
	m.mu.Lock()
	if known && max(from, 1) >= len(msgs) && len(m.hashes) == len(msgs) {
		same := true
		for i := range facts {
			if facts[i].Hash != m.hashes[i] {
				same = false
				break
			}
		}
		if same {
			d := m.digest
			m.mu.Unlock()
			return d, nil, true
		}
	}
	m.mu.Unlock()
	d, marks, ok := prefixHashes(msgs, facts, from)
	if ok && known {
		hashes := make([]agentctx.Hash, len(facts))
		for i := range facts {
			hashes[i] = facts[i].Hash
		}
		m.mu.Lock()
		m.hashes, m.digest = hashes, d
		m.mu.Unlock()
	}
	return d, marks, ok
}

var cacheControlKey = []byte(`"cache_control"`)

// digestForm returns the form in which a message of encoding enc is
// hashed for the compaction digest and marks: its JSON without
// cache_control members, which clients move from message to message
// between requests without changing what the model reads (Claude Code
// marks the last message, which a compaction that summarizes the whole
// list covers). A message without one is hashed as it encodes; one with
// them is written into buf, which is returned for reuse.
func digestForm(enc, buf []byte) (form, scratch []byte) {
	if !bytes.Contains(enc, cacheControlKey) {
		return enc, buf
	}
	buf = appendWithout(buf[:0], enc, "cache_control")
	return buf, buf
}

// appendWithout appends the compact JSON of raw without the members named
// key, at any depth.
func appendWithout(dst, raw []byte, key string) []byte {
	switch rawjson.Kind(raw) {
	case '{':
		ms, err := rawjson.Members(raw)
		if err != nil {
			return rawjson.AppendCompact(dst, raw)
		}
		dst = append(dst, '{')
		first := true
		for _, m := range ms {
			if m.Key == key {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = append(dst, m.RawKey...)
			dst = append(dst, ':')
			dst = appendWithout(dst, m.Value, key)
		}
		return append(dst, '}')
	case '[':
		els, err := rawjson.Elements(raw)
		if err != nil {
			return rawjson.AppendCompact(dst, raw)
		}
		dst = append(dst, '[')
		for i, el := range els {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendWithout(dst, el, key)
		}
		return append(dst, ']')
	}
	return rawjson.AppendCompact(dst, raw)
}
