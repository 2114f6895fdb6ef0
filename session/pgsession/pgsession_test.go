package pgsession_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/agentctx/agentctx/internal/testkit/pgtest"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/pgsession"
	"github.com/agentctx/agentctx/session/sessiontest"
)

var (
	server   *pgtest.Server
	startErr error
)

func TestMain(m *testing.M) {
	server, startErr = pgtest.Start(context.Background(), pgtest.Options{})
	code := m.Run()
	if server != nil {
		server.Close()
	}
	os.Exit(code)
}

func newURL(t *testing.T) string {
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

func open(t *testing.T, u string) session.Store {
	t.Helper()
	s, err := pgsession.Open(context.Background(), u, pgsession.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T) session.Store { return open(t, newURL(t)) })
}

// TestReplicas races two stores (two processes of a fleet) on one
// session: every increment survives.
func TestReplicas(t *testing.T) {
	ctx := context.Background()
	u := newURL(t)
	replicas := []session.Store{open(t, u), open(t, u)}
	defer replicas[0].Close()
	defer replicas[1].Close()
	const workers, each = 8, 15
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	conflicts := make([]int, workers)
	for w := range workers {
		s := replicas[w%2]
		wg.Go(func() {
			for range each {
				for {
					data, v, err := s.Load(ctx, "ns", "s")
					n := 0
					if err == nil {
						fmt.Sscan(string(data), &n)
					} else if !errors.Is(err, session.ErrNotFound) {
						errs <- err
						return
					}
					if _, err = s.Save(ctx, "ns", "s", []byte(fmt.Sprint(n+1)), v); err == nil {
						break
					} else if !errors.Is(err, session.ErrConflict) {
						errs <- err
						return
					}
					conflicts[w]++
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	data, v, err := replicas[1].Load(ctx, "ns", "s")
	if err != nil || string(data) != fmt.Sprint(workers*each) || v != workers*each {
		t.Fatalf("after %d increments over two replicas: %q v%d %v", workers*each, data, v, err)
	}
}
