package stores_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctx/agentctx/internal/testkit/pgtest"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/dirsession"
	"github.com/agentctx/agentctx/session/memsession"
	"github.com/agentctx/agentctx/session/pgsession"
	"github.com/agentctx/agentctx/session/sessiontest"
	"github.com/agentctx/agentctx/session/sqlitesession"
	"github.com/agentctx/agentctx/stores"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/dirstore"
	"github.com/agentctx/agentctx/workspace/driver"
	"github.com/agentctx/agentctx/workspace/memstore"
	"github.com/agentctx/agentctx/workspace/pgstore"
	"github.com/agentctx/agentctx/workspace/sqlitestore"
)

var (
	server   *pgtest.Server
	startErr error
)

func TestMain(m *testing.M) {
	server, startErr = pgtest.Start(context.Background(), pgtest.Options{})
	code := m.Run()
	if server != nil {
		server.Close()
	}
	os.Exit(code)
}

var ctx = context.Background()

// backend opens workspace stores at one location (a new handle each call,
// as a new process would) and the session store of that location opened
// directly, to check where the followed state was kept.
type backend struct {
	name   string
	open   func(t *testing.T, loc string) workspace.Store
	direct func(t *testing.T, loc string) session.Store
	loc    func(t *testing.T) string
}

func closing[S interface{ Close() error }](t *testing.T, s S, err error) S {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var backends = []backend{
	{"directory",
		func(t *testing.T, loc string) workspace.Store {
			s, err := dirstore.Open(loc, dirstore.Options{})
			return closing(t, s, err)
		},
		func(t *testing.T, loc string) session.Store {
			s, err := dirsession.Open(filepath.Join(loc, stores.SessionsDir))
			return closing(t, s, err)
		},
		func(t *testing.T) string { return t.TempDir() }},
	{"sqlite",
		func(t *testing.T, loc string) workspace.Store {
			s, err := sqlitestore.Open(ctx, loc, sqlitestore.Options{})
			return closing(t, s, err)
		},
		func(t *testing.T, loc string) session.Store {
			s, err := sqlitesession.Open(ctx, loc)
			return closing(t, s, err)
		},
		func(t *testing.T) string { return filepath.Join(t.TempDir(), "ws.db") }},
	{"postgres",
		func(t *testing.T, loc string) workspace.Store {
			s, err := pgstore.Open(ctx, loc, pgstore.Options{})
			return closing(t, s, err)
		},
		func(t *testing.T, loc string) session.Store {
			s, err := pgsession.Open(ctx, loc, pgsession.Options{})
			return closing(t, s, err)
		},
		func(t *testing.T) string {
			if startErr != nil {
				pgtest.Skip(t, startErr)
			}
			u, err := server.NewDatabase(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return u
		}},
}

// The session store follows the workspace store: a state saved through
// one handle is loaded through another handle on the same location (a
// second process), and it is where that location's own session backend
// keeps it (the same SQLite file, the same database, <dir>/.sessions).
func TestSessionsFollowTheWorkspace(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			loc := b.loc(t)
			first, err := stores.Open(ctx, stores.Spec{Workspace: b.open(t, loc)})
			if err != nil {
				t.Fatal(err)
			}
			defer first.Close()
			if _, err := first.Sessions.Save(ctx, "ns", "s1", []byte("state"), 0); err != nil {
				t.Fatal(err)
			}
			second, err := stores.Open(ctx, stores.Spec{Workspace: b.open(t, loc)})
			if err != nil {
				t.Fatal(err)
			}
			defer second.Close()
			for name, ss := range map[string]session.Store{"second process": second.Sessions, "backend itself": b.direct(t, loc)} {
				data, v, err := ss.Load(ctx, "ns", "s1")
				if err != nil || string(data) != "state" || v != 1 {
					t.Errorf("%s: load %q v%d, %v: want the state the first saved", name, data, v, err)
				}
			}
			// Closing the session store leaves the workspace store usable.
			if err := second.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := second.Workspace.Namespaces(ctx); err != nil {
				t.Errorf("workspace after the Stores closed: %v", err)
			}
		})
	}
}

