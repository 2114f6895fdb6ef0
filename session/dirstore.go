package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

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
	if err := s.keepNames(dir, file, ns, id); err != nil {
		return fail(err)
	}
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
	removeID(file)
	return nil
}

// DeleteVersion implements Store.
func (s *DirStore) DeleteVersion(ctx context.Context, ns, id string, version int64) error {
	_, file, lock, err := s.begin(ctx, "delete", ns, id)
	if err != nil {
		return err
	}
	fail := func(err error) error { return &Error{Op: "delete", Namespace: ns, ID: id, Err: err} }
	if _, err := os.Stat(file); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fail(ErrNotFound)
		}
		return fail(err)
	}
	unlock, err := fsutil.LockContext(ctx, lock)
	if err != nil {
		return fail(err)
	}
	defer unlock()
	_, have, err := readFile(file)
	switch {
	case err != nil:
		return fail(err)
	case have == 0:
		return fail(ErrNotFound)
	case have != version:
		return fail(ErrConflict)
	}
	if err := os.Remove(file); err != nil {
		return fail(err)
	}
	removeID(file)
	return nil
}

// removeID removes the id kept beside a deleted session (keepNames), if
// any; the lock file stays, as Delete leaves it.
func removeID(file string) {
	base := strings.TrimSuffix(file, ".session")
	if strings.Contains(filepath.Base(base), "~") {
		os.Remove(base + idSuffix)
	}
}

// keyFile is the file, in a namespace's directory, holding the namespace
// when its directory name is a hash (a long namespace); idSuffix ends the
// file beside a session's holding its id, likewise.
const (
	keyFile  = ".namespace"
	idSuffix = ".id"
)

// keepNames writes the namespace and the id beside the session when
// their file names are hashes, so that List can name them.
func (s *DirStore) keepNames(dir, file, ns, id string) error {
	if strings.Contains(filepath.Base(dir), "~") {
		if _, err := os.Stat(filepath.Join(dir, keyFile)); err != nil {
			if err := fsutil.WriteFile(filepath.Join(dir, keyFile), []byte(ns), fsutil.Options{}); err != nil {
				return err
			}
		}
	}
	base := strings.TrimSuffix(filepath.Base(file), ".session")
	if strings.Contains(base, "~") {
		p := filepath.Join(dir, base+idSuffix)
		if _, err := os.Stat(p); err != nil {
			return fsutil.WriteFile(p, []byte(id), fsutil.Options{})
		}
	}
	return nil
}

// nameOf decodes a file name made by SafeName, or reads the name kept
// beside it (keepNames) when it is a hash.
func nameOf(name, kept string) (string, bool) {
	if n, ok := fsutil.UnsafeName(name); ok {
		return n, true
	}
	b, err := os.ReadFile(kept)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// statFile describes a session file from its header and size, without
// reading its data; ok is false when it does not exist.
func statFile(path string) (version, size int64, updated time.Time, ok bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, time.Time{}, false, nil
	}
	if err != nil {
		return 0, 0, time.Time{}, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, time.Time{}, false, err
	}
	head := make([]byte, len(dirHeader)+24)
	n, _ := io.ReadFull(f, head)
	rest, okh := bytes.CutPrefix(head[:n], []byte(dirHeader))
	i := bytes.IndexByte(rest, '\n')
	if !okh || i < 0 {
		return 0, 0, time.Time{}, false, fmt.Errorf("%s: not a session file", path)
	}
	v, err := strconv.ParseInt(string(rest[:i]), 10, 64)
	if err != nil || v < 1 {
		return 0, 0, time.Time{}, false, fmt.Errorf("%s: bad version %q", path, rest[:i])
	}
	return v, fi.Size() - int64(len(dirHeader)+i+1), fi.ModTime(), true, nil
}

// Stat implements Store. Updated is the file's modification time.
func (s *DirStore) Stat(ctx context.Context, ns, id string) (Info, error) {
	_, file, _, err := s.begin(ctx, "stat", ns, id)
	if err != nil {
		return Info{}, err
	}
	v, size, updated, ok, err := statFile(file)
	switch {
	case err != nil:
		return Info{}, &Error{Op: "stat", Namespace: ns, ID: id, Err: err}
	case !ok:
		return Info{}, &Error{Op: "stat", Namespace: ns, ID: id, Err: ErrNotFound}
	}
	return Info{Namespace: ns, ID: id, Version: v, Size: size, Updated: updated}, nil
}

// List implements Store. Files that are not sessions of this store (names
// it would not write) are left out.
func (s *DirStore) List(ctx context.Context, ns string) ([]Info, error) {
	if err := CheckNamespace(ctx, ns); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, &Error{Op: "list", Namespace: ns, Err: ErrClosed}
	}
	fail := func(err error) ([]Info, error) { return nil, &Error{Op: "list", Namespace: ns, Err: err} }
	var dirs []string
	if ns != "" {
		name, err := fsutil.SafeName(ns)
		if err != nil {
			return fail(fmt.Errorf("%w: %w", ErrInvalidKey, err))
		}
		dirs = []string{name}
	} else {
		entries, err := os.ReadDir(s.root)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fail(err)
		}
		for _, e := range entries {
			if e.IsDir() {
				dirs = append(dirs, e.Name())
			}
		}
	}
	var out []Info
	for _, d := range dirs {
		space, ok := nameOf(d, filepath.Join(s.root, d, keyFile))
		if !ok {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(s.root, d))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fail(err)
		}
		for _, e := range entries {
			if err := ctx.Err(); err != nil {
				return fail(err)
			}
			base, isSession := strings.CutSuffix(e.Name(), ".session")
			if !isSession || e.IsDir() {
				continue
			}
			id, ok := nameOf(base, filepath.Join(s.root, d, base+idSuffix))
			if !ok {
				continue
			}
			v, size, updated, found, err := statFile(filepath.Join(s.root, d, e.Name()))
			if err != nil {
				return fail(err)
			}
			if found {
				out = append(out, Info{Namespace: space, ID: id, Version: v, Size: size, Updated: updated})
			}
		}
	}
	SortInfos(out)
	return out, nil
}

// Close implements Store.
func (s *DirStore) Close() error {
	s.closed.Store(true)
	return nil
}
