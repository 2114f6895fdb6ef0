package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"sync"

	"github.com/agentctx/agentctx/internal/lib/thinking"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pricing"
)

// # The memory of signed thinking
//
// The prefix rule (fixThinking) needs, for each thinking block, the prefix
// it was produced after (the messages the proxy sent then, which differ
// from the client's history when the request was edited) and the prefix it
// was last sent after. An Engine that implements thinkingKeeper keeps this
// memory in the session state (pipeline.Observation,
// pipeline.Pipeline.Thinking): the blocks a request sent and the blocks its
// answer produced are recorded with the answer's usage, in one
// compare-and-swap, before the bytes that end the answer reach the client;
// the next request, served by this process or another replica over the
// same session store, is prepared with them. Prefixes are chained from
// message digests that are the same in every process
// (thinking.MessageDigest; stableHashes memoizes them by the process's own
// message hash), and blocks are named by the digest of their key.
//
// Any other Engine gets the process-local memory (localThinking, per
// session in the statistics table).

// thinkingKeeper is implemented by Engines that keep the thinking memory in
// the session state.
type thinkingKeeper interface {
	// keepsThinking reports whether the session state is kept at all (a
	// Stateless pipeline keeps none).
	keepsThinking() bool
	// thinkingMemory returns the session's memory as its last Prepare
	// (or record) left it; nil when none.
	thinkingMemory(sessionKey string) *pipeline.ThinkingMemory
	// record saves what an answer taught, with its usage when known.
	record(ctx context.Context, sessionKey string, o pipeline.Observation)
}

// keeper returns the Engine as a thinkingKeeper when it keeps the memory.
func (s *Server) keeper() thinkingKeeper {
	k, ok := s.opts.Engine.(thinkingKeeper)
	if !ok || !k.keepsThinking() {
		return nil
	}
	return k
}

// thinkingMemory returns the memory fixThinking reads for x's session.
func (s *Server) thinkingMemory(x *exchange) thinking.Memory {
	if k := s.keeper(); k != nil {
		return stateThinking{k.thinkingMemory(x.session)}
	}
	return &s.stats.get(x.session).thinking
}

// stateThinking is a session state's memory as a thinking.Memory.
type stateThinking struct{ m *pipeline.ThinkingMemory }

// Known implements thinking.Memory.
func (t stateThinking) Known(key string) (prefixHash, bool) {
	h, ok := t.m.Known(thinking.KeyDigest(key))
	return prefixHash(h), ok
}

// Sent implements thinking.Memory.
func (t stateThinking) Sent(key string) (prefixHash, bool) {
	h, ok := t.m.Sent(thinking.KeyDigest(key))
	return prefixHash(h), ok
}

// sentThinking computes the prefix of the messages x sends and of each
// thinking block in them, and remembers the blocks as sent after theirs:
// in x, recorded with the answer (a thinkingKeeper), or at once in the
// process-local memory.
func (s *Server) sentThinking(x *exchange) {
	var chain prefixHash
	var sent []pipeline.ThinkingEntry
	k := s.keeper()
	local := &s.stats.get(x.session).thinking
	for j, enc := range x.sentEnc {
		if j < len(x.sentMsgs) && hasThinking(&x.sentMsgs[j]) {
			for _, b := range x.sentMsgs[j].Content.Blocks() {
				if key := thinkingKey(b); key != "" {
					if k != nil {
						sent = append(sent, pipeline.ThinkingEntry{Key: thinking.KeyDigest(key), Prefix: uint64(chain)})
					} else {
						local.add(&local.sent, key, chain)
					}
				}
			}
		}
		chain = chain.Next(s.digests.of(x.sentHash[j], enc))
	}
	x.chain = &chain // the prefix of the answer's thinking (rememberThinking)
	x.thinkSent = sent
}

// rememberThinking records, for thinking blocks the upstream produced, the
// prefix they were produced after: every message sent.
func (s *Server) rememberThinking(x *exchange, keys []string) {
	if x.sentEnc == nil || !x.thinkingOn || x.session == "" {
		return
	}
	if x.chain == nil {
		var h prefixHash
		for j, m := range hashesOf(x.sentEnc, x.sentHash) {
			h = h.Next(s.digests.of(m, x.sentEnc[j]))
		}
		x.chain = &h
	}
	if s.keeper() != nil {
		for _, key := range keys {
			x.thinkKnown = append(x.thinkKnown, pipeline.ThinkingEntry{Key: thinking.KeyDigest(key), Prefix: uint64(*x.chain)})
		}
		return
	}
	local := &s.stats.get(x.session).thinking
	for _, key := range keys {
		local.add(&local.known, key, *x.chain)
	}
}

