package proxy

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/workspace"
)

// SpanArtifacts is the name prefix of the spans around the workspace
// store's calls (SpanArtifacts + "." + put, create, get, stat, query,
// delete, namespaces, lines or grep).
const SpanArtifacts = "agentctx.artifacts"

// tracedAbilities is what a store needs to be traced by TraceWorkspace
// without losing an ability a caller finds by type assertion: every
// store a backend's Open returns (workspace.NewStore) has them all.
type tracedAbilities interface {
	workspace.LineReader
	workspace.Searcher
	workspace.Locator
	session.Keeper
}

// TraceWorkspace returns store with a span around each of its calls
// (SpanArtifacts + "." + the call), a child of the span in the call's
// context: in the proxy, the tool results and archives a request stores
// show inside its step spans, and a read-back's reads inside the request
// that made them. A missing artifact (ErrNotFound) and a taken id
// (ErrExists, which a writer answers by taking the next id) are outcomes,
// not errors. The store's abilities stay what they were: its line reader,
// search, location, path (a workspace.Pather only when store is one) and
// the session state it keeps. A store that lacks one of the first four (a
// Store of the caller's own, not made by workspace.NewStore), tp nil or
// store nil is returned as is, untraced.
func TraceWorkspace(store workspace.Store, tp trace.TracerProvider) workspace.Store {
	inner, ok := store.(tracedAbilities)
	if tp == nil || store == nil || !ok {
		return store
	}
	t := &tracedWorkspace{s: inner, t: tp.Tracer(TracerName)}
	if p, ok := store.(workspace.Pather); ok {
		return &tracedPather{tracedWorkspace: t, p: p}
	}
	return t
}

var (
	_ tracedAbilities        = (*tracedWorkspace)(nil)
	_ workspace.Pather       = (*tracedPather)(nil)
	_ workspace.StreamWriter = (*tracedWorkspace)(nil)
)

type tracedWorkspace struct {
	s tracedAbilities
	t trace.Tracer
}

type tracedPather struct {
	*tracedWorkspace
	p workspace.Pather
}

func (p *tracedPather) Path(ns, id string) (string, error) { return p.p.Path(ns, id) }

func (w *tracedWorkspace) start(ctx context.Context, op, ns, id string) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{attribute.String("agentctx.namespace", ns)}
	if id != "" {
		attrs = append(attrs, attribute.String("agentctx.artifact", id))
	}
	return w.t.Start(ctx, SpanArtifacts+"."+op, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

func endArtifactSpan(sp trace.Span, err error) {
	if errors.Is(err, workspace.ErrNotFound) || errors.Is(err, workspace.ErrExists) {
		sp.SetAttributes(attribute.String("agentctx.outcome", outcomeOf(err)))
		err = nil
	}
	endSpan(sp, err)
}

func outcomeOf(err error) string {
	if errors.Is(err, workspace.ErrNotFound) {
		return "not_found"
	}
	return "exists"
}

func (w *tracedWorkspace) Put(ctx context.Context, ns string, a workspace.Artifact) (workspace.Info, error) {
	ctx, sp := w.start(ctx, "put", ns, a.ID)
	sp.SetAttributes(attribute.Int("agentctx.bytes", len(a.Content)))
	in, err := w.s.Put(ctx, ns, a)
	endArtifactSpan(sp, err)
	return in, err
}

// PutStream implements workspace.StreamWriter: the traced store writes
// the stream as it would untraced (workspace.PutStream).
func (w *tracedWorkspace) PutStream(ctx context.Context, ns string, s workspace.Stream) (workspace.Info, error) {
	ctx, sp := w.start(ctx, "put", ns, s.ID)
	sp.SetAttributes(attribute.Int("agentctx.bytes", s.Bytes))
	in, err := workspace.PutStream(ctx, w.s, ns, s)
	endArtifactSpan(sp, err)
	return in, err
}

func (w *tracedWorkspace) Create(ctx context.Context, ns string, a workspace.Artifact) (workspace.Info, error) {
	ctx, sp := w.start(ctx, "create", ns, a.ID)
	sp.SetAttributes(attribute.Int("agentctx.bytes", len(a.Content)))
	in, err := w.s.Create(ctx, ns, a)
	endArtifactSpan(sp, err)
	return in, err
}

func (w *tracedWorkspace) Get(ctx context.Context, ns, id string) (*workspace.Artifact, error) {
	ctx, sp := w.start(ctx, "get", ns, id)
	a, err := w.s.Get(ctx, ns, id)
	if a != nil {
		sp.SetAttributes(attribute.Int("agentctx.bytes", len(a.Content)))
	}
	endArtifactSpan(sp, err)
	return a, err
}

func (w *tracedWorkspace) Stat(ctx context.Context, ns, id string) (workspace.Info, error) {
	ctx, sp := w.start(ctx, "stat", ns, id)
	in, err := w.s.Stat(ctx, ns, id)
	endArtifactSpan(sp, err)
	return in, err
}

func (w *tracedWorkspace) Query(ctx context.Context, ns string, f workspace.Filter) ([]workspace.Info, error) {
	ctx, sp := w.start(ctx, "query", ns, "")
	list, err := w.s.Query(ctx, ns, f)
	sp.SetAttributes(attribute.Int("agentctx.artifacts", len(list)))
	endArtifactSpan(sp, err)
	return list, err
}

func (w *tracedWorkspace) Delete(ctx context.Context, ns, id string) error {
	ctx, sp := w.start(ctx, "delete", ns, id)
	err := w.s.Delete(ctx, ns, id)
	endArtifactSpan(sp, err)
	return err
}

func (w *tracedWorkspace) Namespaces(ctx context.Context) ([]string, error) {
	ctx, sp := w.start(ctx, "namespaces", "", "")
	list, err := w.s.Namespaces(ctx)
	endArtifactSpan(sp, err)
	return list, err
}

func (w *tracedWorkspace) Lines(ctx context.Context, ns, id string, start, end int) (*workspace.LineRange, error) {
	ctx, sp := w.start(ctx, "lines", ns, id)
	lr, err := w.s.Lines(ctx, ns, id, start, end)
	endArtifactSpan(sp, err)
	return lr, err
}

func (w *tracedWorkspace) Grep(ctx context.Context, ns string, q workspace.GrepQuery) (*workspace.GrepResult, error) {
	ctx, sp := w.start(ctx, "grep", ns, "")
	res, err := w.s.Grep(ctx, ns, q)
	endArtifactSpan(sp, err)
	return res, err
}

// Close closes the store; it makes no span.
func (w *tracedWorkspace) Close() error { return w.s.Close() }

// Location is the store's.
func (w *tracedWorkspace) Location() string { return w.s.Location() }

// OpenSessions opens the session store the store keeps (untraced: the
// proxy traces the session store it is given with TraceSessions).
func (w *tracedWorkspace) OpenSessions(ctx context.Context) (session.Store, error) {
	return w.s.OpenSessions(ctx)
}
