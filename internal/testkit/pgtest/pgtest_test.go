package pgtest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestStart(t *testing.T) {
	ctx := context.Background()
	s, err := Start(ctx, Options{})
	if err != nil {
		Skip(t, err)
	}
	dir := s.dir
	defer func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if _, err := os.Stat(dir); dir != "" && !os.IsNotExist(err) {
			t.Errorf("Close left %s: %v", dir, err)
		}
	}()
	// By default the server lives in memory when the machine offers it.
	if mem := MemoryDir(); mem != "" && os.Getenv(EnvURL) == "" && !strings.HasPrefix(dir, mem+string(filepath.Separator)) {
		t.Errorf("server in %s, not under %s", dir, mem)
	}
	u, err := s.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var db, enc string
	if err := c.QueryRow(ctx, `SELECT current_database(), current_setting('server_encoding')`).Scan(&db, &enc); err != nil {
		t.Fatal(err)
	}
	if db == "postgres" || enc != "UTF8" {
		t.Errorf("database %q encoding %q", db, enc)
	}
}

func TestMissingBinaries(t *testing.T) {
	t.Setenv(EnvURL, "")
	_, err := Start(context.Background(), Options{BinDir: t.TempDir()})
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("Start without binaries: %v", err)
	}
}

// recorder is a testing.TB that records whether the test was failed or
// skipped.
type recorder struct {
	testing.TB
	failed, skipped bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Skipf(string, ...any)  { r.skipped = true }

func TestSkipFailsInCI(t *testing.T) {
	for _, c := range []struct {
		ci         string
		fail, skip bool
	}{{"true", true, false}, {"1", true, false}, {"", false, true}, {"false", false, true}} {
		t.Setenv("CI", c.ci)
		r := &recorder{TB: t}
		Skip(r, ErrUnavailable)
		if r.failed != c.fail || r.skipped != c.skip {
			t.Errorf("CI=%q: failed %v skipped %v", c.ci, r.failed, r.skipped)
		}
	}
}

// TestStaleDirectoriesRemoved: a directory left by a test process that
// died before Close is removed (by the next Start); a live process's is
// kept.
func TestStaleDirectoriesRemoved(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("stale directories are found by pid on Linux only")
	}
	base := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	mk := func(name string, pid int) string {
		d := filepath.Join(base, dirPrefix+name)
		if err := os.MkdirAll(filepath.Join(d, "data"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, ownerFile), []byte(strconv.Itoa(pid)), 0o600); err != nil {
			t.Fatal(err)
		}
		return d
	}
	stale, live := mk("stale", dead.Process.Pid), mk("live", os.Getpid())
	removeStale(base)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the dead process's directory is still there: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the live process's directory was removed: %v", err)
	}
}

// The cluster is a copy of one initdb kept beside the servers: a second
// Start runs no initdb, and a cache a killed process left half made is
// made again.
func TestPristineClusterCached(t *testing.T) {
	if os.Getenv(EnvURL) != "" {
		t.Skip("an existing server is used")
	}
	base, err := os.MkdirTemp(MemoryDir(), "pgtest-cache-test-") // "" is the temporary directory
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	if err := os.Chmod(base, 0o755); err != nil { // the server's user (root runs none) goes through it
		t.Fatal(err)
	}
	start := func() {
		t.Helper()
		s, err := Start(t.Context(), Options{Dir: base})
		if err != nil {
			Skip(t, err)
		}
		defer s.Close()
		if _, err := s.NewDatabase(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	start()
	caches, _ := filepath.Glob(filepath.Join(base, cachePrefix+"*"+string(filepath.Separator)+"complete"))
	if len(caches) != 1 {
		t.Fatalf("caches made: %q", caches)
	}
	cache := filepath.Dir(caches[0])
	pristine, err := os.Stat(filepath.Join(cache, "data", "PG_VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	start()
	if again, err := os.Stat(filepath.Join(cache, "data", "PG_VERSION")); err != nil || !again.ModTime().Equal(pristine.ModTime()) {
		t.Errorf("the second Start made the cluster again: %v", err)
	}
	// Half made: no marker, a file missing.
	os.Remove(filepath.Join(cache, "complete"))
	os.Remove(filepath.Join(cache, "data", "PG_VERSION"))
	start()
	if _, err := os.Stat(filepath.Join(cache, "complete")); err != nil {
		t.Errorf("the half-made cache was not made again: %v", err)
	}
}

// A template is prepared once per name, and each database made from it
// starts with what prepare left (a copy: one's rows are not the other's);
// a failed prepare fails every caller.
func TestTemplate(t *testing.T) {
	ctx := t.Context()
	s, err := Start(ctx, Options{})
	if err != nil {
		Skip(t, err)
	}
	defer s.Close()
	prepared := 0
	prepare := func(ctx context.Context, u string) error {
		prepared++
		c, err := pgx.Connect(ctx, u)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		_, err = c.Exec(ctx, `CREATE TABLE t (v int); INSERT INTO t VALUES (1)`)
		return err
	}
	for i := range 2 {
		tmpl, err := s.Template(ctx, "with-t", prepare)
		if err != nil {
			t.Fatal(err)
		}
		u, err := s.NewDatabaseFrom(ctx, tmpl)
		if err != nil {
			t.Fatal(err)
		}
		c, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := c.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil || n != 1 {
			t.Errorf("database %d from the template: %d rows, %v", i, n, err)
		}
		c.Exec(ctx, `INSERT INTO t VALUES (2)`)
		c.Close(ctx)
	}
	if prepared != 1 {
		t.Errorf("prepared %d times", prepared)
	}
	bad := errors.New("no")
	for range 2 {
		if _, err := s.Template(ctx, "broken", func(context.Context, string) error { return bad }); !errors.Is(err, bad) {
			t.Errorf("a failed template: %v", err)
		}
	}
}

// TestDatabasesShareOneConnection checks that the databases are created
// over one connection: each connection costs the server a process.
func TestDatabasesShareOneConnection(t *testing.T) {
	ctx := t.Context()
	s, err := Start(ctx, Options{})
	if err != nil {
		Skip(t, err)
	}
	defer s.Close()
	pid := func() uint32 {
		s.adminMu.Lock()
		defer s.adminMu.Unlock()
		if s.admin == nil {
			return 0
		}
		return s.admin.PgConn().PID()
	}
	first := pid()
	for i := range 3 {
		if _, err := s.NewDatabase(ctx); err != nil {
			t.Fatal(err)
		}
		if p := pid(); p == 0 || p != first {
			t.Fatalf("database %d created over backend %d, the first over %d", i, p, first)
		}
	}
}
