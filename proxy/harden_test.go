package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/session/memsession"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/memstore"
)

// behindEngine is a session engine that compacts a toolTurns conversation
// of a few turns, keeping every result whole otherwise.
func behindEngine(t *testing.T) *proxy.PipelineEngine {
	return pipelineEngine(t, proxy.PipelineOptions{Pipeline: pipeline.Options{NoPrune: true,
		Compact: compact.Options{Limit: 3000}, Workspace: workspace.Options{InlineLimit: 100000}}})
}

// lastResultID returns the number of messages of an Anthropic body and the
// tool_use_id of the result its last message holds ("" if none).
func lastResultID(t *testing.T, body []byte) (int, string) {
	t.Helper()
	var b struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("body: %v", err)
	}
	if len(b.Messages) == 0 {
		return 0, ""
	}
	var blocks []struct {
		ToolUseID string `json:"tool_use_id"`
	}
	json.Unmarshal(b.Messages[len(b.Messages)-1].Content, &blocks)
	if len(blocks) == 0 {
		return len(b.Messages), ""
	}
	return len(b.Messages), blocks[len(blocks)-1].ToolUseID
}

// send posts body on session s and fails the test unless it is answered.
func send(t *testing.T, base, s, body string) {
	resp := post(t, base+"/v1/messages", body, map[string]string{proxy.HeaderSession: s})
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d: %s", resp.StatusCode, data)
	}
}

// checkLastTurns fails the test for every request the upstream received
// without the last tool result its client sent (want: the ids sent).
func checkLastTurns(t *testing.T, fake *fakeupstream.Server, want []string) {
	t.Helper()
	var got []string
	for _, r := range fake.Records() {
		if r.Rejected != "" {
			t.Errorf("the upstream rejected a request: %s", r.Rejected)
		}
		n, id := lastResultID(t, r.Body)
		if n < 2 || id == "" {
			t.Errorf("a %d-byte request went upstream as %d message(s), its last turn lost:\n%.300s", len(r.Body), n, r.Body)
		}
		got = append(got, id)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the upstream got the last turns %v, want %v", got, want)
	}
}

// A retried request, shorter than what a later request's compaction
// summarized, goes upstream as itself: never the summary alone.
func TestProxyRetriedShorterRequestKeepsItsLastTurn(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{})
	base := newProxy(t, fake, behindEngine(t))
	const turns = 14
	var want []string
	for n := 1; n <= turns; n++ {
		send(t, base, "s1", toolTurns(n, 1500))
		want = append(want, fmt.Sprint("t", n-1))
	}
	// Retries, the latest first: one of them is exactly the messages the
	// last compaction summarized.
	for n := turns - 1; n >= 1; n-- {
		send(t, base, "s1", toolTurns(n, 1500))
		want = append(want, fmt.Sprint("t", n-1))
	}
	checkLastTurns(t, fake, want)
}

// Eight requests of one session at once (an agent's parallel calls, a
// client retrying while the first is in flight): each goes upstream with
// its own last turn, whatever order the session prepares them in.
func TestProxyConcurrentRequestsOfOneSession(t *testing.T) {
	for run := range 4 {
		t.Run(fmt.Sprint(run), func(t *testing.T) {
			fake := fakeupstream.New(fakeupstream.Options{})
			base := newProxy(t, fake, behindEngine(t))
			const turns = 14
			for n := 1; n <= turns-8; n++ {
				send(t, base, "s1", toolTurns(n, 1500))
			}
			var wg sync.WaitGroup
			for n := turns - 7; n <= turns; n++ {
				wg.Go(func() { send(t, base, "s1", toolTurns(n, 1500)) })
			}
			wg.Wait()
			var want []string
			for n := 1; n <= turns; n++ {
				want = append(want, fmt.Sprint("t", n-1))
			}
			checkLastTurns(t, fake, want)
		})
	}
}

// archiveFullStore is a workspace store whose disk is full for archives
// while full is set.
type archiveFullStore struct {
	workspace.Store
	full  atomic.Bool
	fails atomic.Int32
}

func (s *archiveFullStore) Put(ctx context.Context, ns string, a workspace.Artifact) (workspace.Info, error) {
	if strings.HasPrefix(a.ID, pipeline.ArchiveIDPrefix) && s.full.Load() {
		s.fails.Add(1)
		return workspace.Info{}, errors.New("no space left on device")
	}
	return s.Store.Put(ctx, ns, a)
}

// The disk is full when compaction is due: nothing is compacted, each
// request over the trigger tries again, and the first one after space
// came back goes upstream compacted.
func TestProxyCompactsAgainOnceTheDiskHasSpace(t *testing.T) {
	store := &archiveFullStore{Store: memstore.New()}
	store.full.Store(true)
	fake := fakeupstream.New(fakeupstream.Options{})
	base := newProxy(t, fake, pipelineEngine(t, proxy.PipelineOptions{Pipeline: pipeline.Options{NoPrune: true, Store: store, Sessions: memsession.New(),
		Compact: compact.Options{Limit: 3000}, Workspace: workspace.Options{InlineLimit: 100000}}}))
	n := 0
	compacted := func() bool {
		recs := fake.Records()
		return strings.Contains(string(recs[len(recs)-1].Body), compact.SummaryTitle)
	}
	for store.fails.Load() < 2 {
		if n++; n > 30 {
			t.Fatal("compaction never tried")
		}
		send(t, base, "s1", toolTurns(n, 1500))
		if compacted() {
			t.Fatalf("request %d compacted with the disk full", n)
		}
	}
	store.full.Store(false)
	n++
	send(t, base, "s1", toolTurns(n, 1500))
	if !compacted() {
		t.Errorf("request %d, the first with space again, was sent uncompacted (archive writes failed before: %d)", n, store.fails.Load())
	}
}
