package proxy_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
)

// thinkingRequest is growingRequest with extended thinking on, a signed
// thinking block at the start of every assistant message (Claude Code
// with preserved thinking) and a user's message at the end (the turn
// ended: the pipeline may edit the history, see thinking.Bound).
func thinkingRequest(size, extra int) []byte {
	b := string(growingRequest(size, extra))
	b = strings.TrimSuffix(b, `]}`) + `,{"role":"user","content":"next"}]}`
	b = strings.Replace(b, `"max_tokens":32000,`, `"max_tokens":32000,"thinking":{"type":"adaptive"},`, 1)
	re := regexp.MustCompile(`\{"type":"text","text":"step (\d+)"\}`)
	return []byte(re.ReplaceAllString(b, `{"type":"thinking","thinking":"plan step $1","signature":"EqQBsignature$1"},{"type":"text","text":"step $1"}`))
}

// BenchmarkOverheadThinking is BenchmarkOverhead's pipeline case with
// signed thinking in every turn: the prefix rule runs on every request, and
// the prefixes of the blocks sent and produced are recorded.
func BenchmarkOverheadThinking(b *testing.B) {
	const turns = 64
	bodies := make([][]byte, turns)
	for k := range bodies {
		bodies[k] = thinkingRequest(1<<20, k)
	}
	e, err := proxy.NewPipelineEngine(proxy.PipelineOptions{Pipeline: pipeline.Options{NoCompact: true, WorkspaceDir: filepath.Join(b.TempDir(), "ws")}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	srv, tr := benchServer(b, e)
	measureOverhead(b, srv, tr, "/v1/messages", bodies, func(n int) {
		if st := srv.Stats(); len(st) != 1 || st[0].Edited != n || st[0].ThinkingForwarded == 0 {
			b.Fatalf("%d of %d requests edited, or no thinking forwarded: %+v", st[0].Edited, n, st)
		}
	})
}
