//go:build unix

package dirsession

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentctx/agentctx/internal/testkit/memtest"
	"github.com/agentctx/agentctx/session"
)

// open returns a store in a new directory and the path of the session
// file of ns/id in it.
func open(t *testing.T, ns, id string) (session.Store, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	_, file, _, err := (&driver{root: dir}).paths(ns, id)
	if err != nil {
		t.Fatal(err)
	}
	return s, file
}

// mustSave saves data over version and returns the new version.
func mustSave(t *testing.T, s session.Store, data string, version int64) int64 {
	t.Helper()
	v, err := s.Save(context.Background(), "ns", "s", []byte(data), version)
	if err != nil || v != version+1 {
		t.Fatalf("Save over v%d = %d, %v", version, v, err)
	}
	return v
}

// wantState checks that Load, Stat and List give data at version.
func wantState(t *testing.T, s session.Store, data string, version int64) {
	t.Helper()
	ctx := context.Background()
	got, v, err := s.Load(ctx, "ns", "s")
	if err != nil || v != version || string(got) != data {
		t.Fatalf("Load = %.40q v%d, %v; want %.40q v%d", got, v, err, data, version)
	}
	info, err := s.Stat(ctx, "ns", "s")
	if err != nil || info.Version != version || info.Size != int64(len(data)) {
		t.Fatalf("Stat = %+v, %v; want v%d size %d", info, err, version, len(data))
	}
	l, err := s.List(ctx, "ns")
	if err != nil || len(l) != 1 || l[0].Version != version || l[0].Size != int64(len(data)) {
		t.Fatalf("List = %+v, %v; want v%d size %d", l, err, version, len(data))
	}
}

// A record cut short at any byte (a crash, a full disk, a writer killed in
// its write) or whose data was damaged is passed over: every reader gets
// the state before it, and the next Save over that state succeeds.
func TestJournalTornRecordKeepsThePreviousState(t *testing.T) {
	s, file := open(t, "ns", "s")
	v := mustSave(t, s, "first", 0)
	v = mustSave(t, s, "second state", v)
	whole, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(whole, []byte(journalMagic)) {
		t.Fatalf("session file starts %q, want a journal", whole[:20])
	}
	var nonce [nonceSize]byte
	copy(nonce[:], whole[len(journalMagic):])
	next := appendRecord(nil, &nonce, v+1, []byte("the third state, never whole"))
	damaged := bytes.Clone(next)
	damaged[recHeaderSize+3] ^= 1
	cases := map[string][]byte{"damaged data": damaged}
	for cut := 1; cut < len(next); cut++ {
		cases[fmt.Sprintf("cut at %d of %d", cut, len(next))] = next[:cut]
	}
	for name, tail := range cases {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(file, append(bytes.Clone(whole), tail...), 0o600); err != nil {
				t.Fatal(err)
			}
			wantState(t, s, "second state", v)
			if _, err := s.Save(context.Background(), "ns", "s", []byte("x"), v+1); !errors.Is(err, session.ErrConflict) {
				t.Fatalf("Save over the torn version: %v, want ErrConflict", err)
			}
			nv := mustSave(t, s, "third", v)
			wantState(t, s, "third", nv)
			nv = mustSave(t, s, "fourth", nv)
			wantState(t, s, "fourth", nv)
		})
	}
	// The first record of a journal torn too (a journal written anew is
	// renamed whole, so only a damaged disk does this): no state is complete.
	if err := os.WriteFile(file, append(bytes.Clone(whole[:fileHeaderSize]), next[:len(next)-1]...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Load(context.Background(), "ns", "s"); !errors.Is(err, errCorrupt) {
		t.Fatalf("Load of a journal with no whole record: %v, want errCorrupt", err)
	}
}

// A session file of the format before journals is read as it was, and its
// next Save makes it a journal; DeleteVersion judges its version.
func TestOldFormatFileLoads(t *testing.T) {
	s, file := open(t, "ns", "s")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	old := "{\"a\":1}\n\x00 binary"
	if err := os.WriteFile(file, []byte("agentctx-session 7\n"+old), 0o600); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, old, 7)
	ctx := context.Background()
	if err := s.DeleteVersion(ctx, "ns", "s", 6); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("DeleteVersion of a stale version: %v", err)
	}
	if _, err := s.Save(ctx, "ns", "s", []byte("x"), 6); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("Save over a stale version: %v", err)
	}
	v := mustSave(t, s, "new", 7)
	wantState(t, s, "new", 8)
	if b, _ := os.ReadFile(file); !bytes.HasPrefix(b, []byte(journalMagic)) {
		t.Fatalf("after a Save the file starts %q, want a journal", b[:20])
	}
	if err := s.DeleteVersion(ctx, "ns", "s", v); err != nil {
		t.Fatal(err)
	}
	// An old-format file DeleteVersion removes.
	if err := os.WriteFile(file, []byte("agentctx-session 3\nx"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteVersion(ctx, "ns", "s", 3); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Load(ctx, "ns", "s"); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("Load after DeleteVersion: %v", err)
	}
}

