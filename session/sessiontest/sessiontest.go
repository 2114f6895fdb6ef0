// Package sessiontest is the conformance suite every session.Store backend
// passes: Run(t, newStore) checks the rules of the session.Store contract,
// each as a named subtest. A backend is a session.Driver under the portable
// store session.New makes of it: RunDriver checks it that way.
package sessiontest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/session"
)

// Run checks the contract of session.Store. newStore returns a new, empty
// store for each rule; Run closes it.
func Run(t *testing.T, newStore func(t *testing.T) session.Store) {
	t.Helper()
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			s := newStore(t)
			defer s.Close()
			r.run(t, s)
		})
	}
}

// RunDriver checks a backend's driver through the portable store
// session.New makes of it, as programs use it. newDriver returns a new,
// empty driver for each rule.
func RunDriver(t *testing.T, newDriver func(t *testing.T) session.Driver) {
	t.Helper()
	Run(t, func(t *testing.T) session.Store { return session.New(newDriver(t), session.Options{}) })
}

type rule struct {
	name string
	run  func(t *testing.T, s session.Store)
}

var ctx = context.Background()

var rules = []rule{
	{"load_missing_is_not_found", func(t *testing.T, s session.Store) {
		_, _, err := s.Load(ctx, "ns", "nobody")
		if !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("Load of a missing session: %v, want ErrNotFound", err)
		}
	}},
	{"save_then_load_byte_for_byte", func(t *testing.T, s session.Store) {
		data := []byte("{\"a\":1}\n\x00\xff binary and \"quotes\"")
		v, err := s.Save(ctx, "ns", "s1", data, 0)
		if err != nil || v != 1 {
			t.Fatalf("first Save = %d, %v; want 1, nil", v, err)
		}
		got, gv, err := s.Load(ctx, "ns", "s1")
		if err != nil || gv != 1 || !bytes.Equal(got, data) {
			t.Fatalf("Load = %q, %d, %v; want %q, 1", got, gv, err, data)
		}
		got[0] = 'X' // callers may modify what Load returns
		again, _, _ := s.Load(ctx, "ns", "s1")
		if !bytes.Equal(again, data) {
			t.Fatalf("Load after modifying the returned slice = %q", again)
		}
	}},
	{"versions_grow_by_one", func(t *testing.T, s session.Store) {
		var v int64
		for i := range 5 {
			next, err := s.Save(ctx, "ns", "s", []byte(fmt.Sprint(i)), v)
			if err != nil || next != v+1 {
				t.Fatalf("Save %d = %d, %v; want %d", i, next, err, v+1)
			}
			v = next
		}
		got, gv, err := s.Load(ctx, "ns", "s")
		if err != nil || gv != 5 || string(got) != "4" {
			t.Fatalf("Load = %q, %d, %v", got, gv, err)
		}
	}},
	{"stale_version_conflicts_and_changes_nothing", func(t *testing.T, s session.Store) {
		if _, err := s.Save(ctx, "ns", "s", []byte("one"), 0); err != nil {
			t.Fatal(err)
		}
		for _, stale := range []int64{0, 2, 7} {
			if _, err := s.Save(ctx, "ns", "s", []byte("other"), stale); !errors.Is(err, session.ErrConflict) {
				t.Fatalf("Save with version %d over version 1: %v, want ErrConflict", stale, err)
			}
		}
		got, v, _ := s.Load(ctx, "ns", "s")
		if string(got) != "one" || v != 1 {
			t.Fatalf("after conflicts: %q v%d, want \"one\" v1", got, v)
		}
	}},
	{"empty_data_is_kept", func(t *testing.T, s session.Store) {
		if _, err := s.Save(ctx, "ns", "s", nil, 0); err != nil {
			t.Fatal(err)
		}
		got, v, err := s.Load(ctx, "ns", "s")
		if err != nil || v != 1 || len(got) != 0 {
			t.Fatalf("Load = %q, %d, %v", got, v, err)
		}
	}},
	{"namespaces_and_odd_ids_are_apart", func(t *testing.T, s session.Store) {
		ids := []string{"a", "A", "a/b", "a%2Fb", "..", ".", "x\x00y", "über", strings.Repeat("long", 100), "CON", "nul"}
		for _, ns := range []string{"n1", "n2"} {
			for _, id := range ids {
				if _, err := s.Save(ctx, ns, id, []byte(ns+"|"+id), 0); err != nil {
					t.Fatalf("Save(%q, %q): %v", ns, id, err)
				}
			}
		}
		for _, ns := range []string{"n1", "n2"} {
			for _, id := range ids {
				got, v, err := s.Load(ctx, ns, id)
				if err != nil || v != 1 || string(got) != ns+"|"+id {
					t.Fatalf("Load(%q, %q) = %q, %d, %v", ns, id, got, v, err)
				}
			}
		}
	}},
	{"invalid_keys", func(t *testing.T, s session.Store) {
		for _, k := range [][2]string{{"", "s"}, {"ns", ""}, {"ns", "\xff"}, {"\xfe", "s"}} {
			if _, err := s.Save(ctx, k[0], k[1], []byte("x"), 0); !errors.Is(err, session.ErrInvalidKey) {
				t.Errorf("Save(%q, %q): %v, want ErrInvalidKey", k[0], k[1], err)
			}
			if _, _, err := s.Load(ctx, k[0], k[1]); !errors.Is(err, session.ErrInvalidKey) {
				t.Errorf("Load(%q, %q): %v, want ErrInvalidKey", k[0], k[1], err)
			}
		}
	}},
	{"delete", func(t *testing.T, s session.Store) {
		if err := s.Delete(ctx, "ns", "s"); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("Delete of a missing session: %v", err)
		}
		if _, err := s.Save(ctx, "ns", "s", []byte("x"), 0); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, "ns", "s"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Load(ctx, "ns", "s"); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("Load after Delete: %v", err)
		}
		if v, err := s.Save(ctx, "ns", "s", []byte("y"), 0); err != nil || v != 1 {
			t.Fatalf("Save after Delete = %d, %v; want 1", v, err)
		}
	}},
	{"cancelled_context_changes_nothing", func(t *testing.T, s session.Store) {
		c, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := s.Save(c, "ns", "s", []byte("x"), 0); !errors.Is(err, context.Canceled) {
			t.Fatalf("Save: %v", err)
		}
		if _, _, err := s.Load(c, "ns", "s"); !errors.Is(err, context.Canceled) {
			t.Fatalf("Load: %v", err)
		}
		if _, err := s.Stat(c, "ns", "s"); !errors.Is(err, context.Canceled) {
			t.Fatalf("Stat: %v", err)
		}
		if _, err := s.List(c, ""); !errors.Is(err, context.Canceled) {
			t.Fatalf("List: %v", err)
		}
		if _, _, err := s.Load(ctx, "ns", "s"); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("a cancelled Save stored something: %v", err)
		}
	}},
	{"concurrent_increments_lose_nothing", func(t *testing.T, s session.Store) {
		const workers, each = 8, 10
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for range workers {
			wg.Go(func() {
				for range each {
					for {
						data, v, err := s.Load(ctx, "ns", "counter")
						n := 0
						if err == nil {
							fmt.Sscan(string(data), &n)
						} else if !errors.Is(err, session.ErrNotFound) {
							errs <- err
							return
						}
						_, err = s.Save(ctx, "ns", "counter", []byte(fmt.Sprint(n+1)), v)
						if err == nil {
							break
						}
						if !errors.Is(err, session.ErrConflict) {
							errs <- err
							return
						}
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		data, v, err := s.Load(ctx, "ns", "counter")
		if err != nil || string(data) != fmt.Sprint(workers*each) || v != workers*each {
			t.Fatalf("after %d increments: %q v%d %v", workers*each, data, v, err)
		}
	}},
	{"stat_describes_without_data", func(t *testing.T, s session.Store) {
		if _, err := s.Stat(ctx, "ns", "s"); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("Stat of a missing session: %v, want ErrNotFound", err)
		}
		before := time.Now().Add(-2 * time.Second)
		v, _ := s.Save(ctx, "ns", "s", []byte("12345"), 0)
		if _, err := s.Save(ctx, "ns", "s", []byte("1234567"), v); err != nil {
			t.Fatal(err)
		}
		info, err := s.Stat(ctx, "ns", "s")
		if err != nil {
			t.Fatal(err)
		}
		if info.Namespace != "ns" || info.ID != "s" || info.Version != 2 || info.Size != 7 {
			t.Fatalf("Stat = %+v, want ns/s version 2 size 7", info)
		}
		if info.Updated.Before(before) || info.Updated.After(time.Now().Add(2*time.Second)) {
			t.Fatalf("Updated = %v, want about now", info.Updated)
		}
		if _, err := s.Stat(ctx, "", "s"); !errors.Is(err, session.ErrInvalidKey) {
			t.Fatalf("Stat with an empty namespace: %v", err)
		}
	}},
	{"list_orders_by_namespace_then_id", func(t *testing.T, s session.Store) {
		if l, err := s.List(ctx, ""); err != nil || len(l) != 0 {
			t.Fatalf("List of an empty store = %v, %v", l, err)
		}
		long := "z" + strings.Repeat("long", 100) // a file name too long: dirsession hashes it
		keys := [][2]string{{"n2", "b"}, {"n1", "z"}, {"n1", "a/b"}, {"n2", "a"}, {"n1", "x\x00y"}, {long, long}}
		for i, k := range keys {
			if _, err := s.Save(ctx, k[0], k[1], []byte(strings.Repeat("x", i)), 0); err != nil {
				t.Fatal(err)
			}
		}
		all, err := s.List(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, in := range all {
			got = append(got, in.Namespace+"|"+in.ID)
			if in.Version != 1 || in.Updated.IsZero() {
				t.Errorf("List entry %+v: want version 1 and an update time", in)
			}
		}
		want := []string{"n1|a/b", "n1|x\x00y", "n1|z", "n2|a", "n2|b", long + "|" + long}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("List(\"\") = %q, want %q", got, want)
		}
		n1, err := s.List(ctx, "n1")
		if err != nil || len(n1) != 3 || n1[0].ID != "a/b" || n1[0].Size != 2 {
			t.Fatalf("List(n1) = %+v, %v", n1, err)
		}
		if l, err := s.List(ctx, "none"); err != nil || len(l) != 0 {
			t.Fatalf("List of an unused namespace = %v, %v", l, err)
		}
		if err := s.Delete(ctx, "n1", "z"); err != nil {
			t.Fatal(err)
		}
		if n1, _ := s.List(ctx, "n1"); len(n1) != 2 {
			t.Fatalf("List after Delete = %+v", n1)
		}
	}},
	{"delete_version_only_what_was_judged", func(t *testing.T, s session.Store) {
		if err := s.DeleteVersion(ctx, "ns", "s", 1); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("DeleteVersion of a missing session: %v, want ErrNotFound", err)
		}
		v, _ := s.Save(ctx, "ns", "s", []byte("a"), 0)
		v, _ = s.Save(ctx, "ns", "s", []byte("b"), v)
		if err := s.DeleteVersion(ctx, "ns", "s", v-1); !errors.Is(err, session.ErrConflict) {
			t.Fatalf("DeleteVersion of a stale version: %v, want ErrConflict", err)
		}
		if got, _, err := s.Load(ctx, "ns", "s"); err != nil || string(got) != "b" {
			t.Fatalf("after a refused DeleteVersion: %q, %v", got, err)
		}
		if err := s.DeleteVersion(ctx, "ns", "s", v); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Stat(ctx, "ns", "s"); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("Stat after DeleteVersion: %v", err)
		}
	}},
	{"closed", func(t *testing.T, s session.Store) {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if _, err := s.Save(ctx, "ns", "s", []byte("x"), 0); !errors.Is(err, session.ErrClosed) {
			t.Fatalf("Save after Close: %v", err)
		}
		if _, _, err := s.Load(ctx, "ns", "s"); !errors.Is(err, session.ErrClosed) {
			t.Fatalf("Load after Close: %v", err)
		}
		if _, err := s.Stat(ctx, "ns", "s"); !errors.Is(err, session.ErrClosed) {
			t.Fatalf("Stat after Close: %v", err)
		}
		if _, err := s.List(ctx, ""); !errors.Is(err, session.ErrClosed) {
			t.Fatalf("List after Close: %v", err)
		}
		if err := s.DeleteVersion(ctx, "ns", "s", 1); !errors.Is(err, session.ErrClosed) {
			t.Fatalf("DeleteVersion after Close: %v", err)
		}
	}},
}
