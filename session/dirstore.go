package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"

	"github.com/agentctx/agentctx/internal/fsutil"
)

// DirStore keeps each session in a file <root>/<namespace>/<id>.session
// (names encoded so that they cannot leave their directory), written
// atomically. Save holds an flock on <id>.lock beside it, so processes
// sharing the directory never lose an update.
type DirStore struct {
	root   string
	closed atomic.Bool
}

var _ Store = (*DirStore)(nil)

// dirHeader starts every session file, followed by the version and a
// newline, then the data.
const dirHeader = "agentctx-session "

// OpenDir returns a DirStore rooted at dir. The directory is created on the
// first Save.
func OpenDir(dir string) (*DirStore, error) {
	if dir == "" {
		return nil, errors.New("session: empty directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	return &DirStore{root: abs}, nil
}

// Root returns the store's directory.
func (s *DirStore) Root() string { return s.root }

func (s *DirStore) paths(ns, id string) (dir, file, lock string, err error) {
	nsName, err := fsutil.SafeName(ns)
	if err != nil {
		return "", "", "", err
	}
	idName, err := fsutil.SafeName(id)
	if err != nil {
		return "", "", "", err
	}
	dir = filepath.Join(s.root, nsName)
	return dir, filepath.Join(dir, idName+".session"), filepath.Join(dir, idName+".lock"), nil
}

func (s *DirStore) begin(ctx context.Context, op, ns, id string) (dir, file, lock string, err error) {
	if err := Check(ctx, op, ns, id); err != nil {
		return "", "", "", err
	}
	if s.closed.Load() {
		return "", "", "", &Error{Op: op, Namespace: ns, ID: id, Err: ErrClosed}
	}
	dir, file, lock, err = s.paths(ns, id)
	if err != nil {
		return "", "", "", &Error{Op: op, Namespace: ns, ID: id, Err: fmt.Errorf("%w: %w", ErrInvalidKey, err)}
	}
	return dir, file, lock, nil
}

// readFile reads a session file: its data and version; version 0 and no
// error when it does not exist.
func readFile(path string) ([]byte, int64, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	rest, ok := bytes.CutPrefix(raw, []byte(dirHeader))
	i := bytes.IndexByte(rest, '\n')
	if !ok || i < 0 {
		return nil, 0, fmt.Errorf("%s: not a session file", path)
	}
	v, err := strconv.ParseInt(string(rest[:i]), 10, 64)
	if err != nil || v < 1 {
		return nil, 0, fmt.Errorf("%s: bad version %q", path, rest[:i])
	}
	return rest[i+1:], v, nil
}

// Load implements Store. It takes no lock: files are replaced atomically.
func (s *DirStore) Load(ctx context.Context, ns, id string) ([]byte, int64, error) {
	_, file, _, err := s.begin(ctx, "load", ns, id)
	if err != nil {
		return nil, 0, err
	}
	data, v, err := readFile(file)
	switch {
	case err != nil:
		return nil, 0, &Error{Op: "load", Namespace: ns, ID: id, Err: err}
	case v == 0:
		return nil, 0, &Error{Op: "load", Namespace: ns, ID: id, Err: ErrNotFound}
	}
	return data, v, nil
}

// Save implements Store.
func (s *DirStore) Save(ctx context.Context, ns, id string, data []byte, version int64) (int64, error) {
	dir, file, lock, err := s.begin(ctx, "save", ns, id)
	if err != nil {
		return 0, err
	}
	fail := func(err error) (int64, error) { return 0, &Error{Op: "save", Namespace: ns, ID: id, Err: err} }
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fail(err)
	}
	unlock, err := fsutil.LockContext(ctx, lock)
	if err != nil {
		return fail(err)
	}
	defer unlock()
	_, have, err := readFile(file)
	if err != nil {
		return fail(err)
	}
	if have != version {
		return fail(ErrConflict)
	}
	next := version + 1
	buf := make([]byte, 0, len(dirHeader)+24+len(data))
	buf = append(buf, dirHeader...)
	buf = strconv.AppendInt(buf, next, 10)
	buf = append(buf, '\n')
	buf = append(buf, data...)
	if err := fsutil.WriteFile(file, buf, fsutil.Options{}); err != nil {
		return fail(err)
	}
	return next, nil
}

// Delete implements Store.
func (s *DirStore) Delete(ctx context.Context, ns, id string) error {
	_, file, lock, err := s.begin(ctx, "delete", ns, id)
	if err != nil {
		return err
	}
	if _, err := os.Stat(file); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &Error{Op: "delete", Namespace: ns, ID: id, Err: ErrNotFound}
		}
		return &Error{Op: "delete", Namespace: ns, ID: id, Err: err}
	}
	unlock, err := fsutil.LockContext(ctx, lock)
	if err != nil {
		return &Error{Op: "delete", Namespace: ns, ID: id, Err: err}
	}
	defer unlock()
	if err := os.Remove(file); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &Error{Op: "delete", Namespace: ns, ID: id, Err: ErrNotFound}
		}
		return &Error{Op: "delete", Namespace: ns, ID: id, Err: err}
	}
	return nil
}

// Close implements Store.
func (s *DirStore) Close() error {
	s.closed.Store(true)
	return nil
}
