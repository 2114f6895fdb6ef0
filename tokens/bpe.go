package tokens

import (
	"fmt"
	"math"
)

// Byte pair encoding of one piece s[a:b] that is not itself a token.
//
// tiktoken merges, again and again, the adjacent pair of parts whose
// concatenation is the token with the lowest rank, the leftmost such pair on
// a tie, until no adjacent pair forms a token. Both functions below do
// exactly that: mergeSmall with a quadratic scan over a few dozen parts held
// on the stack, mergeLarge with a heap keyed by (rank, position) for long
// pieces such as a run of thousands of spaces.

// smallPiece is the longest piece, in bytes, that mergeSmall handles; longer
// ones go to mergeLarge. Measured on CJK and mixed text, the heap wins from
// about 24 bytes on.
const smallPiece = 24

// mergeSmall encodes s[a:b], 2 <= b-a <= smallPiece. It appends the token
// ids to ids when ids is not nil and returns the number of tokens.
//
// Parts are kept as a linked list over byte offsets: the part starting at
// offset p ends at next[p]; pair[p] is the rank of the part at p merged with
// the next one, noRank when there is none or p is no longer a part start.
// Each round scans pair in offset order for the lowest rank, so ties go to
// the leftmost pair as in tiktoken.
func (v *vocab) mergeSmall(s string, a, b int, ids *[]int) int {
	n := b - a
	var next, prev [smallPiece + 1]uint8
	var pair [smallPiece]uint32
	for p := 0; p < n; p++ {
		next[p] = uint8(p + 1)
		prev[p] = uint8(p - 1) // 255 for p == 0: no previous part
	}
	for p := 0; p < n-1; p++ {
		pair[p] = v.pairs[le16(s, a+p)]
	}
	pair[n-1] = noRank
	parts := n
	for parts > 1 {
		best, p := noRank, 0
		for k, r := range pair[:n] {
			if r < best {
				best, p = r, k
			}
		}
		if best == noRank {
			break
		}
		// Merge the part at p with the next one, q.
		q := int(next[p])
		nq := int(next[q])
		next[p] = uint8(nq)
		pair[q] = noRank
		parts--
		if nq < n {
			prev[nq] = uint8(p)
			pair[p] = v.rank(s, a+p, int(next[nq])-p)
		} else {
			pair[p] = noRank
		}
		if p > 0 {
			pp := int(prev[p])
			pair[pp] = v.rank(s, a+pp, nq-pp)
		}
	}
	if ids != nil {
		for p := 0; p < n; p = int(next[p]) {
			*ids = append(*ids, int(v.rank(s, a+p, int(next[p])-p)))
		}
	}
	return parts
}

// scratch is the working memory of mergeLarge, reused through a sync.Pool.
type scratch struct {
	next []int32  // next[p]: start of the part after the part starting at p
	prev []int32  // prev[p]: start of the part before it, -1 for the first
	pair []uint32 // pair[p]: rank of the part at p merged with the next, noRank if none; noRank too once p is merged away
	heap []uint64 // min-heap of rank<<32 | p; stale entries are skipped
}

// mergeLarge encodes s[a:b] of any length >= 2 in O(n log n) time and 20 to
// 28 bytes of scratch per byte of the piece. Offsets are int32, so it panics
// for a piece of 2 GiB or more (a single run of one kind of character that
// long).
func (v *vocab) mergeLarge(s string, a, b int, sc *scratch, ids *[]int) int {
	n := b - a
	if n >= math.MaxInt32 {
		panic(fmt.Sprintf("tokens: a pre-tokenizer piece of %d bytes is too long (2 GiB or more)", n))
	}
	if cap(sc.next) < n+1 {
		sc.next = make([]int32, n+1)
		sc.prev = make([]int32, n+1)
		sc.pair = make([]uint32, n+1)
		// n entries to start with; stale ones can push it up to 2n.
		sc.heap = make([]uint64, 0, n+n/4)
	}
	next, prev, pair := sc.next[:n+1], sc.prev[:n+1], sc.pair[:n+1]
	h := sc.heap[:0]
	for p := 0; p < n; p++ {
		next[p] = int32(p + 1)
		prev[p] = int32(p - 1)
		r := noRank
		if p+1 < n {
			r = v.pairs[le16(s, a+p)]
		}
		pair[p] = r
		if r != noRank {
			h = append(h, uint64(r)<<32|uint64(p))
		}
	}
	heapify(h)
	parts := n
	for len(h) > 0 {
		top := h[0]
		r, p := uint32(top>>32), int32(uint32(top))
		if pair[p] != r {
			h = heapPop(h) // stale: p was merged away or its pair changed
			continue
		}
		// Merge the part at p with the next one, q.
		q := next[p]
		nq := next[q]
		next[p] = nq
		if int(nq) < n {
			prev[nq] = p
		}
		pair[q] = noRank
		parts--
		if int(nq) < n {
			pair[p] = v.rank(s, a+int(p), int(next[nq]-p))
		} else {
			pair[p] = noRank
		}
		// The top entry is used up: replace it with p's new pair, or drop it.
		if pair[p] != noRank {
			h[0] = uint64(pair[p])<<32 | uint64(p)
			siftDown(h, 0)
		} else {
			h = heapPop(h)
		}
		if pp := prev[p]; pp >= 0 {
			pair[pp] = v.rank(s, a+int(pp), int(nq-pp))
			if pair[pp] != noRank {
				h = heapPush(h, uint64(pair[pp])<<32|uint64(pp))
			}
		}
	}
	sc.heap = h
	if ids != nil {
		for p := int32(0); int(p) < n; p = next[p] {
			*ids = append(*ids, int(v.rank(s, a+int(p), int(next[p]-p))))
		}
	}
	return parts
}

func heapify(h []uint64) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
}

func heapPush(h []uint64, x uint64) []uint64 {
	h = append(h, x)
	i := len(h) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if h[parent] <= x {
			break
		}
		h[i] = h[parent]
		i = parent
	}
	h[i] = x
	return h
}

func heapPop(h []uint64) []uint64 {
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	if last > 0 {
		siftDown(h, 0)
	}
	return h
}

func siftDown(h []uint64, i int) {
	x := h[i]
	for {
		c := 2*i + 1
		if c >= len(h) {
			break
		}
		if c+1 < len(h) && h[c+1] < h[c] {
			c++
		}
		if x <= h[c] {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = x
}
