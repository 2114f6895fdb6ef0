package memstore_test

import (
	"testing"

	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/driver"
	"github.com/agentctx/agentctx/workspace/memstore"
	"github.com/agentctx/agentctx/workspace/storetest"
)

func TestConformance(t *testing.T) {
	storetest.RunDriver(t, func(testing.TB, string) driver.Store { return memstore.NewDriver() })
}

func BenchmarkStore(b *testing.B) {
	storetest.Benchmark(b, func(testing.TB, string) workspace.Store { return memstore.New() })
}
