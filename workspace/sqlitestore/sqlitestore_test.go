package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/sqlitestore"
	"github.com/agentctx/agentctx/workspace/storetest"
)

func open(t testing.TB, dir string) workspace.Store {
	s, err := sqlitestore.Open(context.Background(), filepath.Join(dir, "workspace.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) { storetest.Run(t, open) }

func TestReopen(t *testing.T) { storetest.TestReopen(t, open) }

func BenchmarkStore(b *testing.B) { storetest.Benchmark(b, open) }

// TestProcesses: processes sharing the file create the same ids at once.
func TestProcesses(t *testing.T) {
	storetest.RunProcesses(t, func(t testing.TB) string { return t.TempDir() }, open)
}
