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
