package workspace_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/workspace"
)

// slowStat is a store whose Stat takes a while, as a round trip to a
// database does: it widens the window between a writer's look at an id
// and its write.
type slowStat struct{ workspace.Store }

func (s slowStat) Stat(ctx context.Context, ns, id string) (workspace.Info, error) {
	info, err := s.Store.Stat(ctx, ns, id)
	time.Sleep(time.Millisecond)
	return info, err
}

// TestOffloadRacingWriters (issue 24 item 3): writers in different
// sessions offload a result of the same tool call id at once, most with
// different contents. Every writer's reference must resolve to its own
// content: a loser of the race for tool_result_<id> takes the next
// suffixed id. Writers with the same content share one artifact.
func TestOffloadRacingWriters(t *testing.T) {
	const writers, rounds, contents = 8, 6, 6 // writers 6 and 7 send the contents of 0 and 1
	for name, store := range backends(t) {
		t.Run(name, func(t *testing.T) {
			store := slowStat{store}
			for r := range rounds {
				call := workspace.ToolCall{ID: fmt.Sprintf("toolu_race_%d", r), Name: "bash"}
				content := func(w int) string {
					return strings.Repeat(fmt.Sprintf("round %d, output %d\n", r, w%contents), 20+w%contents)
				}
				refs := make([]workspace.Offloaded, writers)
				texts := make([]string, writers)
				errs := make([]error, writers)
				start := make(chan struct{})
				var wg sync.WaitGroup
				for w := range writers {
					ws := workspace.New(store, workspace.Options{SessionID: fmt.Sprint("session-", w), InlineLimit: 100, Now: now})
					wg.Go(func() {
						<-start
						var c agentctx.Content
						c, refs[w], errs[w] = ws.OffloadToolResult(ctx, call, agentctx.Text(content(w)))
						texts[w] = c.AsText()
					})
				}
				close(start)
				wg.Wait()
				held := map[string]int{} // artifact id → content
				for w := range writers {
					if errs[w] != nil {
						t.Fatalf("round %d, writer %d: %v", r, w, errs[w])
					}
					id := refs[w].ID
					if !refs[w].Indexed || !strings.Contains(texts[w], `<knowledge id="`+id+`"`) {
						t.Errorf("round %d, writer %d: the reference does not name %s: %.80q", r, w, id, texts[w])
					}
					a, err := store.Get(ctx, workspace.DefaultNamespace, id)
					if err != nil {
						t.Errorf("round %d, writer %d: %s: %v", r, w, id, err)
						continue
					}
					if a.Content != content(w) {
						t.Errorf("round %d, writer %d: its reference %s resolves to another writer's content (%.30q)", r, w, id, a.Content)
					}
					if c, ok := held[id]; ok && c != w%contents {
						t.Errorf("round %d: %s named for contents %d and %d", r, id, c, w%contents)
					}
					held[id] = w % contents
				}
				if len(held) != contents {
					t.Errorf("round %d: %d artifacts for %d different contents: %v", r, len(held), contents, held)
				}
			}
		})
	}
}
