package dirsession

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentctx/agentctx/internal/base/fsutil"
	"github.com/agentctx/agentctx/session"
)

// The ledger (session.Ledger) of a directory is one file of JSON lines,
// <root>/.ledger.jsonl (List reads only directories of the root), appended
// to under an flock on <root>/.ledger.lock by every process sharing the
// directory. A line a crash cut short is ended before the next append and
// skipped when read.
const (
	ledgerFile = ".ledger.jsonl"
	ledgerLock = ".ledger.lock"
)

var _ session.LedgerDriver = (*driver)(nil)

// AppendLedger implements session.LedgerDriver: the entries in one write.
func (s *driver) AppendLedger(ctx context.Context, entries []session.LedgerEntry) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, e := range entries {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(s.root, 0o700); err != nil {
		return err
	}
	unlock, err := fsutil.LockContext(ctx, filepath.Join(s.root, ledgerLock))
	if err != nil {
		return err
	}
	defer unlock()
	f, err := os.OpenFile(filepath.Join(s.root, ledgerFile), os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	data := buf.Bytes()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if n := fi.Size(); n > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, n-1); err != nil {
			return err
		}
		if last[0] != '\n' { // a line cut short: end it (it is skipped when read)
			data = append([]byte{'\n'}, data...)
		}
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}

// ScanLedger implements session.LedgerDriver, in the file's order. It
// takes no lock: appends are whole lines, and a line not ended yet is not
// read.
func (s *driver) ScanLedger(ctx context.Context, f session.LedgerFilter, fn func(session.LedgerEntry) error) error {
	file, err := os.Open(filepath.Join(s.root, ledgerFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer file.Close()
	r := bufio.NewReaderSize(file, 64<<10)
	for n := 0; ; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return nil // a last line without its newline is being written, or was cut short
		}
		if err != nil {
			return err
		}
		var e session.LedgerEntry
		if json.Unmarshal(line, &e) != nil {
			continue // a line a crash cut short
		}
		if !f.Match(e) {
			continue
		}
		e.Time = e.Time.UTC()
		if err := fn(e); err != nil {
			return err
		}
	}
}
