package dirsession_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/dirsession"
	"github.com/agentctx/agentctx/session/sessiontest"
)

func openDir(t *testing.T, dir string) session.Store {
	t.Helper()
	s, err := dirsession.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLedgerConformance(t *testing.T) {
	sessiontest.RunLedger(t, func(t *testing.T) (session.Store, session.Store) {
		dir := t.TempDir()
		return openDir(t, dir), openDir(t, dir)
	})
}

// TestLedgerCutLine: a line a crash cut short is skipped, and the next
// append starts a line of its own.
func TestLedgerCutLine(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openDir(t, dir)
	defer s.Close()
	l, err := session.LedgerOf(s)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	if err := l.Append(ctx, []session.LedgerEntry{{Time: at, Session: "a", CostUSD: 1}}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, ".ledger.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"time":"2026-12-03T00:00:01Z","session":"cut`)
	f.Close()
	if got, err := l.Query(ctx, session.LedgerFilter{}); err != nil || len(got) != 1 {
		t.Fatalf("Query with a cut last line = %+v, %v; want the one whole entry", got, err)
	}
	if err := l.Append(ctx, []session.LedgerEntry{{Time: at.Add(2 * time.Second), Session: "b", CostUSD: 2}}); err != nil {
		t.Fatal(err)
	}
	got, err := l.Query(ctx, session.LedgerFilter{})
	if err != nil || len(got) != 2 || got[0].Session != "a" || got[1].Session != "b" {
		t.Fatalf("Query after an append past a cut line = %+v, %v; want a and b", got, err)
	}
	// The sessions of the directory are not the ledger's.
	if infos, err := s.List(ctx, ""); err != nil || len(infos) != 0 {
		t.Fatalf("List = %v, %v; want none", infos, err)
	}
}
