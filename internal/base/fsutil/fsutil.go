// Package fsutil holds the file-system primitives every part of agentctx
// writes through: atomic writes (temp file + rename, so a crash never leaves
// a partial file), exclusive creation for no-overwrite rules, and a
// reversible encoding of ids into safe file names.
package fsutil

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrEmptyName is returned by SafeName for an empty id.
var ErrEmptyName = errors.New("empty id")

// maxName is the longest encoded name kept whole; longer ones are shortened
// with a hash (file systems limit names to 255 bytes, and callers add
// prefixes and suffixes).
const maxName = 200

// SafeName encodes an id as one file name component that cannot leave its
// directory and that every common file system accepts: bytes outside
// [A-Za-z0-9._-] and the '%' sign are written as %XX (so NUL, control
// characters, '/' and '\' never appear), a leading '.' is written as %2E
// (so ".", ".." and hidden names never appear), a trailing '.' as %2E, and
// the first letter of a name Windows reserves for a device (CON, PRN, AUX,
// NUL, COM0-COM9, LPT0-LPT9, in any case, alone or before an extension, as
// in "nul.txt") as %XX. Ids that are already safe are kept as they are. The
// encoding is reversible (see UnsafeName) and two different ids never give
// the same name, except for ids whose encoding is longer than 200 bytes:
// those keep a 150-byte prefix and add a SHA-256 of the whole id.
//
// On case-insensitive file systems ids that differ only in case share a
// name; tool call ids in the wild are case-sensitive, so use a
// case-sensitive file system for offload directories.
func SafeName(id string) (string, error) {
	if id == "" {
		return "", ErrEmptyName
	}
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		if isSafe(c) && (c != '.' || i > 0) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	name := b.String()
	if strings.HasSuffix(name, ".") {
		name = name[:len(name)-1] + "%2E"
	}
	if isReserved(name) {
		name = fmt.Sprintf("%%%02X", name[0]) + name[1:]
	}
	if len(name) > maxName {
		sum := sha256.Sum256([]byte(id))
		name = name[:150] + "~" + hex.EncodeToString(sum[:16])
	}
	return name, nil
}

// isReserved reports whether name, or its part before the first '.', is a
// device name of Windows (compared without regard to case).
func isReserved(name string) bool {
	base, _, _ := strings.Cut(name, ".")
	switch len(base) {
	case 3:
		switch strings.ToUpper(base) {
		case "CON", "PRN", "AUX", "NUL":
			return true
		}
	case 4:
		p := strings.ToUpper(base[:3])
		return (p == "COM" || p == "LPT") && base[3] >= '0' && base[3] <= '9'
	}
	return false
}

