// Package pgtest starts a throwaway PostgreSQL server for tests: a cluster
// in a temporary directory (a copy of one initdb made once per machine),
// then the postgres server on a free loopback port,
// stopped and removed by Close (and killed with the test process, so none
// is left behind).
//
// The binaries come from Options.BinDir, else from PATH, else from the
// Debian postgresql package's /usr/lib/postgresql/<version>/bin. When none
// is found, Start returns an error matching ErrUnavailable that says how to
// install it; Skip turns that into a skip, or a failure under CI.
//
// PostgreSQL refuses to run as root: when the test runs as root, the server
// runs as the "postgres" user (created by the Debian package), else as
// "nobody", and its directory is handed to that user.
//
// The server's directory is memory-backed when the machine offers it
// (/dev/shm on Linux with room to spare): creating a database there takes
// tens of milliseconds instead of most of a second on a busy disk, and
// every conformance rule gets a fresh database. The server runs without
// fsync; it holds test data only. A directory left by a killed test
// process is removed by the next Start.
//
// With AGENTCTX_TEST_POSTGRES set to a URL, Start starts nothing and uses
// that server (it must let its user create databases).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrUnavailable is returned by Start when PostgreSQL is not installed.
var ErrUnavailable = errors.New("pgtest: PostgreSQL is not installed (initdb not found on PATH or in /usr/lib/postgresql/*/bin); install it with: apt-get install -y postgresql")

// EnvURL names the environment variable that points Start at an existing
// server instead of starting one.
const EnvURL = "AGENTCTX_TEST_POSTGRES"

// Options configure Start. The zero value is the default.
type Options struct {
	// BinDir holds initdb and postgres; "" means search PATH, then
	// /usr/lib/postgresql/*/bin (the newest version).
	BinDir string
	// Timeout bounds initdb and the server's start; 0 means 60 seconds.
	Timeout time.Duration
	// Dir is where the server's temporary directory is made; "" means a
	// memory-backed directory when there is one with room (see
	// MemoryDir), else os.TempDir().
	Dir string
}

// dirPrefix names the servers' temporary directories.
const dirPrefix = "agentctx-pgtest-"

// ownerFile, in a server's directory, holds the test process's pid.
const ownerFile = "owner.pid"

// Server is a running PostgreSQL server.
type Server struct {
	// URL connects to the server's "postgres" database as its superuser.
	URL string

	dir  string    // removed by Close; "" for a server given by EnvURL
	cmd  *exec.Cmd // the postgres process
	done chan struct{}

	fileCopy bool // CREATE DATABASE ... STRATEGY FILE_COPY is understood (PostgreSQL 15+)

	// admin is the one connection to the "postgres" database that
	// creates every database (nil until the first, or after an error
	// dropped it): a connection costs the server a process, tens of
	// milliseconds of CPU on a small virtual machine, and a suite creates
	// hundreds of databases. adminMu serializes its use.
	adminMu sync.Mutex
	admin   *pgx.Conn

	mu        sync.Mutex
	n         int
	templates map[string]*template // by Template's name
}

// template is a database made by Template, once.
type template struct {
	once sync.Once
	db   string
	err  error
}

// Start starts a server (or connects to the one named by EnvURL). The
// zero Options means the documented defaults.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	if u := os.Getenv(EnvURL); u != "" {
		s := &Server{URL: u}
		if err := s.ping(ctx); err != nil {
			return nil, fmt.Errorf("pgtest: %s=%s: %w", EnvURL, redact(u), err)
		}
		return s, nil
	}
	bin, err := findBin(o.BinDir)
	if err != nil {
		return nil, err
	}
	base := o.Dir
	if base == "" {
		if base = MemoryDir(); base == "" {
			base = os.TempDir()
		}
	}
	removeStale(base)
	dir, err := os.MkdirTemp(base, dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s := &Server{dir: dir}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	cred, err := serverUser(dir)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if err := initData(ctx, bin, base, data, cred); err != nil {
		return nil, err
	}
	if err := s.start(ctx, bin, data, cred); err != nil {
		return nil, err
	}
	ok = true
	return s, nil
}

