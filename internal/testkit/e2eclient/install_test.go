package e2eclient

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Test binaries run in parallel, each with its own sync.Once: the install
// must be one per machine, not one per binary (two npm installs into one
// cache at once broke a fresh machine's first go test ./...).
func TestInstallOncePerMachine(t *testing.T) {
	if dir := os.Getenv("E2ECLIENT_INSTALL_DIR"); dir != "" {
		if _, err := install(dir, ClaudePackage, CodexPackage); err != nil {
			t.Fatal(err)
		}
		return
	}
	bin := t.TempDir()
	calls := filepath.Join(t.TempDir(), "calls")
	// A fake npm that records its call and takes its time, as a real
	// install does.
	script := "#!/bin/sh\necho x >> " + calls + "\nsleep 1\n"
	if err := os.WriteFile(filepath.Join(bin, "npm"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "cache")
	var wg sync.WaitGroup
	errs := make([]error, 3)
	outs := make([][]byte, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestInstallOncePerMachine$")
			cmd.Env = append(os.Environ(), "E2ECLIENT_INSTALL_DIR="+dir, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			outs[i], errs[i] = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, outs[i])
		}
	}
	data, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "x"); n != 1 {
		t.Fatalf("npm install ran %d times for 3 processes, want 1", n)
	}
}
