package fsutil

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/testkit/memtest"
)

func TestSafeName(t *testing.T) {
	tests := []struct{ id, want string }{
		{"toolu_01ABC", "toolu_01ABC"},
		{"call-1.x", "call-1.x"},
		{"..", "%2E%2E"},
		{".", "%2E"},
		{".hidden", "%2Ehidden"},
		{"a/b", "a%2Fb"},
		{`a\b`, "a%5Cb"},
		{"../../etc/passwd", "%2E.%2F..%2Fetc%2Fpasswd"},
		{"a\x00b", "a%00b"},
		{"a\nb", "a%0Ab"},
		{"100%", "100%25"},
		{"é", "%C3%A9"},
		{"a.", "a%2E"},
		{"CON", "%43ON"},
		{"nul", "%6Eul"},
		{"Nul.txt", "%4Eul.txt"},
		{"aux.tar.gz", "%61ux.tar.gz"},
		{"COM1", "%43OM1"},
		{"lpt9.md", "%6Cpt9.md"},
		{"COM", "COM"},
		{"CONSOLE", "CONSOLE"},
		{"COM10", "COM10"},
		{"tool_result_CON", "tool_result_CON"},
		{"NUL\x00", "NUL%00"},
	}
	for _, tt := range tests {
		got, err := SafeName(tt.id)
		if err != nil || got != tt.want {
			t.Errorf("SafeName(%q) = %q, %v; want %q", tt.id, got, err, tt.want)
		}
		back, ok := UnsafeName(got)
		if !ok || back != tt.id {
			t.Errorf("UnsafeName(%q) = %q, %v; want %q", got, back, ok, tt.id)
		}
		if filepath.Base(got) != got || strings.ContainsAny(got, `/\`) {
			t.Errorf("SafeName(%q) = %q is not one path component", tt.id, got)
		}
	}
	if _, err := SafeName(""); !errors.Is(err, ErrEmptyName) {
		t.Errorf("SafeName(\"\") error = %v, want ErrEmptyName", err)
	}
}

func TestSafeNameNoCollisions(t *testing.T) {
	ids := []string{"a/b", "a%2Fb", "a_b", ".a", "%2Ea", "a.", "a%2E", "CON", "%43ON", "con", "NUL", "nul.", strings.Repeat("x", 300), strings.Repeat("x", 299) + "y"}
	seen := map[string]string{}
	for _, id := range ids {
		n, err := SafeName(id)
		if err != nil {
			t.Fatal(err)
		}
		if len(n) > 255 {
			t.Errorf("name for %d-byte id has %d bytes", len(id), len(n))
		}
		if prev, dup := seen[n]; dup {
			t.Errorf("ids %q and %q share name %q", prev, id, n)
		}
		seen[n] = id
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.md")
	if err := WriteFile(p, []byte("one"), Options{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("two"), Options{Sync: true}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "two" {
		t.Errorf("content = %q, want two", b)
	}
	if err := WriteFile(p, "three, from a string", Options{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "three, from a string" {
		t.Errorf("content = %q, want the string", b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("dir has %d entries, want 1 (temp files left behind?)", len(entries))
	}
	if err := WriteFile(filepath.Join(dir, "missing", "f"), "", Options{}); err == nil {
		t.Error("write into a missing dir succeeded")
	}
}

func TestCreateFileExclusive(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.md")
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := CreateFile(p, []byte{byte('a' + i)}, Options{})
			if err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			} else if !errors.Is(err, fs.ErrExist) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Errorf("%d concurrent creates succeeded, want 1", wins)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("dir has %d entries, want 1", len(entries))
	}
}

func TestRemoveStaleTemp(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	old := now.Add(-2 * StaleAge)
	files := map[string]time.Time{
		".tmp-123456":  old, // left by a killed process: removed
		".tmp-987":     now, // a write in progress: kept
		".tmp-notmine": old, // not a name this package makes: kept
		"a.txt":        old, // data: kept
		"tmp-123":      old,
	}
	for name, mt := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, ".tmp-555"), 0o755); err != nil {
		t.Fatal(err)
	}
	n, err := RemoveStaleTemp(dir, 0, now)
	if err != nil || n != 1 {
		t.Fatalf("RemoveStaleTemp = %d, %v; want 1, nil", n, err)
	}
	ents, _ := os.ReadDir(dir)
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	want := []string{".tmp-555", ".tmp-987", ".tmp-notmine", "a.txt", "tmp-123"}
	if strings.Join(left, " ") != strings.Join(want, " ") {
		t.Errorf("left %q, want %q", left, want)
	}
	if n, err := RemoveStaleTemp(filepath.Join(dir, "missing"), 0, now); n != 0 || err != nil {
		t.Errorf("missing dir: %d, %v; want 0, nil", n, err)
	}
}

// TestTempNamesAreStale checks that the temp files WriteFile makes are the
// ones RemoveStaleTemp recognises.
func TestTempNamesAreStale(t *testing.T) {
	dir := t.TempDir()
	name, err := writeTemp(dir, []byte("x"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !isTempName(filepath.Base(name)) {
		t.Errorf("temp file %q is not recognised as one", filepath.Base(name))
	}
	if n, _ := RemoveStaleTemp(dir, time.Nanosecond, time.Now().Add(time.Hour)); n != 1 {
		t.Errorf("removed %d, want 1", n)
	}
}

func TestRetryBusy(t *testing.T) {
	n := 0
	err := RetryBusy(context.Background(), time.Second, func() error {
		n++
		if n < 3 {
			return errors.New("database is locked (5) (SQLITE_BUSY)")
		}
		return nil
	})
	if err != nil || n != 3 {
		t.Fatalf("err %v after %d tries, want nil after 3", err, n)
	}
	other := errors.New("no such table")
	if err := RetryBusy(context.Background(), time.Second, func() error { return other }); err != other {
		t.Fatalf("a non-busy error was retried or changed: %v", err)
	}
}

// TestWriteFileStringNotCopied holds writing a string to writing it as
// it is: a large artifact is not copied into bytes first (issue 24).
func TestWriteFileStringNotCopied(t *testing.T) {
	s := strings.Repeat("line of output\n", 1<<16) // 960 KB
	p := filepath.Join(t.TempDir(), "big")
	var err error
	n := memtest.AllocatedBy(func() { err = WriteFile(p, s, Options{}) })
	if err != nil {
		t.Fatal(err)
	}
	if n > uint64(len(s))/4 {
		t.Errorf("writing a %d-byte string allocated %d bytes", len(s), n)
	}
	if got, _ := os.ReadFile(p); string(got) != s {
		t.Error("the file does not hold the string")
	}
}

// Parts are written one after the other, none copied to be joined.
func TestWriteFilePartsNotJoined(t *testing.T) {
	big := bytes.Repeat([]byte("line of output\n"), 1<<16) // 960 KB
	p := filepath.Join(t.TempDir(), "parts")
	var err error
	n := memtest.AllocatedBy(func() { err = WriteFile(p, Parts{[]byte("head:"), big, nil, []byte(":tail")}, Options{}) })
	if err != nil {
		t.Fatal(err)
	}
	if n > uint64(len(big))/4 {
		t.Errorf("writing %d bytes in parts allocated %d bytes", len(big), n)
	}
	if got, _ := os.ReadFile(p); string(got) != "head:"+string(big)+":tail" {
		t.Error("the file does not hold the parts in order")
	}
}

// A WriteFunc's content is written as it is made; a WriteFunc that fails
// leaves the file as it was and no temp file behind.
func TestWriteFileFunc(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "streamed")
	line := []byte("line of output\n")
	if err := WriteFile(p, WriteFunc(func(w io.Writer) error {
		for range 1 << 16 {
			if _, err := w.Write(line); err != nil {
				return err
			}
		}
		return nil
	}), Options{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, bytes.Repeat(line, 1<<16)) {
		t.Fatal("the file does not hold what was written")
	}
	boom := errors.New("boom")
	err := WriteFile(p, WriteFunc(func(w io.Writer) error { w.Write([]byte("partial")); return boom }), Options{})
	if !errors.Is(err, boom) {
		t.Errorf("a failing WriteFunc: %v", err)
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, bytes.Repeat(line, 1<<16)) {
		t.Error("a failed write changed the file")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files left, want 1", len(entries))
	}
}
