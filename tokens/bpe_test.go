package tokens

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
)

// TestMergeAgree checks that the two merge algorithms give the same tokens on
// random pieces, for both encodings.
func TestMergeAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "e", "in", "er", " ", "  ", "\n", "é", "日", "本", "😀", "\u0301", "1", "!", "'", "the", "ing", "\xff"}
	for _, enc := range []*Encoding{O200kBase(), Cl100kBase()} {
		v := enc.voc
		sc := new(scratch)
		for i := 0; i < 3000; i++ {
			var b strings.Builder
			for b.Len() < 2+rng.IntN(smallPiece-1) {
				b.WriteString(alphabet[rng.IntN(len(alphabet))])
			}
			piece := b.String()
			if len(piece) > smallPiece {
				piece = piece[:smallPiece]
			}
			var small, large []int
			ns := v.mergeSmall(piece, 0, len(piece), &small)
			nl := v.mergeLarge(piece, 0, len(piece), sc, &large)
			if ns != nl || !slices.Equal(small, large) || ns != len(small) {
				t.Fatalf("%s: piece %q: mergeSmall %d %v, mergeLarge %d %v", enc.Name(), piece, ns, small, nl, large)
			}
			if got := enc.decode(small); got != piece {
				t.Fatalf("%s: piece %q decodes to %q", enc.Name(), piece, got)
			}
		}
	}
}

func TestHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 0; n < 200; n++ {
		var h, want []uint64
		for i := 0; i < n; i++ {
			x := rng.Uint64N(50)
			h = append(h, x)
			want = append(want, x)
		}
		heapify(h)
		for i := 0; i < n/2; i++ {
			x := rng.Uint64N(50)
			h = heapPush(h, x)
			want = append(want, x)
		}
		slices.Sort(want)
		var got []uint64
		for len(h) > 0 {
			got = append(got, h[0])
			h = heapPop(h)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("n=%d: popped %v, want %v", n, got, want)
		}
	}
}

// TestCanonicalJSONCopiesOnce: a tool input written as JSON.stringify
// writes it (as clients send it) is copied once into its string, not
// first into a buffer grown four times (five allocations; 2.8 MB for
// 50,000 calls; issue 24, item 7); one
// written otherwise is made canonical.
func TestCanonicalJSONCopiesOnce(t *testing.T) {
	canonical := []byte(`{"command":"ls -la","timeout":120}`)
	if n := testing.AllocsPerRun(100, func() { _ = canonicalJSON(canonical) }); n > 1 {
		t.Errorf("canonicalJSON of a canonical input allocates %.0f times", n)
	}
	if got := canonicalJSON(canonical); got != string(canonical) {
		t.Errorf("canonicalJSON(%s) = %s", canonical, got)
	}
	if got, want := canonicalJSON([]byte(`{ "command" : "ls\/x" }`)), `{"command":"ls/x"}`; got != want {
		t.Errorf("canonicalJSON = %s, want %s", got, want)
	}
}

// keepingCounter is a Counter of the caller's that keeps what it counts.
type keepingCounter struct{ kept []string }

func (k *keepingCounter) Count(s string) int { k.kept = append(k.kept, s); return len(s) }

// TestToolInputCountedInPlace: a canonical tool input is counted from its
// own bytes by this package's encoding (no copy: a request of 10,000 tool
// calls copied 5 MB, issue 24 item 7), to the same count; a Counter of the
// caller's, which may keep what it is given, gets a string of its own.
func TestToolInputCountedInPlace(t *testing.T) {
	input := []byte(`{"command":"` + strings.Repeat("grep -rn pattern ./src ", 20) + `"}`)
	msg := func(in []byte) agentctx.Message {
		return agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.ToolUseBlock("toolu_1", "Bash", in)))
	}
	for _, size := range []int{-1, 0} { // the cache off, and on
		mc := NewMessageCounter(MessageOptions{CacheSize: size})
		m := msg(input)
		want := mc.counter.Count("Bash") + mc.counter.Count(string(input))
		if got := mc.CountMessage(m); got != want {
			t.Fatalf("cache %d: %d tokens, want %d", size, got, want)
		}
		if n := testing.AllocsPerRun(50, func() { mc.CountMessage(m) }); n > 0 {
			t.Errorf("cache %d: counting a canonical tool input allocates %.0f times", size, n)
		}
	}
	k := &keepingCounter{}
	in := bytes.Clone(input)
	NewMessageCounter(MessageOptions{Counter: k}).CountMessage(msg(in))
	in[2] = 'X'
	if len(k.kept) != 2 || k.kept[1] != string(input) {
		t.Errorf("the caller's counter kept %q, want the input as it was", k.kept)
	}
}
