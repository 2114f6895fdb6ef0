package sqlitestore

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentctx/agentctx/workspace"
)

// TestTrigramIndex checks that the FTS5 index follows puts, overwrites and
// deletes, so that the grep prefilter sees exactly the current content.
func TestTrigramIndex(t *testing.T) {
	ctx := context.Background()
	s, err := open(ctx, filepath.Join(t.TempDir(), "w.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put := func(id, content string) {
		t.Helper()
		if _, err := s.Put(ctx, "ns", workspace.Artifact{Info: workspace.Info{ID: id}, Content: content}); err != nil {
			t.Fatal(err)
		}
	}
	match := func(q string) []string {
		t.Helper()
		rows, err := s.db.QueryContext(ctx, `SELECT a.id FROM artifacts a WHERE a.rid IN
			(SELECT rowid FROM artifacts_fts WHERE artifacts_fts MATCH ?) ORDER BY a.id`, q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var ids []string
		for rows.Next() {
			var id string
			rows.Scan(&id)
			ids = append(ids, id)
		}
		return ids
	}
	put("a", "the NEEDLE is here")
	put("b", "no such thing")
	put("c", "needle again")
	put("bad", "\xffneedle in bytes that are not UTF-8")
	if got := match(`"needle"`); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("needle: %v (not UTF-8 content is not indexed)", got)
	}
	put("c", "replaced")
	if got := match(`"needle"`); !slices.Equal(got, []string{"a"}) {
		t.Errorf("after overwrite: %v", got)
	}
	if err := s.Delete(ctx, "ns", "a"); err != nil {
		t.Fatal(err)
	}
	if got := match(`"needle"`); len(got) != 0 {
		t.Errorf("after delete: %v", got)
	}
	if got := match(`"eplac"`); !slices.Equal(got, []string{"c"}) {
		t.Errorf("substring: %v", got)
	}
	res, err := workspace.Grep(ctx, s, "ns", workspace.GrepQuery{Pattern: "needle"})
	if err != nil || res.Total != 1 || res.Searched != 3 || res.Hits[0].ID != "bad" {
		t.Errorf("grep: %+v %v", res, err)
	}
}
