// Package dirsession is the session.Store kept in a directory, one file per
// session: the session state beside a directory workspace (workspace/dirstore
// keeps it in <root>/.sessions), shared by the processes that share the
// directory.
package dirsession

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentctx/agentctx/internal/base/fsutil"
	"github.com/agentctx/agentctx/session"
)

// driver keeps each session in a file <root>/<namespace>/<id>.session
// (names encoded so that they cannot leave their directory): a journal
// its saves append to (see journal.go), written anew atomically when it
// has grown. Save holds an flock on <id>.lock beside it, so processes
// sharing the directory never lose an update.
type driver struct {
	root string

	mu      sync.Mutex
	written map[string]written // by session file; at most maxWritten
}

// written is the last record a Save of this driver wrote to a journal and
// the journal's size after it. A Save that finds the journal so (its
// nonce, size and last record's header as they were: no other process
// appended to it or wrote it anew since) knows the record whole without
// reading its data again.
type written struct {
	nonce   [nonceSize]byte
	size    int64
	version int64
	hdrCRC  uint32
}

// maxWritten bounds driver.written: past it, an entry is dropped (the
// next Save of that session reads its last record whole).
const maxWritten = 1024

var _ session.Driver = (*driver)(nil)

// dirHeader starts a session file of the format before journals, followed
// by the version and a newline, then the data; such a file is still read
// (readOld), and its next Save replaces it with a journal.
const dirHeader = "agentctx-session "

// Open returns a session store rooted at dir. The directory is created on
// the first Save. The temp files a Save killed between write and rename
// left in the namespace directories (fsutil.TempPrefix names, older than
// fsutil.StaleAge) are removed.
func Open(dir string) (session.Store, error) {
	if dir == "" {
		return nil, errors.New("dirsession: empty directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("dirsession: %w", err)
	}
	removeStaleTemp(abs, time.Now())
	return session.New(&driver{root: abs, written: map[string]written{}}, session.Options{}), nil
}

// removeStaleTemp removes the stale temp files of Saves that died in root
// and its namespace directories (see fsutil.RemoveStaleTemp). It is best
// effort: a directory that cannot be read is reported by the store's reads
// and writes.
func removeStaleTemp(root string, now time.Time) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return
	}
	fsutil.RemoveStaleTemp(root, 0, now)
	for _, e := range ents {
		if e.IsDir() {
			fsutil.RemoveStaleTemp(filepath.Join(root, e.Name()), 0, now)
		}
	}
}

func (s *driver) paths(ns, id string) (dir, file, lock string, err error) {
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

func (s *driver) begin(ns, id string) (dir, file, lock string, err error) {
	dir, file, lock, err = s.paths(ns, id)
	if err != nil {
		return "", "", "", fmt.Errorf("%w: %w", session.ErrInvalidKey, err)
	}
	return dir, file, lock, nil
}

// openState reads the state of the session file at path (see readState);
// found is false when it does not exist. updated is the file's
// modification time.
func openState(path string, mode readMode) (st state, updated time.Time, found bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return state{}, time.Time{}, false, nil
	}
	if err != nil {
		return state{}, time.Time{}, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return state{}, time.Time{}, false, err
	}
	st, err = readState(f, fi.Size(), mode)
	if err != nil {
		return state{}, time.Time{}, false, err
	}
	return st, fi.ModTime(), true, nil
}

// Load implements session.Driver. It takes no lock: a journal only grows
// by whole records, read whole, and is replaced atomically.
func (s *driver) Load(ctx context.Context, ns, id string) ([]byte, int64, error) {
	_, file, _, err := s.begin(ns, id)
	if err != nil {
		return nil, 0, err
	}
	st, _, found, err := openState(file, withData)
	switch {
	case err != nil:
		return nil, 0, err
	case !found:
		return nil, 0, session.ErrNotFound
	}
	return st.data, st.version, nil
}

// Save implements session.Driver.
func (s *driver) Save(ctx context.Context, ns, id string, data []byte, version int64) (int64, error) {
	dir, file, lock, err := s.begin(ns, id)
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, err
	}
	unlock, err := fsutil.LockContext(ctx, lock)
	if err != nil {
		return 0, err
	}
	defer unlock()
	if err := s.keepNames(dir, file, ns, id); err != nil {
		return 0, err
	}
	if err := s.saveLocked(file, data, version); err != nil {
		return 0, err
	}
	return version + 1, nil
}

// saveLocked stores data at version+1 in the session file if it holds
// version (0: none), under the session's lock: it appends a record to the
// journal, or writes the journal anew when there is none, it is not
// whole, it is in the old format or it would grow past its bound.
func (s *driver) saveLocked(file string, data []byte, version int64) error {
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if version != 0 {
			return session.ErrConflict
		}
		return s.rewrite(file, version+1, data)
	}
	if err != nil {
		return err
	}
	st, err := s.readForSave(f, file)
	if err == nil && st.version != version {
		err = session.ErrConflict
	}
	if err != nil {
		f.Close()
		return err
	}
	if st.appendable && st.size+int64(recOverhead+len(data)) <= journalBound(int64(recOverhead+len(data))) {
		w, err := appendTo(f, &st, version+1, data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			s.remember(file, w)
		}
		return err
	}
	f.Close() // before the rename: some systems refuse to replace an open file
	return s.rewrite(file, version+1, data)
}

