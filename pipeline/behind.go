package pipeline

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	"github.com/agentctx/agentctx"
)

// A request is behind its session when its history is no longer than the
// part a compaction summarized and is the start of it: a retry, a
// regenerate, or a request sent alongside a longer one of the same
// session. The summary cannot stand for it (it would be the whole request,
// its last turn and pending tool calls gone), so the request is prepared
// from its own messages, and the session's compaction is left in place for
// the longer history.
//
// A compaction keeps the digests of the last maxMarks prefixes of the
// history it summarized (compactionState.Marks) to recognise a shorter
// request as such a start; a request shorter than those, or whose start
// differs, is a history that went another way, and the compaction is
// dropped.

// maxMarks is how many prefix digests a compaction keeps: requests that
// many messages behind it are recognised.
const maxMarks = 64

// markSize is the bytes of SHA-256 a mark keeps.
const markSize = 8

// prefixMarks returns the marks of the prefixes of msgs of lengths from to
// len(msgs)-1: mark k-from is the digestOf msgs[:k] cut to markSize bytes.
func prefixMarks(msgs []agentctx.Message, from int) ([]string, bool) {
	from = max(from, 1)
	if from >= len(msgs) {
		return nil, true
	}
	marks := make([]string, 0, len(msgs)-from)
	h := sha256.New()
	var buf []byte
	var n [8]byte
	var d [sha256.Size]byte
	for i := range msgs {
		if i >= from {
			h.Sum(d[:0])
			marks = append(marks, hex.EncodeToString(d[:markSize]))
		}
		var err error
		buf, err = appendDigestForm(buf[:0], &msgs[i])
		if err != nil {
			return nil, false
		}
		binary.LittleEndian.PutUint64(n[:], uint64(len(buf)))
		h.Write(n[:])
		h.Write(buf)
	}
	return marks, true
}

// startOf reports whether hist, no longer than what cs summarized, is the
// start of that history. The call asks for its input as repaired and as
// sent: a request that ends in a tool call, answered by repair, is still
// the start of the longer history, where the call was answered.
func (c *call) startOf(cs *compactionState, hist []agentctx.Message) bool {
	switch from := cs.N - len(cs.Marks); {
	case len(hist) == cs.N:
		d, ok := c.p.prefixDigest(hist)
		return ok && hexDigest(d) == cs.Digest
	case len(hist) == 0 || len(hist) > cs.N || len(hist) < from || from < 0:
		return false
	default:
		d, ok := digestOf(hist)
		return ok && hex.EncodeToString(d[:markSize]) == cs.Marks[len(hist)-from]
	}
}
