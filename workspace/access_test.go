package workspace_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/memstore"
)

// native is a store with its own Lines and Grep, which answer with a
// marker so that the test sees which path ran.
type native struct {
	workspace.Store
	lines, greps int
}

func (n *native) Lines(ctx context.Context, ns, id string, start, end int) (*workspace.LineRange, error) {
	n.lines++
	return &workspace.LineRange{ID: "native"}, nil
}

func (n *native) Grep(ctx context.Context, ns string, q workspace.GrepQuery) (*workspace.GrepResult, error) {
	n.greps++
	return &workspace.GrepResult{Searched: 42}, nil
}

var (
	_ workspace.LineReader = (*native)(nil)
	_ workspace.Searcher   = (*native)(nil)
)

func TestLinesGrepDispatch(t *testing.T) {
	ctx := context.Background()
	base := memstore.New()
	if _, err := base.Put(ctx, "ns", workspace.Artifact{Info: workspace.Info{ID: "a"}, Content: "one\ntwo\n"}); err != nil {
		t.Fatal(err)
	}
	// The generic path: Get and LinesOf / Grepper.
	lr, err := workspace.Lines(ctx, base, "ns", "a", 2, 9)
	if err != nil || lr.ID != "a" || len(lr.Lines) != 1 || lr.Lines[0] != "two" {
		t.Errorf("generic Lines = %+v, %v", lr, err)
	}
	res, err := workspace.Grep(ctx, base, "ns", workspace.GrepQuery{Pattern: "o"})
	if err != nil || res.Total != 2 || res.Searched != 1 {
		t.Errorf("generic Grep = %+v, %v", res, err)
	}
	_, err = workspace.Lines(ctx, base, "ns", "missing", 1, 1)
	var we *workspace.Error
	if !errors.As(err, &we) || we.Op != "lines" || !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("generic Lines of a missing id: %v", err)
	}
	// The native path.
	n := &native{Store: base}
	if lr, err := workspace.Lines(ctx, n, "ns", "a", 1, 1); err != nil || lr.ID != "native" || n.lines != 1 {
		t.Errorf("Lines did not use the LineReader: %+v %v", lr, err)
	}
	if res, err := workspace.Grep(ctx, n, "ns", workspace.GrepQuery{Pattern: "x"}); err != nil || res.Searched != 42 || n.greps != 1 {
		t.Errorf("Grep did not use the Searcher: %+v %v", res, err)
	}
}