// readForSave reads the state of the open session file f for a Save: when
// its last record is the one this driver wrote last (s.written), from
// that record's header and trailer only; otherwise checking its data.
func (s *driver) readForSave(f *os.File, file string) (state, error) {
	fi, err := f.Stat()
	if err != nil {
		return state{}, err
	}
	s.mu.Lock()
	w, ok := s.written[file]
	delete(s.written, file) // until this Save ends well
	s.mu.Unlock()
	if ok && w.size == fi.Size() {
		st, err := readState(f, fi.Size(), headerOnly)
		if err == nil && st.appendable && st.nonce == w.nonce && st.version == w.version && st.hdrCRC == w.hdrCRC {
			return st, nil
		}
	}
	return readState(f, fi.Size(), verified)
}

// remember records the last record this driver wrote to file (see written).
func (s *driver) remember(file string, w written) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.written) >= maxWritten {
		for k := range s.written {
			delete(s.written, k)
			break
		}
	}
	s.written[file] = w
}

// forget drops what remember recorded of file.
func (s *driver) forget(file string) {
	s.mu.Lock()
	delete(s.written, file)
	s.mu.Unlock()
}

// appendTo appends the record of data at version to the journal f, whose
// state is st (its header, data and trailer written in turn: data is not
// copied to be framed), and returns what it wrote. A write that
// fails is taken back, as far as the file system allows; a part of it
// left behind is a torn record, which readers pass over and the next Save
// drops.
func appendTo(f *os.File, st *state, version int64, data []byte) (written, error) {
	hdr, trl := recordFrame(&st.nonce, version, data)
	off := st.size
	for _, p := range [...][]byte{hdr[:], data, trl[:]} {
		if _, err := f.WriteAt(p, off); err != nil {
			f.Truncate(st.size)
			return written{}, err
		}
		off += int64(len(p))
	}
	return written{st.nonce, off, version, recordCRC(hdr[:])}, nil
}

// rewrite writes the session file anew (writeJournal) and remembers it.
func (s *driver) rewrite(file string, version int64, data []byte) error {
	w, err := writeJournal(file, version, data)
	if err == nil {
		s.remember(file, w)
	}
	return err
}

// writeJournal writes the session file at path anew, atomically: a journal
// of one record, data at version. It returns what it wrote.
func writeJournal(path string, version int64, data []byte) (written, error) {
	nonce, err := newNonce()
	if err != nil {
		return written{}, err
	}
	head := appendFileHeader(make([]byte, 0, fileHeaderSize+recHeaderSize), &nonce)
	hdr, trl := recordFrame(&nonce, version, data)
	head = append(head, hdr[:]...)
	if err := fsutil.WriteFile(path, fsutil.Parts{head, data, trl[:]}, fsutil.Options{}); err != nil {
		return written{}, err
	}
	return written{nonce, int64(len(head) + len(data) + len(trl)), version, recordCRC(hdr[:])}, nil
}

// Delete implements session.Driver.
func (s *driver) Delete(ctx context.Context, ns, id string) error {
	_, file, lock, err := s.begin(ns, id)
	if err != nil {
		return err
	}
	if _, err := os.Stat(file); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return session.ErrNotFound
		}
		return err
	}
	unlock, err := fsutil.LockContext(ctx, lock)
	if err != nil {
		return err
	}
	defer unlock()
	s.forget(file)
	if err := os.Remove(file); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return session.ErrNotFound
		}
		return err
	}
	removeID(file)
	return nil
}

// DeleteVersion implements session.Driver.
func (s *driver) DeleteVersion(ctx context.Context, ns, id string, version int64) error {
	_, file, lock, err := s.begin(ns, id)
	if err != nil {
		return err
	}
	if _, err := os.Stat(file); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return session.ErrNotFound
		}
		return err
	}
	unlock, err := fsutil.LockContext(ctx, lock)
	if err != nil {
		return err
	}
	defer unlock()
	st, _, found, err := openState(file, verified)
	switch {
	case err != nil:
		return err
	case !found:
		return session.ErrNotFound
	case st.version != version:
		return session.ErrConflict
	}
	s.forget(file)
	if err := os.Remove(file); err != nil {
		return err
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
func (s *driver) keepNames(dir, file, ns, id string) error {
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

// statFile describes a session file: its last complete state (its data is
// read, to check it, and not kept) and its modification time; ok is false
// when it does not exist.
func statFile(path string) (version, size int64, updated time.Time, ok bool, err error) {
	st, updated, ok, err := openState(path, verified)
	return st.version, st.length, updated, ok, err
}

// Stat implements session.Driver. Updated is the file's modification time
// (an append sets it).
func (s *driver) Stat(ctx context.Context, ns, id string) (session.Info, error) {
	_, file, _, err := s.begin(ns, id)
	if err != nil {
		return session.Info{}, err
	}
	v, size, updated, ok, err := statFile(file)
	switch {
	case err != nil:
		return session.Info{}, err
	case !ok:
		return session.Info{}, session.ErrNotFound
	}
	return session.Info{Namespace: ns, ID: id, Version: v, Size: size, Updated: updated}, nil
}

// List implements session.Driver. Files that are not sessions of this store (names
// it would not write) are left out.
func (s *driver) List(ctx context.Context, ns string) ([]session.Info, error) {
	var dirs []string
	if ns != "" {
		name, err := fsutil.SafeName(ns)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", session.ErrInvalidKey, err)
		}
		dirs = []string{name}
	} else {
		entries, err := os.ReadDir(s.root)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		for _, e := range entries {
			if e.IsDir() {
				dirs = append(dirs, e.Name())
			}
		}
	}
	var out []session.Info
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
			return nil, err
		}
		for _, e := range entries {
			if err := ctx.Err(); err != nil {
				return nil, err
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
				return nil, err
			}
			if found {
				out = append(out, session.Info{Namespace: space, ID: id, Version: v, Size: size, Updated: updated})
			}
		}
	}
	return out, nil
}

// Close implements session.Driver.
func (s *driver) Close() error { return nil }
