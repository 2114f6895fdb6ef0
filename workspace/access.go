package workspace

import (
	"context"
	"errors"

	"github.com/agentctx/agentctx/workspace/driver"
)

// Lines returns lines start..end (1-based, inclusive) of an artifact of s;
// see driver.LinesOf for the rules. It uses s's own Lines when s is a
// LineReader, and otherwise reads the artifact with Get. Errors are
// *Error values for the operation "lines".
func Lines(ctx context.Context, s Store, namespace, id string, start, end int) (*LineRange, error) {
	if lr, ok := s.(LineReader); ok {
		return lr.Lines(ctx, namespace, id, start, end)
	}
	return genericLines(ctx, s, namespace, id, start, end)
}

// genericLines is Lines over Get.
func genericLines(ctx context.Context, s Store, namespace, id string, start, end int) (*LineRange, error) {
	if err := driver.Check(ctx, "lines", namespace, id, true); err != nil {
		return nil, err
	}
	a, err := s.Get(ctx, namespace, id)
	if err != nil {
		return nil, relabel(err, "lines")
	}
	r, err := driver.LinesOf(id, a.Content, start, end)
	if err != nil {
		return nil, &Error{Op: "lines", Namespace: namespace, ID: id, Err: err}
	}
	return r, nil
}

// Grep searches the lines of one artifact of s (q.ID) or of every artifact
// that matches q.Filter, in Query order; see GrepQuery. It uses s's own
// Grep when s is a Searcher, and otherwise reads the candidates with Query
// and Get. Errors are *Error values for the operation "grep".
func Grep(ctx context.Context, s Store, namespace string, q GrepQuery) (*GrepResult, error) {
	if sr, ok := s.(Searcher); ok {
		return sr.Grep(ctx, namespace, q)
	}
	return genericGrep(ctx, s, namespace, q)
}

// genericGrep is Grep over Query and Get.
func genericGrep(ctx context.Context, s Store, namespace string, q GrepQuery) (*GrepResult, error) {
	if err := driver.Check(ctx, "grep", namespace, q.ID, q.ID != ""); err != nil {
		return nil, err
	}
	g, err := driver.NewGrepper(q)
	if err != nil {
		return nil, &Error{Op: "grep", Namespace: namespace, ID: q.ID, Err: err}
	}
	if q.ID != "" {
		a, err := s.Get(ctx, namespace, q.ID)
		if err != nil {
			return nil, relabel(err, "grep")
		}
		g.Add(a.ID, a.Content)
		return g.Result(), nil
	}
	list, err := s.Query(ctx, namespace, Filter{Metadata: q.Filter.Metadata})
	if err != nil {
		return nil, relabel(err, "grep")
	}
	return driver.GrepInfos(ctx, namespace, q, list, func(info Info) (string, error) {
		a, err := s.Get(ctx, namespace, info.ID)
		if err != nil {
			return "", err
		}
		return a.Content, nil
	})
}

// relabel returns err with the operation of its *Error set to op, so that
// a failed Get inside Lines reads as a failed "lines".
func relabel(err error, op string) error {
	var e *Error
	if errors.As(err, &e) && e.Op != op {
		c := *e
		c.Op = op
		return &c
	}
	return err
}
