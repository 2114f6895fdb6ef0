package dirsession_test

import (
	"testing"

	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/dirsession"
	"github.com/agentctx/agentctx/session/sessiontest"
)

func TestConformance(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T) session.Store {
		s, err := dirsession.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// BenchmarkSaveLoad is one compare-and-swap cycle of a session's state
// through the portable store: what the pipeline does per request.
func BenchmarkSaveLoad(b *testing.B) {
	s, err := dirsession.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	data := make([]byte, 4<<10)
	var v int64
	b.ReportAllocs()
	for b.Loop() {
		if v, err = s.Save(ctx, "ns", "s", data, v); err != nil {
			b.Fatal(err)
		}
		if _, _, err := s.Load(ctx, "ns", "s"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSave is one Save of a 200 KB state over the last one, as the
// proxy saves a session's state on every request.
func BenchmarkSave(b *testing.B) {
	s, err := dirsession.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := b.Context()
	data := make([]byte, 200<<10)
	var v int64
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		data[int(v)%len(data)]++
		if v, err = s.Save(ctx, "ns", "s", data, v); err != nil {
			b.Fatal(err)
		}
	}
}
