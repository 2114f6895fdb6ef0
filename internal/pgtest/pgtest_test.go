package pgtest

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestStart(t *testing.T) {
	ctx := context.Background()
	s, err := Start(ctx, nil)
	if err != nil {
		Skip(t, err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
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
	_, err := Start(context.Background(), &Options{BinDir: t.TempDir()})
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
