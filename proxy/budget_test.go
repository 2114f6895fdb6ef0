package proxy_test

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/workspace"
)

// TestPipelineEngineTotalBudget: the workspace's total byte budget is
// one for every session of the proxy: a second session whose result
// would pass it sends that result upstream as the client sent it, while
// the first session's result is stored and referenced.
func TestPipelineEngineTotalBudget(t *testing.T) {
	for _, tc := range []struct {
		name  string
		total int64
		want  []bool // referenced, per session
	}{
		{"bounded", 5000, []bool{true, false}},
		{"no bound", -1, []bool{true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := pipelineEngine(t, proxy.PipelineOptions{Pipeline: pipeline.Options{Workspace: workspace.Options{InlineLimit: 1000, TotalBytes: tc.total}}})
			fake := fakeupstream.New(fakeupstream.Options{})
			base := newProxy(t, fake, e)
			for i, size := range []int{4000, 4200} {
				resp := post(t, base+"/v1/messages", toolTurns(1, size), map[string]string{proxy.HeaderSession: fmt.Sprint("s", i)})
				io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			recs := fake.Records()
			if len(recs) != 2 {
				t.Fatalf("%d upstream requests, want 2", len(recs))
			}
			for i, r := range recs {
				if got := strings.Contains(string(r.Body), "<knowledge_list>"); got != tc.want[i] {
					t.Errorf("session s%d: referenced %v, want %v", i, got, tc.want[i])
				}
				if !tc.want[i] && !strings.Contains(string(r.Body), strings.Repeat("line 0\\n", 4200/7)) {
					t.Errorf("session s%d: the result over the budget did not go upstream whole", i)
				}
			}
		})
	}
}
