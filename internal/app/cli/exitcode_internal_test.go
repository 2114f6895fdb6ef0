package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/app/config"
	"github.com/agentctx/agentctx/pipeline"
)

// ExitCode makes the one choice of exit code: a named file's system
// failures (permission, a full disk, I/O) are 1 as any runtime failure, a
// file named wrong is 2, the library's bad-input errors are 2 however
// deeply wrapped.
func TestExitCodeTable(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, ExitOK},
		{"plain", errors.New("boom"), ExitFailure},
		{"usage", usagef("bad flag"), ExitUsage},
		{"file missing", &fileError{err: &fs.PathError{Op: "open", Path: "x", Err: syscall.ENOENT}}, ExitUsage},
		{"file is a directory", &fileError{err: &fs.PathError{Op: "read", Path: "x", Err: syscall.EISDIR}}, ExitUsage},
		{"file permission", &fileError{err: &fs.PathError{Op: "open", Path: "x", Err: syscall.EACCES}}, ExitFailure},
		{"file disk full", &fileError{prefix: "--log", err: &fs.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}}, ExitFailure},
		{"file I/O", &fileError{err: &fs.PathError{Op: "read", Path: "x", Err: syscall.EIO}}, ExitFailure},
		{"unwrapped permission", fmt.Errorf("open store: %w", fs.ErrPermission), ExitFailure},
		{"invalid input", fmt.Errorf("x.json: %w", &agentctx.InputError{Msg: "bad"}), ExitUsage},
		{"invalid option", fmt.Errorf("wrap: %w", pipeline.ErrInvalidOption), ExitUsage},
		{"bad config", &config.Error{Path: "c.json", Err: errors.New("not a JSON object")}, ExitUsage},
		{"interrupted", fmt.Errorf("read: %w", context.Canceled), ExitInterrupted},
		{"client", &clientExit{3}, 3},
	} {
		if got := ExitCode(tt.err); got != tt.want {
			t.Errorf("%s: ExitCode(%v) = %d, want %d", tt.name, tt.err, got, tt.want)
		}
	}
}
