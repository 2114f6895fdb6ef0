package dirstore_test

import (
	"testing"

	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/dirstore"
	"github.com/agentctx/agentctx/workspace/storetest"
)

func open(t testing.TB, dir string) workspace.Store {
	s, err := dirstore.Open(dir, dirstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) { storetest.Run(t, open) }

func TestReopen(t *testing.T) { storetest.TestReopen(t, open) }

func BenchmarkStore(b *testing.B) { storetest.Benchmark(b, open) }

// TestProcesses: processes sharing the directory create the same ids at
// once; the flock makes each Create one step.
func TestProcesses(t *testing.T) {
	storetest.RunProcesses(t, func(t testing.TB) string { return t.TempDir() }, open)
}
