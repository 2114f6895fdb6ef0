package proxy_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
)

// TestCodexNativeCompaction runs real Codex through `agentctx proxy
// --context-management native` (small --limit) against the strict fake:
// the session compacts with the provider's compaction (POST
// /v1/responses/compact), the compaction item goes back upstream (which
// verifies it) on every later request, Codex finishes, and the model
// reads the early result back through a pointer of the summary.
func TestCodexNativeCompaction(t *testing.T) {
	t.Parallel() // its own upstream, proxy, home and working directories: the client runs overlap
	f := newReadBackFixture(t, codexOptions(600, 1, true), "--limit", fmt.Sprint(readBackLimit), "--context-management", "native")
	f.check(f.runCodex())
	compactions, carried := 0, 0
	for _, r := range f.fake.Records() {
		switch {
		case r.Path == fakeupstream.CompactPath && r.Rejected == "":
			compactions++
		case r.Path == "/v1/responses" && strings.Contains(string(r.Body), `"type":"compaction"`):
			carried++
		}
	}
	bill := f.fake.Bill()
	fig, _ := json.Marshal(map[string]any{"requests": bill.Requests, "compactions": bill.Compactions, "requests_carrying_the_item": carried,
		"usd": bill.USD, "input_tokens": bill.InputTotal(), "rejections": bill.Rejections})
	t.Logf("figures: %s", fig)
	if compactions == 0 || carried == 0 {
		t.Errorf("the provider never compacted the session (%d compactions, %d requests carrying the item)", compactions, carried)
	}
	for _, r := range f.fake.Records() {
		if r.Path == "/v1/responses" && r.Header.Get("X-Agentctx-Summary") != "" {
			t.Errorf("a client-side summary request in native mode")
		}
	}
}
