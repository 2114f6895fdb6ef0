package memsession_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/memsession"
	"github.com/agentctx/agentctx/session/sessiontest"
)

func TestConformance(t *testing.T) {
	sessiontest.RunDriver(t, func(t *testing.T) session.Driver { return memsession.NewDriver() })
}

// BenchmarkSaveLoad is one compare-and-swap cycle of a session's state
// through the portable store: what the pipeline does per request.
func BenchmarkSaveLoad(b *testing.B) {
	s := memsession.New()
	ctx := b.Context()
	data := make([]byte, 4<<10)
	var v int64
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if v, err = s.Save(ctx, "ns", "s", data, v); err != nil {
			b.Fatal(err)
		}
		if _, _, err := s.Load(ctx, "ns", "s"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSaveLoadDeadline is BenchmarkSaveLoad with a ctx that has a
// deadline, as a pipeline's calls have (StoreTimeout, 5 s by default).
func BenchmarkSaveLoadDeadline(b *testing.B) {
	s := memsession.New()
	ctx, cancel := context.WithTimeout(b.Context(), 5*time.Second)
	defer cancel()
	data := make([]byte, 4<<10)
	var v int64
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if v, err = s.Save(ctx, "ns", "s", data, v); err != nil {
			b.Fatal(err)
		}
		if _, _, err := s.Load(ctx, "ns", "s"); err != nil {
			b.Fatal(err)
		}
	}
}
