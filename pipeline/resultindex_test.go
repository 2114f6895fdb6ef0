package pipeline

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit/memtest"
	"github.com/agentctx/agentctx/workspace/memstore"
)

// TestResultIndex finds each result added, by position, and nothing else;
// all yields them in history order.
func TestResultIndex(t *testing.T) {
	added := [][2]int{{1, 0}, {1, 2}, {4, -1}, {5, 0}, {9, 1}}
	x := makeResultIndex(12, 0) // too small for them: it grows
	states := make([]resultState, len(added))
	for i, pos := range added {
		x.add(pos, fmt.Sprint("k", i), &states[i])
	}
	for i, pos := range added {
		if x.key(pos) != fmt.Sprint("k", i) || x.state(pos) != &states[i] {
			t.Errorf("%v: key %q, state %p; want k%d, %p", pos, x.key(pos), x.state(pos), i, &states[i])
		}
	}
	for _, pos := range [][2]int{{0, 0}, {1, 1}, {1, -1}, {2, 0}, {4, 0}, {9, 0}, {10, 0}, {-1, 0}, {1 << 40, 0}} {
		if x.key(pos) != "" || x.state(pos) != nil {
			t.Errorf("%v: found %q", pos, x.key(pos))
		}
	}
	var got [][2]int
	for pos, e := range x.all {
		got = append(got, pos)
		if e.rs != x.state(pos) {
			t.Errorf("%v: all yields another state", pos)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(added) {
		t.Errorf("all yields %v, want %v", got, added)
	}
	var empty resultIndex
	if empty.state([2]int{0, 0}) != nil || empty.key([2]int{3, 1}) != "" {
		t.Error("the empty index finds a result")
	}
}

// TestStoreStepAllocatesLittlePerResult holds what the store step
// allocates on a session's first request of 20,000 results: two maps by
// position, the state's map grown step by step and a second set of the
// same keys made it 500 bytes a result (issue 24, item 7); 344 now, most
// of it what the state keeps (its entry, key and map slot).
func TestStoreStepAllocatesLittlePerResult(t *testing.T) {
	const n = 20_000
	var msgs []agentctx.Message
	for i := range n {
		id := fmt.Sprintf("toolu_%07d", i)
		msgs = append(msgs,
			agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.ToolUseBlock(id, "Bash", []byte(`{"command":"ls"}`)))),
			agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock(id, agentctx.Text(fmt.Sprint("ok ", i)), false))))
	}
	p, err := New(Options{Store: memstore.New(), StoreOnReplace: true})
	if err != nil {
		t.Fatal(err)
	}
	measure := func() uint64 {
		c := p.newCall(&state{Results: map[string]*resultState{}}, len(msgs), 0, CallOptions{})
		c.view = msgs
		return memtest.AllocatedBy(func() {
			if err := c.storeResults(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
	measure() // the digest memo warm: the keys are not made again
	got := measure()
	t.Logf("%d bytes for %d results (%.0f each)", got, n, float64(got)/n)
	if got > 400*n {
		t.Errorf("the store step allocated %d bytes for %d results, want at most %d", got, n, 400*n)
	}
}
