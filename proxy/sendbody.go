package proxy

import (
	"bytes"
	"hash/maphash"
	"io"
	"net"
	"slices"
)

// sendBody is the body a request is forwarded with, as the parts it is
// made of, in order: the client's body when nothing changed (one part),
// else spans of it and the bytes the engine wrote. The parts are not
// joined to be sent (an edited request of 10 MB was copied whole into a
// new body, a second body for every edited request); they are read only.
// The zero value is no body read: the client's is streamed through.
type sendBody struct {
	parts [][]byte
	n     int
	read  bool // the client's body was read whole (it may be empty)
}

// wholeBody is the body b, sent as read.
func wholeBody(b []byte) sendBody {
	sb := sendBody{read: true}
	sb.add(b)
	return sb
}

// add appends a part (none when p is empty).
func (b *sendBody) add(p []byte) {
	b.read = true
	if len(p) > 0 {
		b.parts = append(b.parts, p)
		b.n += len(p)
	}
}

// Len returns the number of bytes of the body.
func (b *sendBody) Len() int { return b.n }

// reader returns a reader of the body from its start; each call returns
// a new one (a retry reads it again).
func (b *sendBody) reader() io.Reader {
	bufs := net.Buffers(slices.Clone(b.parts)) // Read consumes its list
	return &bufs
}

// Bytes returns the body as one slice: its one part itself, or the parts
// joined (a copy: for the few who keep or split it).
func (b *sendBody) Bytes() []byte {
	switch len(b.parts) {
	case 0:
		if b.read {
			return []byte{}
		}
		return nil
	case 1:
		return b.parts[0]
	}
	return bytes.Join(b.parts, nil)
}

// partsForwarder is a Forwarder given the body of parts, which joins them
// only when it keeps the body (PipelineEngine: a session near its
// compaction), instead of the proxy joining every edited body for it.
type partsForwarder interface {
	forwardedParts(sessionKey string, api API, body *sendBody)
}

// hashPrefix returns hash64 of the first n bytes of parts, read in place.
func hashPrefix(parts [][]byte, n int) uint64 {
	var h maphash.Hash
	h.SetSeed(hashSeed)
	for _, p := range parts {
		if n <= 0 {
			break
		}
		p = p[:min(len(p), n)]
		h.Write(p)
		n -= len(p)
	}
	return h.Sum64()
}

// firstPart returns the first non-empty part of parts, or nil.
func firstPart(parts [][]byte) []byte {
	for _, p := range parts {
		if len(p) > 0 {
			return p
		}
	}
	return nil
}

// partsLen returns the number of bytes of parts.
func partsLen(parts [][]byte) int {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	return n
}
