package fsutil

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestSafeName(t *testing.T) {
	tests := []struct{ id, want string }{
		{"toolu_01ABC", "toolu_01ABC"},
		{"call-1.x", "call-1.x"},
		{"..", "%2E."},
		{".", "%2E"},
		{".hidden", "%2Ehidden"},
		{"a/b", "a%2Fb"},
		{`a\b`, "a%5Cb"},
		{"../../etc/passwd", "%2E.%2F..%2Fetc%2Fpasswd"},
		{"a\x00b", "a%00b"},
		{"a\nb", "a%0Ab"},
		{"100%", "100%25"},
		{"é", "%C3%A9"},
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
	ids := []string{"a/b", "a%2Fb", "a_b", ".a", "%2Ea", "a.", strings.Repeat("x", 300), strings.Repeat("x", 299) + "y"}
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
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("dir has %d entries, want 1 (temp files left behind?)", len(entries))
	}
	if err := WriteFile(filepath.Join(dir, "missing", "f"), nil, Options{}); err == nil {
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
