package enginetest_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/proxy/enginetest"
	"github.com/agentctx/agentctx/prune"
	"github.com/agentctx/agentctx/workspace"
)

// pipelineEngine returns PipelineEngines over dir whose limits the
// scripted sessions cross: the big results offloaded, and either older
// results pruned (limit high) or the history compacted (limit low).
func pipelineEngine(limit int) func(t *testing.T, dir string) proxy.Engine {
	return func(t *testing.T, dir string) proxy.Engine {
		now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		e, err := proxy.NewPipelineEngine(proxy.PipelineOptions{
			Pipeline: pipeline.Options{
				WorkspaceDir: filepath.Join(dir, "ws"),
				Workspace:    workspace.Options{InlineLimit: 8000},
				Prune:        prune.Options{MaxAge: -1, KeepRecent: 3},
				Compact:      compact.Options{Limit: limit, Dir: filepath.Join(dir, "archive")},
			},
			Now: func() time.Time { return now },
		})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
}

// knownPipeline lists what PipelineEngine breaks today: nothing (a rule
// it breaks goes here with its issue, and is skipped with the reason).
var knownPipeline = map[string]string{}

// The PipelineEngine pruning older results and offloading big ones.
func TestPipelineEnginePruning(t *testing.T) {
	t.Parallel()
	enginetest.Run(t, enginetest.Options{New: pipelineEngine(7000), ExpectEdits: true, Known: knownPipeline})
}

// The PipelineEngine compacting the history now and then.
func TestPipelineEngineCompacting(t *testing.T) {
	t.Parallel()
	enginetest.Run(t, enginetest.Options{New: pipelineEngine(4000), ExpectEdits: true, Known: knownPipeline})
}
