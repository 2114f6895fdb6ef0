package offload

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/fsutil"
)

// Defaults (seeds 000 and 001).
const (
	// DefaultDir is the directory files are written to when the options
	// leave Dir empty. A relative directory is taken relative to the
	// working directory.
	DefaultDir = ".offload"
	// DefaultMinChars is the threshold of Batch: a tool result of at least
	// this many characters is offloaded.
	DefaultMinChars = 100
)

// The reference strings that replace offloaded content. Batch writes
// BatchRefPrefix + "./" + file name + RefSuffix; Message writes
// MessageRefPrefix + absolute path + RefSuffix.
const (
	BatchRefPrefix   = "[Content offloaded to: "
	MessageRefPrefix = "[Tool result offloaded to file: "
	RefSuffix        = "]"
)

// IsReference reports whether s is a reference left by Batch or Message:
// one line that starts with BatchRefPrefix or MessageRefPrefix, ends with
// RefSuffix and names a .md file. Batch never offloads such content again.
func IsReference(s string) bool {
	var rest string
	switch {
	case strings.HasPrefix(s, BatchRefPrefix):
		rest = s[len(BatchRefPrefix):]
	case strings.HasPrefix(s, MessageRefPrefix):
		rest = s[len(MessageRefPrefix):]
	default:
		return false
	}
	path, ok := strings.CutSuffix(rest, RefSuffix)
	return ok && strings.HasSuffix(path, ".md") && !strings.ContainsAny(path, "\n\r]")
}

// inputError is the type of the sentinel input errors: each also matches
// agentctx.ErrInvalidInput, so the CLI reports it as bad input (exit 2).
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }

// Is makes errors.Is(err, agentctx.ErrInvalidInput) true.
func (e *inputError) Is(target error) bool { return target == agentctx.ErrInvalidInput }

// Sentinel errors for callers to branch on with errors.Is. Each one also
// matches agentctx.ErrInvalidInput. They are returned before anything is
// written.
var (
	// ErrEmptyID: a tool result to offload has an empty id (tool_use_id or
	// tool_call_id), so it cannot be named.
	ErrEmptyID error = &inputError{"empty tool result id"}
	// ErrEmptySessionID: Message was called without a session id.
	ErrEmptySessionID error = &inputError{"empty session id"}
	// ErrNoToolResult: Message was given a message that holds no tool
	// result.
	ErrNoToolResult error = &inputError{"message holds no tool result"}
	// ErrDuplicateID: one message holds two tool results with the same
	// id; Message would write both to one file.
	ErrDuplicateID error = &inputError{"duplicate tool result id in one message"}
)

// IDError reports a tool result whose id cannot be used. It wraps
// ErrEmptyID or ErrDuplicateID.
type IDError struct {
	Message int    // index of the message in the list (0 for Message)
	Block   int    // index of the tool_result block; -1 for a role "tool" message
	ID      string // the offending id
	Err     error  // ErrEmptyID or ErrDuplicateID
}

// Error returns a one-line description naming the message, block and id.
func (e *IDError) Error() string {
	where := fmt.Sprintf("message %d", e.Message)
	if e.Block >= 0 {
		where += fmt.Sprintf(", block %d", e.Block)
	}
	if e.ID != "" {
		where += fmt.Sprintf(" (id %q)", e.ID)
	}
	return "offload: " + where + ": " + e.Err.Error()
}

// Unwrap returns the sentinel.
func (e *IDError) Unwrap() error { return e.Err }

// WriteError reports a file that could not be written (or a directory that
// could not be created, or an existing file that could not be compared). It
// wraps the cause, so errors.Is(err, fs.ErrPermission) and the like work.
type WriteError struct {
	Op   string // "mkdir", "write" or "read"
	Path string // the file or directory
	ID   string // the tool result id; "" for a directory
	Err  error  // the cause
}

// Error returns "offload: <op> <path>: <cause>".
func (e *WriteError) Error() string {
	cause := e.Err
	if pe, ok := cause.(*fs.PathError); ok && pe.Path == e.Path {
		cause = pe.Err // do not name the path twice
	}
	return "offload: " + e.Op + " " + e.Path + ": " + cause.Error()
}

// Unwrap returns the cause.
func (e *WriteError) Unwrap() error { return e.Err }

// FileWriter writes offloaded content for Message.
//
// WriteFile writes data to the file at path (absolute, built by Message),
// creating missing parent directories, and replaces a file that already
// exists there. The write should be atomic: a reader sees the old file or
// the whole new one. An error is returned to Message's caller wrapped in a
// *WriteError. Implementations must be safe for concurrent use and should
// stop early when ctx is done.
type FileWriter interface {
	WriteFile(ctx context.Context, path string, data []byte) error
}

// WriterFunc adapts a function to the FileWriter interface.
type WriterFunc func(ctx context.Context, path string, data []byte) error

// WriteFile calls f(ctx, path, data).
func (f WriterFunc) WriteFile(ctx context.Context, path string, data []byte) error {
	return f(ctx, path, data)
}

// OSWriter is the default FileWriter: it writes to the local file system
// through a temporary file in the same directory and a rename, so a crash
// never leaves a partial file. The zero value is ready to use.
type OSWriter struct {
	Perm    fs.FileMode // mode of new files; zero means 0o600
	DirPerm fs.FileMode // mode of new directories; zero means 0o700
	Sync    bool        // fsync each file before it becomes visible
}

var _ FileWriter = OSWriter{}

// WriteFile creates the parent directories of path and writes data to it
// atomically, replacing any existing file.
func (w OSWriter) WriteFile(ctx context.Context, path string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), dirPerm(w.DirPerm)); err != nil {
		return err
	}
	return fsutil.WriteFile(path, data, fsutil.Options{Perm: w.Perm, Sync: w.Sync})
}

func dirPerm(p fs.FileMode) fs.FileMode {
	if p == 0 {
		return 0o700
	}
	return p
}

// absDir returns the absolute form of dir, DefaultDir when empty.
func absDir(dir string) (string, error) {
	if dir == "" {
		dir = DefaultDir
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("offload: directory %q: %w", dir, err)
	}
	return abs, nil
}

// loggerOr returns l, or a logger that discards everything when l is nil.
func loggerOr(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

// contentText returns the text a tool result is measured and written as,
// and its length in characters (code points).
func contentText(c agentctx.Content) (string, int) {
	var s string
	switch c.Kind() {
	case agentctx.ContentNone:
		return "", 0
	case agentctx.ContentText:
		s = c.Text()
	default:
		s = c.AsText()
	}
	return s, utf8.RuneCountInString(s)
}
