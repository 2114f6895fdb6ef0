package pipeline

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/agentctx/agentctx"
)

// memo remembers a compaction: the first n messages of a history, of which
// the first h are kept (the leading system messages), were replaced by
// summary. It is immutable once made.
type memo struct {
	n, h    int
	digest  [sha256.Size]byte // of the history's first n messages
	summary agentctx.Message
	archive string // the archive of the messages summarized last
}

// covered returns the number of messages the summary stands for.
func (m *memo) covered() int { return m.n - m.h }

// apply returns hist with its first n messages, the kept head aside,
// replaced by the summary. hist is not modified.
func (m *memo) apply(hist []agentctx.Message) []agentctx.Message {
	out := make([]agentctx.Message, 0, m.h+1+len(hist)-m.n)
	out = append(out, hist[:m.h]...)
	out = append(out, m.summary)
	return append(out, hist[m.n:]...)
}

// digestOf hashes the lossless JSON of msgs, each message length-prefixed.
func digestOf(msgs []agentctx.Message) ([sha256.Size]byte, bool) {
	h := sha256.New()
	var buf []byte
	var n [8]byte
	for i := range msgs {
		var err error
		buf, err = msgs[i].AppendJSON(buf[:0])
		if err != nil {
			return [sha256.Size]byte{}, false
		}
		binary.LittleEndian.PutUint64(n[:], uint64(len(buf)))
		h.Write(n[:])
		h.Write(buf)
	}
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d, true
}

// reuse returns the remembered compaction when hist begins with exactly the
// messages it summarized and has more after them; nil otherwise.
func (p *Pipeline) reuse(hist []agentctx.Message) *memo {
	if p.opts.Stateless {
		return nil
	}
	p.mu.Lock()
	m := p.memo
	p.mu.Unlock()
	if m == nil || len(hist) <= m.n || leadingSystem(hist[:m.n]) != m.h {
		return nil
	}
	if d, ok := digestOf(hist[:m.n]); !ok || d != m.digest {
		return nil
	}
	return m
}

// remember records a compaction that replaced list[h:t] by summary, where
// list is hist with prev applied (or hist itself when prev is nil).
func (p *Pipeline) remember(hist []agentctx.Message, prev *memo, h, t int, summary agentctx.Message, archive string) {
	if p.opts.Stateless {
		return
	}
	n := t
	if prev != nil {
		if prev.h != h || t < h+1 {
			return
		}
		n = prev.n + t - (h + 1)
	}
	if n > len(hist) || n <= h {
		return
	}
	d, ok := digestOf(hist[:n])
	if !ok {
		return
	}
	m := &memo{n: n, h: h, digest: d, summary: summary, archive: archive}
	p.mu.Lock()
	p.memo = m
	p.mu.Unlock()
}