// recordThinking saves, with the answer's usage (u, nil when none, of the
// request counted as counted), what x taught of thinking, when the Engine
// keeps it. The blocks recorded are not recorded again.
func (s *Server) recordThinking(ctx context.Context, x *exchange, u *pricing.Usage, counted int) {
	k := s.keeper()
	if k == nil || x.session == "" {
		return
	}
	o := pipeline.Observation{Usage: u, Counted: counted, Known: x.thinkKnown, Sent: x.thinkSent}
	x.thinkKnown, x.thinkSent = nil, nil
	if u == nil && len(o.Known) == 0 && len(o.Sent) == 0 {
		return
	}
	k.record(ctx, x.session, o)
}

// localThinking is the process-local memory of a session's thinking
// blocks, for Engines that keep no session state: by key, the prefix each
// was produced after (known) and last sent after (sent), the oldest keys
// going beyond pipeline.MaxThinking.
type localThinking struct {
	mu          sync.Mutex
	known, sent keyedPrefixes
}

type keyedPrefixes struct {
	at   map[string]prefixHash
	keys []string
}

// Known implements thinking.Memory.
func (l *localThinking) Known(key string) (prefixHash, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.known.at[key]
	return h, ok
}

// Sent implements thinking.Memory.
func (l *localThinking) Sent(key string) (prefixHash, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.sent.at[key]
	return h, ok
}

// add remembers key at h in p, one of l's parts.
func (l *localThinking) add(p *keyedPrefixes, key string, h prefixHash) {
	if key == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if p.at == nil {
		p.at = map[string]prefixHash{}
	}
	if _, ok := p.at[key]; !ok {
		p.keys = append(p.keys, key)
		if len(p.keys) > pipeline.MaxThinking {
			delete(p.at, p.keys[0])
			p.keys = p.keys[1:]
		}
	}
	p.at[key] = h
}

// stableHashes memoizes thinking.MessageDigest by the process's own hash
// of a message (msgHash), which the proxy already has for the messages of
// a session: each message is digested once while it is remembered. Two
// generations of at most maxStableHashes each bound the memory.
type stableHashes struct {
	mu        sync.Mutex
	cur, prev map[uint64]uint64
}

const maxStableHashes = 1 << 16

// of returns the digest of the message whose msgHash is h (0: not known)
// and encoding enc.
func (m *stableHashes) of(h uint64, enc []byte) uint64 {
	if h == 0 {
		h = msgHash(enc)
	}
	m.mu.Lock()
	d, ok := m.cur[h]
	if !ok {
		if d, ok = m.prev[h]; ok {
			m.put(h, d)
		}
	}
	m.mu.Unlock()
	if ok {
		return d
	}
	d = stableDigest(enc)
	m.mu.Lock()
	m.put(h, d)
	m.mu.Unlock()
	return d
}

// stableDigest is thinking.MessageDigest(canonical(enc)), the stripped
// form hashed as it is read rather than written out for each message (a
// 10 MB request of a coding agent's turns, most with a string content or
// a breakpoint, wrote 10 MB of copies only to hash them).
func stableDigest(enc []byte) uint64 {
	if !bytes.Contains(enc, cacheKey) && !bytes.Contains(enc, stringContent) {
		return thinking.MessageDigest(enc)
	}
	w := strippedSHAs.Get().(*strippedHasher[hash.Hash])
	w.h.Reset()
	writeStripped(w, enc, true)
	w.scratch = w.h.Sum(w.scratch[:0])             // into the scratch: a sum through the interface would escape
	d := binary.LittleEndian.Uint64(w.scratch[:8]) // thinking.MessageDigest's
	if cap(w.scratch) <= maxPooledScratch {
		strippedSHAs.Put(w)
	}
	return d
}

// strippedSHAs are stableDigest's hashers.
var strippedSHAs = sync.Pool{New: func() any { return &strippedHasher[hash.Hash]{h: sha256.New()} }}

func (m *stableHashes) put(h, d uint64) {
	if m.cur == nil || len(m.cur) >= maxStableHashes {
		m.prev, m.cur = m.cur, make(map[uint64]uint64, 1024)
	}
	m.cur[h] = d
}
