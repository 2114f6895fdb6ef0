//go:build unix

package dirsession_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentctx/agentctx/session"
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

// childDirEnv names, in a child process of
// TestDirStoreProcessesLoseNoIncrement, the directory it increments in.
const childDirEnv = "DIRSESSION_TEST_CHILD_DIR"

// increment adds one to the counter session by compare-and-swap, loading
// again after each conflict; the state is the count then padding, so that
// records are large enough to be written anew now and then.
func increment(ctx context.Context, s session.Store) error {
	for {
		data, v, err := s.Load(ctx, "ns", "counter")
		n := 0
		if err == nil {
			fmt.Sscan(string(data), &n)
			if want := fmt.Sprintf("%d %0*d", n, 5000, 0); string(data) != want {
				return fmt.Errorf("loaded %d bytes of state %.20q, want %d", len(data), data, len(want))
			}
		} else if !errors.Is(err, session.ErrNotFound) {
			return err
		}
		_, err = s.Save(ctx, "ns", "counter", fmt.Appendf(nil, "%d %0*d", n+1, 5000, 0), v)
		if !errors.Is(err, session.ErrConflict) {
			return err
		}
	}
}

// Processes (and goroutines in each) sharing the directory increment one
// session by compare-and-swap: none is lost, and every load in between
// sees a whole state (the journal appended to and written anew under
// their feet).
func TestDirStoreProcessesLoseNoIncrement(t *testing.T) {
	const procs, workers, each = 3, 2, 40
	if dir := os.Getenv(childDirEnv); dir != "" {
		s, err := dirsession.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for range each {
					if err := increment(t.Context(), s); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		return
	}
	dir := t.TempDir()
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for range procs {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestDirStoreProcessesLoseNoIncrement$", "-test.count=1")
		cmd.Env = append(os.Environ(), childDirEnv+"="+dir)
		out := new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("child: %v\n%s", err, outs[i])
		}
	}
	s, err := dirsession.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	data, v, err := s.Load(t.Context(), "ns", "counter")
	n := 0
	fmt.Sscan(string(data), &n)
	if want := procs * workers * each; err != nil || n != want || v != int64(want) {
		t.Fatalf("after %d increments: %d v%d, %v", want, n, v, err)
	}
}
