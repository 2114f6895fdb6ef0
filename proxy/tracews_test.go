package proxy_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/memsession"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/dirstore"
	"github.com/agentctx/agentctx/workspace/memstore"
)

// The workspace store's calls are spans of the request that made them,
// under its prepare span, and a traced store keeps its abilities.
func TestTraceWorkspace(t *testing.T) {
	mem := memstore.New()
	if proxy.TraceWorkspace(mem, nil) != mem {
		t.Error("without a tracer provider the store is not the one given")
	}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })

	traced := proxy.TraceWorkspace(mem, tp)
	for name, ok := range map[string]bool{
		"LineReader": is[workspace.LineReader](traced), "Searcher": is[workspace.Searcher](traced),
		"Locator": is[workspace.Locator](traced), "Keeper": is[session.Keeper](traced),
	} {
		if !ok {
			t.Errorf("the traced memory store is no %s", name)
		}
	}
	if is[workspace.Pather](traced) {
		t.Error("the traced memory store is a Pather; the store is not")
	}
	dir, err := dirstore.Open(t.TempDir(), dirstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	tdir := proxy.TraceWorkspace(dir, tp)
	if !is[workspace.Pather](tdir) {
		t.Error("the traced directory store is no Pather")
	}
	p1, _ := dir.(workspace.Pather).Path("ns", "a")
	if p2, _ := tdir.(workspace.Pather).Path("ns", "a"); p1 != p2 {
		t.Errorf("path %q, want %q", p2, p1)
	}

	spans, byID := tracedRequest(t, tp, exp, pipeline.Options{Store: traced, Sessions: memsession.New()})
	writes := 0
	for _, sp := range spans {
		if !strings.HasPrefix(sp.Name, proxy.SpanArtifacts+".") {
			continue
		}
		if p := byID[sp.Parent.SpanID()]; p.Name != proxy.SpanPrepare {
			t.Errorf("%s under %q, want %s", sp.Name, p.Name, proxy.SpanPrepare)
		}
		if sp.Status.Code == codes.Error {
			t.Errorf("%s: error %q", sp.Name, sp.Status.Description)
		}
		if sp.Name == proxy.SpanArtifacts+".create" || sp.Name == proxy.SpanArtifacts+".put" {
			writes++
		}
	}
	if writes == 0 {
		t.Errorf("no artifact write traced among %d spans", len(spans))
	}
	// A missing artifact is an outcome, not an error.
	exp.Reset()
	if _, err := traced.Get(context.Background(), "ns", "missing"); err == nil {
		t.Fatal("a missing artifact was found")
	}
	if sp := exp.GetSpans(); len(sp) != 1 || sp[0].Status.Code == codes.Error {
		t.Errorf("missing artifact: spans %v", sp)
	}
	// A stream (a compaction's archive) is written through the traced
	// store as through the store itself, under a span of its own.
	exp.Reset()
	if !is[workspace.StreamWriter](tdir) {
		t.Fatal("the traced directory store writes no streams")
	}
	write := func(w io.Writer) error { _, err := io.WriteString(w, "[\n  {}\n]\n"); return err }
	info, err := workspace.MeasureStream(workspace.Info{ID: "compact_1"}, write)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := workspace.PutStream(context.Background(), tdir, "ns", workspace.Stream{Info: info, Write: write}); err != nil {
		t.Fatal(err)
	}
	if a, err := dir.Get(context.Background(), "ns", "compact_1"); err != nil || a.Content != "[\n  {}\n]\n" {
		t.Errorf("the stream stored %v, %v", a, err)
	}
	if sp := exp.GetSpans(); len(sp) != 1 || sp[0].Name != proxy.SpanArtifacts+".put" {
		t.Errorf("a stream's spans: %v", sp)
	}
}

func is[T any](v any) bool { _, ok := v.(T); return ok }