// start starts postgres from bin on the cluster in data, on a free port,
// as cred, logging to postgres.log in s.dir, and waits until it answers.
func (s *Server) start(ctx context.Context, bin, data string, cred *credential) error {
	dir := s.dir
	port, err := freePort()
	if err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer logf.Close()
	s.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=", "-c", "max_connections=200",
		"-F", "-c", "full_page_writes=off", "-c", "synchronous_commit=off",
		// Checkpoints are cheap without fsync: keep the WAL (in memory) small.
		"-c", "max_wal_size=128MB")
	s.cmd.Dir = dir
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	setCred(s.cmd, cred)
	killWithParent(s.cmd)
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	s.done = make(chan struct{})
	go func() { s.cmd.Wait(); close(s.done) }()
	s.URL = fmt.Sprintf("postgres://agentctx@127.0.0.1:%d/postgres?sslmode=disable", port)
	for {
		if err := s.ping(ctx); err == nil {
			break
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(logf.Name())
			return fmt.Errorf("pgtest: postgres exited: %s\n%s", s.cmd.ProcessState, log)
		case <-ctx.Done():
			log, _ := os.ReadFile(logf.Name())
			return fmt.Errorf("pgtest: postgres did not start: %w\n%s", ctx.Err(), log)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// ping connects to the server and learns its version; the connection
// stays open as the admin connection.
func (s *Server) ping(ctx context.Context) error {
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	c, err := s.adminConn(ctx)
	if err != nil {
		return err
	}
	var v string
	if err := c.QueryRow(ctx, `SELECT current_setting('server_version_num')`).Scan(&v); err != nil {
		s.dropAdmin()
		return err
	}
	n, _ := strconv.Atoi(v)
	s.fileCopy = n >= 150000
	return nil
}

// adminConn returns the admin connection, connecting when there is none.
// s.adminMu must be held.
func (s *Server) adminConn(ctx context.Context) (*pgx.Conn, error) {
	if s.admin != nil && !s.admin.IsClosed() {
		return s.admin, nil
	}
	c, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		return nil, err
	}
	s.admin = c
	return c, nil
}

// dropAdmin closes the admin connection after an error (the next use
// connects again). s.adminMu must be held.
func (s *Server) dropAdmin() {
	if s.admin != nil {
		s.admin.Close(context.Background())
		s.admin = nil
	}
}

// NewDatabase creates an empty database and returns its URL.
func (s *Server) NewDatabase(ctx context.Context) (string, error) {
	return s.NewDatabaseFrom(ctx, "")
}

// Template returns a template database of the server made once per name:
// an empty database that prepare filled (given its URL; it must leave no
// connection open), for NewDatabaseFrom to copy. A database made of one
// costs a copy, not what prepare did (a store's migrations: most of the
// time a conformance rule's fresh database took).
func (s *Server) Template(ctx context.Context, name string, prepare func(ctx context.Context, url string) error) (string, error) {
	s.mu.Lock()
	if s.templates == nil {
		s.templates = map[string]*template{}
	}
	tp := s.templates[name]
	if tp == nil {
		tp = &template{}
		s.templates[name] = tp
	}
	s.mu.Unlock()
	tp.once.Do(func() {
		db, err := s.createDatabase(ctx, "")
		if err == nil {
			err = prepare(ctx, s.databaseURL(db))
		}
		if err != nil {
			tp.err = fmt.Errorf("pgtest: template %s: %w", name, err)
			return
		}
		tp.db = db
	})
	return tp.db, tp.err
}

// NewDatabaseFrom creates a database copied from template (a database
// Template returned; "" is template1, an empty one) and returns its URL.
func (s *Server) NewDatabaseFrom(ctx context.Context, template string) (string, error) {
	name, err := s.createDatabase(ctx, template)
	if err != nil {
		return "", err
	}
	return s.databaseURL(name), nil
}

// createDatabase creates a database copied from template ("" is
// template1) and returns its name.
func (s *Server) createDatabase(ctx context.Context, template string) (string, error) {
	var b [6]byte
	rand.Read(b[:])
	s.mu.Lock()
	s.n++
	name := fmt.Sprintf("test_%d_%s", s.n, hex.EncodeToString(b[:]))
	s.mu.Unlock()
	create := "CREATE DATABASE " + name
	if template != "" {
		create += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	}
	// FILE_COPY copies the template's files and checkpoints (cheap without
	// fsync) instead of writing them all to the WAL: about twice as fast.
	if s.fileCopy {
		create += " STRATEGY FILE_COPY"
	}
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	c, err := s.adminConn(ctx)
	if err != nil {
		return "", fmt.Errorf("pgtest: %w", err)
	}
	if _, err := c.Exec(ctx, create); err != nil {
		s.dropAdmin()
		return "", fmt.Errorf("pgtest: create database: %w", err)
	}
	return name, nil
}

// databaseURL is the URL of the server's database name.
func (s *Server) databaseURL(name string) string {
	u, err := url.Parse(s.URL)
	if err != nil {
		return s.URL // s.URL is made by Start, or checked by its ping
	}
	u.Path = "/" + name
	return u.String()
}

// Close stops the server (fast shutdown) and removes its directory.
func (s *Server) Close() error {
	s.adminMu.Lock()
	s.dropAdmin()
	s.adminMu.Unlock()
	if s.cmd != nil && s.cmd.Process != nil && s.done != nil {
		s.cmd.Process.Signal(os.Interrupt)
		select {
		case <-s.done:
		case <-time.After(20 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
		}
	}
	if s.dir != "" {
		return os.RemoveAll(s.dir)
	}
	return nil
}

// InCI reports whether the tests run in CI (CI set to anything but
// "false" or "0"), where a test must not skip for want of PostgreSQL.
func InCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v != "" && v != "false" && v != "0"
}

// Skip skips the test because the server could not start (err), or fails
// it under CI.
func Skip(t testing.TB, err error) {
	t.Helper()
	if InCI() {
		t.Fatalf("PostgreSQL is required in CI: %v", err)
		return
	}
	t.Skipf("no PostgreSQL: %v", err)
}

// Shared is a test package's one throwaway server: started by the first
// Get (with the default Options), stopped by Close, which the package's
// TestMain calls after m.Run. The tests share the server, each in
// databases of its own. The zero Shared is ready to use.
type Shared struct {
	once sync.Once
	srv  *Server
	err  error
}

// Get returns the shared server, starting it on first use; it skips the
// test when the server cannot start (fails it in CI, as Skip does).
func (s *Shared) Get(t testing.TB) *Server {
	t.Helper()
	s.once.Do(func() { s.srv, s.err = Start(context.Background(), Options{}) })
	if s.err != nil {
		Skip(t, s.err)
	}
	return s.srv
}

// Close stops the server if one started.
func (s *Shared) Close() {
	if s.srv != nil {
		s.srv.Close()
	}
}

// findBin returns the directory that holds initdb and postgres.
func findBin(dir string) (string, error) {
	has := func(d string) bool {
		for _, name := range []string{"initdb", "postgres"} {
			if fi, err := os.Stat(filepath.Join(d, name)); err != nil || fi.IsDir() {
				return false
			}
		}
		return true
	}
	if dir != "" {
		if has(dir) {
			return dir, nil
		}
		return "", fmt.Errorf("%w (no initdb and postgres in %s)", ErrUnavailable, dir)
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil && has(filepath.Dir(real)) {
			return filepath.Dir(real), nil
		}
		if has(filepath.Dir(p)) {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, d := range dirs {
		if has(d) {
			return d, nil
		}
	}
	return "", ErrUnavailable
}

// version returns the major version in /usr/lib/postgresql/<v>/bin.
func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// credential is the user the server runs as; nil means the current one.
type credential struct{ uid, gid uint32 }

// serverUser returns the user to run the server as: nil unless the test
// runs as root, then "postgres" or "nobody", owner of dir.
func serverUser(dir string) (*credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	var u *user.User
	var err error
	for _, name := range []string{"postgres", "nobody"} {
		if u, err = user.Lookup(name); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, and PostgreSQL refuses root: no postgres or nobody user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	return &credential{uint32(uid), uint32(gid)}, nil
}

// redact hides the password of a URL.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