func isSafe(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// UnsafeName decodes a name made by SafeName. Hashed (shortened) names
// cannot be decoded and return ok false.
func UnsafeName(name string) (id string, ok bool) {
	if strings.Contains(name, "~") {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if name[i] != '%' {
			b.WriteByte(name[i])
			continue
		}
		if i+2 >= len(name) {
			return "", false
		}
		var v byte
		if _, err := fmt.Sscanf(name[i+1:i+3], "%02X", &v); err != nil {
			return "", false
		}
		b.WriteByte(v)
		i += 2
	}
	return b.String(), true
}

// Options control how a file is written.
type Options struct {
	Perm fs.FileMode // file mode; zero means 0o600 (the owner only: what agentctx stores holds tool output)
	Sync bool        // fsync the file before it becomes visible
}

// TempPrefix begins the name of every temp file this package writes: a
// hidden file in the target's directory, renamed over the target once it is
// whole. A process killed between the two leaves it behind, and
// RemoveStaleTemp removes it later.
const TempPrefix = ".tmp-"

// StaleAge is how old a temp file must be before RemoveStaleTemp takes it
// for one left by a process that died: much longer than any write takes, so
// the temp file of a write in progress in another process is never removed.
const StaleAge = time.Hour

// RemoveStaleTemp removes the temp files this package left in dir (names
// made by WriteFile and CreateFile: TempPrefix and the digits of
// os.CreateTemp) that were last modified more than olderThan ago (zero
// means StaleAge) before now. Other files, directories and recent temp
// files are left alone. A dir that does not exist holds nothing to remove.
// It returns how many files it removed; removal errors are ignored (another
// process may remove the same file first).
func RemoveStaleTemp(dir string, olderThan time.Duration, now time.Time) (int, error) {
	if olderThan <= 0 {
		olderThan = StaleAge
	}
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	removed := 0
	for {
		ents, err := f.ReadDir(256)
		for _, e := range ents {
			if !e.Type().IsRegular() || !isTempName(e.Name()) {
				continue
			}
			fi, err := e.Info()
			if err != nil || now.Sub(fi.ModTime()) <= olderThan {
				continue
			}
			if os.Remove(filepath.Join(dir, e.Name())) == nil {
				removed++
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return removed, nil
			}
			return removed, err
		}
	}
}

// isTempName reports whether name is one os.CreateTemp made from TempPrefix
// (the prefix and a decimal number).
func isTempName(name string) bool {
	rest, ok := strings.CutPrefix(name, TempPrefix)
	if !ok || rest == "" {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if rest[i] < '0' || rest[i] > '9' {
			return false
		}
	}
	return true
}

// Data is what a file is written from: bytes, a string (written as it
// is, not copied into bytes first: a large artifact is not held twice),
// Parts, or a WriteFunc.
type Data interface {
	[]byte | string | Parts | WriteFunc
}

// Parts are the pieces of a file, written one after the other (a large
// state between a header and a trailer is not copied to be joined).
type Parts [][]byte

// WriteFunc writes a file's content, through a buffer (a content of tens
// of MB written as it is made, never held whole). An error it returns
// fails the write, and nothing is written.
type WriteFunc func(io.Writer) error

// writeTemp writes data to a new temp file in dir and returns its path.
func writeTemp[D Data](dir string, data D, o Options) (string, error) {
	f, err := os.CreateTemp(dir, TempPrefix+"*")
	if err != nil {
		return "", err
	}
	name := f.Name()
	switch d := any(data).(type) {
	case string:
		_, err = f.WriteString(d)
	case []byte:
		_, err = f.Write(d)
	case Parts:
		for _, p := range d {
			if _, err = f.Write(p); err != nil {
				break
			}
		}
	case WriteFunc:
		bw := bufio.NewWriterSize(f, 64<<10)
		if err = d(bw); err == nil {
			err = bw.Flush()
		}
	}
	if err == nil && o.Sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	perm := o.Perm
	if perm == 0 {
		perm = 0o600
	}
	if err == nil {
		err = os.Chmod(name, perm)
	}
	if err != nil {
		os.Remove(name)
		return "", err
	}
	return name, nil
}

// WriteFile writes data to path atomically: readers see the old file or
// the whole new one, never part of it. An existing file is replaced.
func WriteFile[D Data](path string, data D, o Options) error {
	tmp, err := writeTemp(filepath.Dir(path), data, o)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// CreateFile writes data to path atomically only if path does not exist;
// otherwise it returns an error matching fs.ErrExist and leaves the existing
// file alone. Concurrent calls for one path: exactly one succeeds.
func CreateFile[D Data](path string, data D, o Options) error {
	tmp, err := writeTemp(filepath.Dir(path), data, o)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return &fs.PathError{Op: "create", Path: path, Err: fs.ErrExist}
		}
		return err
	}
	return nil
}

// CreatePrivate creates an empty file at path, readable and writable by its
// owner only, unless something already exists there (which is left as it
// is). Databases that create their file on first open (SQLite, with its
// -wal and -shm files taking the file's mode) are given it first, so that
// what they store is not readable by other users.
func CreatePrivate(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// Busy reports whether err is SQLite's "database is locked" (SQLITE_BUSY
// or SQLITE_LOCKED), which a first open of a file by several processes at
// once can return without waiting for the busy timeout (switching the file
// to WAL mode takes an exclusive lock).
func Busy(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "SQLITE_BUSY") || strings.Contains(s, "SQLITE_LOCKED") || strings.Contains(s, "database is locked")
}

// RetryBusy runs fn until it returns an error that is not Busy, or for as
// long as timeout (or ctx) allows, waiting a little longer each time.
func RetryBusy(ctx context.Context, timeout time.Duration, fn func() error) error {
	deadline := time.Now().Add(timeout)
	wait := 5 * time.Millisecond
	for {
		err := fn()
		if !Busy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}
