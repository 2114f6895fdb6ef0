package tokens

import (
	"math/bits"
)

const (
	vocabMagic  = "agtkvoc1"
	vocabHeader = len(vocabMagic) + 8
	vocabPad    = 8          // zero bytes after the token bytes
	noRank      = ^uint32(0) // "not a token"
)

// vocab maps byte strings to token ids (BPE ranks) with an open-addressing
// hash table built once from the embedded vocabulary file. Lookups never
// allocate. A vocab is immutable after loadVocab returns.
//
// A slot of the table is a uint64: 0 when empty, else
//
//	bits  0..19  id+1
//	bits 20..27  n, the token's length in bytes
//	bits 28..63  for n <= 4: the token's bytes (bits 32..63, little-endian)
//	             for n > 4:  its offset in blob (bits 28..51) and a tag:
//	                         the 12 bits of its hash just below the bits of
//	                         the slot index (bits 52..63)
//
// so a lookup of a short string (most lookups by frequency) reads one slot
// and nothing else, and a longer one compares bytes only when the length and
// the hash bits match. The table has a power-of-two size at least 2.5 times
// the token count (load factor under 0.4): 4 MiB for o200k_base. Pairs and
// single bytes, the most frequent lookups of the merge loop, have direct
// tables.
type vocab struct {
	table    []uint64
	shift    uint        // 64 - log2(len(table)): the slot index is hash >> shift
	tagShift uint        // shift - 12: the tag is hash >> tagShift & 0xFFF
	mask     uint32      // len(table) - 1
	pairs    []uint32    // id of each two-byte token, indexed by its bytes as a little-endian uint16; noRank if none
	bytes    [256]uint32 // id of each one-byte token
	lens     string      // lens[id]: length of token id (a slice of the embedded file)
	blob     string      // all token bytes in id order, then 8 zero bytes (a slice of the embedded file)
	maxLen   int         // longest token in bytes
}

const (
	slotIDMask   = 1<<20 - 1
	slotLenShift = 20
	slotLenMask  = 0xFF << slotLenShift
	slotKeyShift = 32
	slotOffShift = 28
	slotOffMask  = 1<<24 - 1
	slotTagShift = 52
	slotTagMask  = 0xFFF << slotTagShift
)

func loadVocab(name, bin string) (*vocab, error) {
	if len(bin) < vocabHeader || bin[:len(vocabMagic)] != vocabMagic {
		return nil, errCorrupt(name)
	}
	n := int(le32(bin, 8))
	size := int(le32(bin, 12))
	if n < 256 || n >= slotIDMask || size > slotOffMask || len(bin) != vocabHeader+n+size+vocabPad {
		return nil, errCorrupt(name)
	}
	v := &vocab{
		lens:  bin[vocabHeader : vocabHeader+n],
		blob:  bin[vocabHeader+n:], // with the padding
		pairs: make([]uint32, 1<<16),
	}
	for i := range v.pairs {
		v.pairs[i] = noRank
	}
	logSize := uint(bits.Len(uint(n*5/2 - 1)))
	v.table = make([]uint64, 1<<logSize)
	v.shift = 64 - logSize
	v.tagShift = v.shift - 12
	v.mask = uint32(len(v.table) - 1)
	off := 0
	for id := 0; id < n; id++ {
		l := int(v.lens[id])
		if l == 0 || off+l > size {
			return nil, errCorrupt(name)
		}
		v.maxLen = max(v.maxLen, l)
		k, h := keyHash(v.blob, off, l)
		e := uint64(l)<<slotLenShift | uint64(id+1)
		if l <= 4 {
			e |= k << slotKeyShift
		} else {
			e |= (h>>v.tagShift)<<slotTagShift | uint64(off)<<slotOffShift
		}
		i := uint32(h >> v.shift)
		for v.table[i] != 0 {
			i = (i + 1) & v.mask
		}
		v.table[i] = e
		switch l {
		case 1:
			v.bytes[v.blob[off]] = uint32(id)
		case 2:
			v.pairs[le16(v.blob, off)] = uint32(id)
		}
		off += l
	}
	if off != size {
		return nil, errCorrupt(name)
	}
	return v, nil
}