// The session stores a workspace store opens pass the session conformance
// suite (over the workspace store's own connections for SQLite and
// PostgreSQL).
func TestFollowedSessionsConformance(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			sessiontest.Run(t, func(t *testing.T) session.Store {
				st, err := stores.Open(ctx, stores.Spec{Workspace: b.open(t, b.loc(t))})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				return st.Sessions
			})
		})
	}
	t.Run("memory", func(t *testing.T) {
		sessiontest.Run(t, func(t *testing.T) session.Store {
			st, err := stores.Open(ctx, stores.Spec{Workspace: memstore.New()})
			if err != nil {
				t.Fatal(err)
			}
			return st.Sessions
		})
	})
}

type wrapped struct{ workspace.Store }

func TestOpen(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "ws")
		st, err := stores.Open(ctx, stores.Spec{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if l, ok := st.Workspace.(workspace.Locator); !ok || l.Location() != dir {
			t.Errorf("workspace %T, want a directory store at %s", st.Workspace, dir)
		}
		if _, err := st.Sessions.Save(ctx, "ns", "s", []byte("x"), 0); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, stores.SessionsDir)); err != nil {
			t.Errorf("the session state is not in <dir>/.sessions: %v", err)
		}
		if _, err := st.Workspace.Namespaces(ctx); !errors.Is(err, workspace.ErrClosed) {
			t.Errorf("Close left the store it opened open: %v", err)
		}
	})
	t.Run("a store that keeps no sessions is refused", func(t *testing.T) {
		_, err := stores.Open(ctx, stores.Spec{Workspace: wrapped{memstore.New()}})
		if !errors.Is(err, stores.ErrNoSessions) {
			t.Fatalf("got %v, want ErrNoSessions", err)
		}
		// A portable store over a driver that keeps none.
		_, err = stores.Open(ctx, stores.Spec{Workspace: workspace.NewStore(struct{ driver.Store }{memstore.NewDriver()}, workspace.StoreOptions{})})
		if !errors.Is(err, stores.ErrNoSessions) {
			t.Fatalf("a driver without sessions: %v, want ErrNoSessions", err)
		}
		// Given a session store, or none wanted, it is fine.
		for _, spec := range []stores.Spec{
			{Workspace: wrapped{memstore.New()}, Sessions: memsession.New()},
			{Workspace: wrapped{memstore.New()}, NoSessions: true},
		} {
			if _, err := stores.Open(ctx, spec); err != nil {
				t.Errorf("%+v: %v", spec, err)
			}
		}
	})
	t.Run("given stores are left open", func(t *testing.T) {
		ws, ss := memstore.New(), memsession.New()
		st, err := stores.Open(ctx, stores.Spec{Workspace: ws, Sessions: ss})
		if err != nil || st.Workspace != ws || st.Sessions != ss {
			t.Fatalf("%+v, %v", st, err)
		}
		st.Close()
		if _, err := ws.Namespaces(ctx); err != nil {
			t.Error(err)
		}
		if _, err := ss.List(ctx, ""); err != nil {
			t.Error(err)
		}
	})
	t.Run("no workspace: memory", func(t *testing.T) {
		st, err := stores.Open(ctx, stores.Spec{NoWorkspace: true, Dir: filepath.Join(t.TempDir(), "never")})
		if err != nil || st.Workspace != nil || st.Sessions == nil {
			t.Fatalf("%+v, %v", st, err)
		}
		if _, err := os.Stat(filepath.Join(t.TempDir(), "never")); err == nil {
			t.Error("a directory was created")
		}
	})
	t.Run("stateless", func(t *testing.T) {
		st, err := stores.Open(ctx, stores.Spec{NoSessions: true, Dir: t.TempDir()})
		if err != nil || st.Sessions != nil || st.Workspace == nil {
			t.Fatalf("%+v, %v", st, err)
		}
		st.Close()
	})
}
