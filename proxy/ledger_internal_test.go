package proxy

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/session"
)

type heldLedger struct {
	entered, release chan struct{}
	got              chan int
}

func (h heldLedger) Append(_ context.Context, es []session.LedgerEntry) error {
	h.entered <- struct{}{}
	<-h.release
	h.got <- len(es)
	return nil
}

func (heldLedger) Query(context.Context, session.LedgerFilter) ([]session.LedgerEntry, error) {
	return nil, nil
}

func (heldLedger) Scan(context.Context, session.LedgerFilter, func(session.LedgerEntry) error) error {
	return nil
}

// TestLedgerQueueFullDrops: past the queue's bound an entry is dropped,
// not waited for, and the drop logged once; what was queued is appended.
func TestLedgerQueueFullDrops(t *testing.T) {
	var logs bytes.Buffer
	h := heldLedger{entered: make(chan struct{}, 16), release: make(chan struct{}), got: make(chan int, 16)}
	w := newLedgerWriter(h, slog.New(slog.NewTextHandler(&logs, nil)), 2, time.Minute)
	w.add(session.LedgerEntry{Session: "first"})
	<-h.entered    // the writer holds it, in Append
	for range 60 { // 2 queued, the rest dropped
		w.add(session.LedgerEntry{Session: "more"})
	}
	close(h.release)
	if err := w.close(context.Background()); err != nil {
		t.Fatal(err)
	}
	close(h.got)
	appended := 0
	for n := range h.got {
		appended += n
	}
	if lost := int(w.lost.Load()); appended != 3 || lost != 58 {
		t.Fatalf("appended %d, lost %d of 61 entries with a queue of 2", appended, lost)
	}
	if n := strings.Count(logs.String(), "queue full"); n != 1 {
		t.Fatalf("the drop logged %d times, want once:\n%s", n, logs.String())
	}
}