// rank returns the id of the token s[a:a+n], or noRank when s[a:a+n] is not a
// token. n > 0.
func (v *vocab) rank(s string, a, n int) uint32 {
	switch {
	case n == 2:
		return v.pairs[le16(s, a)]
	case n == 1:
		return v.bytes[s[a]]
	case n > v.maxLen:
		return noRank
	}
	// keyHash, by hand: the compiler does not inline it.
	var k, tail uint64
	switch {
	case n >= 8:
		k = le64(s, a)
		if n > 8 {
			tail = le64(s, a+n-8)
		}
	case a+8 <= len(s):
		k = le64(s, a) & (1<<(uint(n)*8) - 1)
	default:
		k = partialKey(s, a, n)
	}
	h := (k ^ tail*hashMul1 ^ uint64(n)) * hashMul2
	i := uint32(h >> v.shift)
	if n <= 4 {
		want := k<<slotKeyShift | uint64(n)<<slotLenShift
		for {
			e := v.table[i]
			if e&^slotIDMask == want {
				return uint32(e&slotIDMask) - 1
			}
			if e == 0 {
				return noRank
			}
			i = (i + 1) & v.mask
		}
	}
	want := (h>>v.tagShift)<<slotTagShift | uint64(n)<<slotLenShift
	for {
		e := v.table[i]
		if e&(slotTagMask|slotLenMask) == want {
			off := int(e >> slotOffShift & slotOffMask)
			if n <= 8 {
				// blob is followed by eight bytes of padding, so the load
				// never runs past its end; the mask is all ones for n == 8.
				if le64(v.blob, off)&(1<<(uint(n)*8)-1) == k {
					return uint32(e&slotIDMask) - 1
				}
			} else if le64(v.blob, off) == k && v.blob[off+8:off+n] == s[a+8:a+n] {
				return uint32(e&slotIDMask) - 1
			}
		}
		if e == 0 {
			return noRank
		}
		i = (i + 1) & v.mask
	}
}

// keyHash returns the table key of s[a:a+n] (its first up to eight bytes,
// little-endian, zero-padded) and its hash. Only the first and last eight
// bytes and the length are hashed: collisions among long tokens are rare and
// resolved by comparing bytes.
func keyHash(s string, a, n int) (key, hash uint64) {
	var tail uint64
	switch {
	case n >= 8:
		key = le64(s, a)
		if n > 8 {
			tail = le64(s, a+n-8)
		}
	case a+8 <= len(s):
		// Load eight bytes and keep the first n: one load instead of three.
		key = le64(s, a) & (1<<(uint(n)*8) - 1)
	default:
		key = partialKey(s, a, n)
	}
	hash = (key ^ tail*hashMul1 ^ uint64(n)) * hashMul2
	return key, hash
}

const (
	hashMul1 = 0xC2B2AE3D27D4EB4F
	hashMul2 = 0x9E3779B97F4A7C15
)

// partialKey returns s[a:a+n], n < 8, as a little-endian uint64, reading
// only those bytes.
func partialKey(s string, a, n int) uint64 {
	switch {
	case n >= 4:
		return uint64(le32(s, a)) | uint64(le32(s, a+n-4))<<(uint(n-4)*8)
	case n >= 2:
		return uint64(le16(s, a)) | uint64(le16(s, a+n-2))<<(uint(n-2)*8)
	default:
		return uint64(s[a])
	}
}

func le64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func le32(s string, i int) uint32 {
	s = s[i : i+4]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

func le16(s string, i int) uint16 {
	s = s[i : i+2]
	return uint16(s[0]) | uint16(s[1])<<8
}
