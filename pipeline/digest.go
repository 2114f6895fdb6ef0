package pipeline

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	"github.com/agentctx/agentctx"
)

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

func hexDigest(d [sha256.Size]byte) string { return hex.EncodeToString(d[:]) }
