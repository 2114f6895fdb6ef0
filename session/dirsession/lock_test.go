//go:build unix

package dirsession_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentctx/agentctx/session/dirsession"
)

// A save waits for a lock another process holds only as long as its ctx
// allows (issue 24: a held lock stalled requests for 24.5 s, for ever).
func TestDirStoreLockWaitEndsWithCtx(t *testing.T) {
	dir := t.TempDir()
	s, err := dirsession.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Save(ctx, "ns", "s1", []byte(`{}`), 0); err != nil {
		t.Fatal(err)
	}
	var lock string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if filepath.Ext(p) == ".lock" {
			lock = p
		}
		return nil
	})
	if lock == "" {
		t.Fatal("no lock file")
	}
	f, err := os.OpenFile(lock, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = s.Save(tctx, "ns", "s1", []byte(`{"a":1}`), 1)
	if took := time.Since(start); err == nil || !errors.Is(err, context.DeadlineExceeded) || took > 2*time.Second {
		t.Fatalf("save under a held lock: %v after %v", err, took)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	if _, err := s.Save(ctx, "ns", "s1", []byte(`{"a":1}`), 1); err != nil {
		t.Fatalf("save once the lock is free: %v", err)
	}
}
