package cli_test

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentctx/agentctx/internal/app/cli"
)

// unreadable returns a file that exists but cannot be read: reading
// /proc/self/mem at offset 0 fails with an I/O error (EIO), even as root
// (a file with mode 0 is readable by root). It skips where there is none.
func unreadable(t *testing.T) string {
	t.Helper()
	const p = "/proc/self/mem"
	_, err := os.ReadFile(p)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Skipf("no unreadable file here (%s: %v)", p, err)
	}
	return p
}

// An address that is not one is bad usage; a good address the system
// refuses (the port is taken) is a runtime failure.
func TestExitCodeListen(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip(err)
	}
	defer taken.Close()
	ws := filepath.Join(t.TempDir(), "ws")
	for _, tt := range []struct {
		args []string
		want int
	}{
		{[]string{"proxy", "--workspace", ws, "--listen", "127.0.0.1:99999"}, cli.ExitUsage},
		{[]string{"proxy", "--workspace", ws, "--listen", "127.0.0.1:x"}, cli.ExitUsage},
		{[]string{"proxy", "--workspace", ws, "--listen", taken.Addr().String()}, cli.ExitFailure},
		{[]string{"mcp", "--workspace", ws, "--http", "127.0.0.1:99999"}, cli.ExitUsage},
		{[]string{"mcp", "--workspace", ws, "--http", taken.Addr().String()}, cli.ExitFailure},
	} {
		code, out, errs := runCLI(t, "", tt.args...)
		if code != tt.want || out != "" || strings.Count(errs, "\n") != 1 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d and one line on stderr", tt.args, code, out, errs, tt.want)
		}
	}
}

// A file the user names that exists but cannot be read is a runtime
// failure, exit 1, not bad usage: the user named the right file, the
// system failed (I/O, permission, a full disk). A file that does not exist,
// or a directory, is bad usage, exit 2. ExitCode makes this choice, every
// command alike.
func TestExitCodeNamedFiles(t *testing.T) {
	bad := unreadable(t)
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.json")
	conv := filepath.Join(dir, "c.json")
	if err := os.WriteFile(conv, []byte(`[{"role":"user","content":"hi"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	for _, tt := range []struct {
		name string
		args []string
		want int
	}{
		{"config unreadable", []string{"count", "--config", bad, conv}, cli.ExitFailure},
		{"config missing", []string{"count", "--config", missing, conv}, cli.ExitUsage},
		{"config directory", []string{"count", "--config", dir, conv}, cli.ExitUsage},
		{"prices unreadable", []string{"report", "--prices", bad, conv}, cli.ExitFailure},
		{"prices missing", []string{"report", "--prices", missing, conv}, cli.ExitUsage},
		{"prices directory", []string{"report", "--prices", dir, conv}, cli.ExitUsage},
		{"proxy prices unreadable", []string{"proxy", "--listen", "127.0.0.1:0", "--workspace", ws, "--prices", bad}, cli.ExitFailure},
		{"input missing", []string{"count", missing}, cli.ExitUsage},
		{"input directory", []string{"count", dir}, cli.ExitUsage},
		{"input unreadable", []string{"count", bad}, cli.ExitFailure},
		{"launch log in a missing directory", []string{"claude", "--log", filepath.Join(missing, "log")}, cli.ExitUsage},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCLI(t, "", tt.args...)
			if code != tt.want || out != "" || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "agentctx: ") {
				t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d and one line on stderr", tt.args, code, out, errs, tt.want)
			}
		})
	}
}

// failingWriter fails every write, as stdout on a full disk does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// The root command's own failures are not bad usage: only cobra's
// rejection of the command line is. A --version that cannot be written,
// or a configuration file that cannot be read, is a runtime failure.
func TestExitCodeRoot(t *testing.T) {
	var errb strings.Builder
	if code := cli.Run(t.Context(), []string{"--version"}, cli.Streams{In: strings.NewReader(""), Out: failingWriter{}, Err: &errb}); code != cli.ExitFailure {
		t.Errorf("--version to a full disk: exit %d, stderr %q; want %d", code, errb.String(), cli.ExitFailure)
	}
	bad := unreadable(t)
	for _, tt := range []struct {
		args []string
		want int
	}{
		{[]string{"--config", bad}, cli.ExitFailure},
		{[]string{"--config", bad, "--version"}, cli.ExitFailure},
		{[]string{"frobnicate"}, cli.ExitUsage},
		{[]string{"--frobnicate"}, cli.ExitUsage},
	} {
		code, _, errs := runCLI(t, "", tt.args...)
		if code != tt.want || strings.Count(errs, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and one line", tt.args, code, errs, tt.want)
		}
	}
}
