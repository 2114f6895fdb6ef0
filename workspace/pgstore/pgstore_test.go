package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/agentctx/agentctx/internal/pgtest"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/pgstore"
	"github.com/agentctx/agentctx/workspace/storetest"
)

// server is the PostgreSQL the tests share, started by TestMain; when it
// could not start, startErr says why and every test skips (fails in CI).
var (
	server   *pgtest.Server
	startErr error
)

func TestMain(m *testing.M) {
	server, startErr = pgtest.Start(context.Background(), nil)
	code := m.Run()
	if server != nil {
		if err := server.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	os.Exit(code)
}

// newURL returns the URL of a fresh database, or skips the test.
func newURL(t testing.TB) string {
	t.Helper()
	if startErr != nil {
		pgtest.Skip(t, startErr)
	}
	u, err := server.NewDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// opener opens stores that share one database per dir, as the suite
// expects of a persistent backend.
func opener(opts *pgstore.Options) storetest.Opener {
	urls := map[string]string{}
	return func(t testing.TB, dir string) workspace.Store {
		u, ok := urls[dir]
		if !ok {
			u = newURL(t)
			urls[dir] = u
		}
		s, err := pgstore.Open(context.Background(), u, opts)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func TestConformance(t *testing.T) { storetest.Run(t, opener(nil)) }

// TestConformanceSmallChunks runs the suite with chunks of 64 bytes, so
// that every rule crosses chunk boundaries (lines cut, characters not).
func TestConformanceSmallChunks(t *testing.T) {
	storetest.Run(t, opener(&pgstore.Options{ChunkBytes: 64}))
}

func TestReopen(t *testing.T) { storetest.TestReopen(t, opener(nil)) }

func BenchmarkStore(b *testing.B) { storetest.Benchmark(b, opener(nil)) }
