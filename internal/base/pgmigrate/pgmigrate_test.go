package pgmigrate_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentctx/agentctx/internal/base/pgmigrate"
	"github.com/agentctx/agentctx/internal/testkit/pgtest"
)

var steps = []pgmigrate.Migration{
	{Version: 1, Name: "table", SQL: `CREATE TABLE t (x integer)`},
	{Version: 2, Name: "column", SQL: `ALTER TABLE t ADD COLUMN y text; INSERT INTO t VALUES (1, 'one')`},
}

func TestApply(t *testing.T) {
	ctx := context.Background()
	srv, err := pgtest.Start(ctx, pgtest.Options{})
	if err != nil {
		pgtest.Skip(t, err)
	}
	defer srv.Close()
	pool := func() *pgxpool.Pool {
		u, err := srv.NewDatabase(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p, err := pgxpool.New(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		return p
	}

	t.Run("concurrent", func(t *testing.T) {
		db := pool()
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Go(func() {
				v, err := pgmigrate.Apply(ctx, db, "c", steps)
				if err == nil && v != 2 {
					err = errors.New("wrong version")
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		var rows, applied int
		db.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&rows)
		db.QueryRow(ctx, `SELECT count(*) FROM agentctx_migrations WHERE component = 'c'`).Scan(&applied)
		if rows != 1 || applied != 2 {
			t.Errorf("after 8 concurrent Apply: %d rows in t (want 1), %d migrations recorded (want 2)", rows, applied)
		}
	})

	t.Run("upgrade", func(t *testing.T) {
		db := pool()
		if v, err := pgmigrate.Apply(ctx, db, "c", steps[:1]); err != nil || v != 1 {
			t.Fatalf("v1: %d %v", v, err)
		}
		if v, err := pgmigrate.Apply(ctx, db, "c", steps); err != nil || v != 2 {
			t.Fatalf("v2: %d %v", v, err)
		}
		// Components are independent.
		if v, err := pgmigrate.Apply(ctx, db, "other", []pgmigrate.Migration{{Version: 1, Name: "o", SQL: `CREATE TABLE o (x integer)`}}); err != nil || v != 1 {
			t.Fatalf("other: %d %v", v, err)
		}
		// An older program refuses a newer schema.
		if _, err := pgmigrate.Apply(ctx, db, "c", steps[:1]); !errors.Is(err, pgmigrate.ErrTooNew) {
			t.Errorf("older program: %v", err)
		}
	})

	t.Run("failure rolls back", func(t *testing.T) {
		db := pool()
		bad := append(steps[:1:1], pgmigrate.Migration{Version: 2, Name: "bad", SQL: `ALTER TABLE nope ADD COLUMN z text`})
		if _, err := pgmigrate.Apply(ctx, db, "c", bad); err == nil {
			t.Fatal("a failing migration succeeded")
		}
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE tablename IN ('t', 'agentctx_migrations')`).Scan(&n); err != nil || n != 0 {
			t.Errorf("after a failed migration, %d tables remain (%v)", n, err)
		}
	})

	t.Run("bad versions", func(t *testing.T) {
		if _, err := pgmigrate.Apply(ctx, pool(), "c", steps[1:]); err == nil {
			t.Error("migrations not numbered from 1 were applied")
		}
	})
}