// Saves append to the journal, which is written anew (a new file) only
// when it has grown past its bound: over 1,000 saves of states of varied
// sizes it stays within journalBound of its last record, and few saves
// make a new file.
func TestJournalStaysBounded(t *testing.T) {
	s, file := open(t, "ns", "s")
	var v int64
	newFiles := 0
	var ino uint64
	for i := range 1000 {
		size := []int{10, 1000, 5000, 300, 40 << 10}[i/200]
		data := strings.Repeat(string(rune('a'+i%26)), size+i%7)
		v = mustSave(t, s, data, v)
		fi, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		if lim := int64(fileHeaderSize) + journalBound(int64(recOverhead+len(data))); fi.Size() > lim {
			t.Fatalf("save %d: journal of %d bytes for a state of %d, over its bound %d", i, fi.Size(), len(data), lim)
		}
		if n := fi.Sys().(*syscall.Stat_t).Ino; n != ino {
			newFiles, ino = newFiles+1, n
		}
		if i%97 == 0 {
			wantState(t, s, data, v)
		}
	}
	if newFiles > 100 {
		t.Fatalf("%d of 1000 saves made a new file, want few", newFiles)
	}
	if newFiles < 5 {
		t.Fatalf("%d of 1000 saves made a new file: the journal was never written anew", newFiles)
	}
	t.Logf("%d of 1000 saves made a new file", newFiles)
	fi, _ := os.Stat(file)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("journal mode %v, want 0600", fi.Mode().Perm())
	}
	di, _ := os.Stat(filepath.Dir(file))
	if di.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %v, want 0700", di.Mode().Perm())
	}
}

// Two handles on one directory (two processes) take turns: each Save sees
// what the other appended or wrote anew since its own last one (a Save
// that trusts the record it wrote last must notice it is no longer last),
// and a version the other saved over conflicts.
func TestJournalTwoHandlesTakeTurns(t *testing.T) {
	a, file := open(t, "ns", "s")
	b, err := Open(filepath.Dir(filepath.Dir(file)))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	var v int64
	for i := range 300 {
		s, other := a, b
		if i%3 != 0 {
			s, other = b, a
		}
		data := strings.Repeat(string(rune('a'+i%26)), []int{100, 100, 9000, 30000}[i%4])
		if _, err := s.Save(ctx, "ns", "s", []byte(data), v-1); v > 0 && !errors.Is(err, session.ErrConflict) {
			t.Fatalf("save %d over a stale version: %v, want ErrConflict", i, err)
		}
		v = mustSave(t, s, data, v)
		if i%5 == 0 {
			wantState(t, other, data, v)
		}
	}
}

// A Save that wrote the last record trusts it without reading its data
// only while it is still the last: a record appended since (here damaged:
// its header and trailer whole, its data not) is checked like any other.
func TestJournalRecordAppendedSinceIsChecked(t *testing.T) {
	s, file := open(t, "ns", "s")
	v := mustSave(t, s, "first", 0)
	v = mustSave(t, s, "second", v)
	whole, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var nonce [nonceSize]byte
	copy(nonce[:], whole[len(journalMagic):])
	damaged := appendRecord(nil, &nonce, v+1, []byte("third"))
	damaged[recHeaderSize] ^= 1
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(damaged); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := s.Save(context.Background(), "ns", "s", []byte("x"), v+1); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("Save over the damaged record's version: %v, want ErrConflict", err)
	}
	v = mustSave(t, s, "third, whole", v)
	wantState(t, s, "third, whole", v)
}

// The bound: sixteen times a small record (few files written anew), at
// most 1 MiB beyond four times a large one (little disk).
func TestJournalBound(t *testing.T) {
	for _, tc := range []struct{ rec, want int64 }{
		{100, 16*100 + 64<<10},
		{25 << 10, 16*25<<10 + 64<<10},
		{1 << 20, 4<<20 + 1<<20 + 64<<10},
		{100 << 20, 400<<20 + 1<<20 + 64<<10},
	} {
		if got := journalBound(tc.rec); got != tc.want {
			t.Errorf("journalBound(%d) = %d, want %d", tc.rec, got, tc.want)
		}
	}
}

// A Save writes the state in its journal as it is given (a new journal,
// then a record appended): framing a record does not copy a large state.
func TestSaveDoesNotCopyTheState(t *testing.T) {
	s, file := open(t, "ns", "s")
	data := strings.Repeat(`{"result":"line of output"},`, 1<<15) // 896 KB
	var v int64
	for i, how := range []string{"new journal", "appended record"} {
		state := []byte(fmt.Sprint(i) + data)
		var nv int64
		var err error
		n := memtest.AllocatedBy(func() { nv, err = s.Save(context.Background(), "ns", "s", state, v) })
		if err != nil {
			t.Fatal(err)
		}
		v = nv
		if n > uint64(len(state))/4 {
			t.Errorf("%s: saving %d bytes allocated %d", how, len(state), n)
		}
		wantState(t, s, string(state), v)
	}
	if fi, err := os.Stat(file); err != nil || fi.Size() < int64(2*len(data)) {
		t.Fatalf("the journal is %v (%v): the second state was not appended", fi.Size(), err)
	}
}
