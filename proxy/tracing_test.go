package proxy_test

import (
	"context"
	"errors"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentctx/agentctx/proxy"
)

// Each model request is one trace: the request span holds the decode, the
// Engine's prepare with a span per pipeline step, and the upstream.
func TestTracingSpansOfARequest(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	s := scriptedSession(t, 4, proxy.Options{TracerProvider: tp})
	spans := exp.GetSpans()
	requests := 0
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, sp := range spans {
		byID[sp.SpanContext.SpanID()] = sp
	}
	children := map[trace.SpanID][]string{}
	for _, sp := range spans {
		if sp.Name == proxy.SpanRequest {
			requests++
			if sp.SpanKind != trace.SpanKindServer || sp.Parent.IsValid() {
				t.Errorf("request span: kind %v, parent %v", sp.SpanKind, sp.Parent)
			}
			continue
		}
		p, ok := byID[sp.Parent.SpanID()]
		if !ok {
			t.Errorf("span %s has no parent among the spans", sp.Name)
			continue
		}
		children[p.SpanContext.SpanID()] = append(children[p.SpanContext.SpanID()], sp.Name)
	}
	st := s.srv.Stats()[0]
	if requests != st.Requests {
		t.Fatalf("%d request spans, %d requests", requests, st.Requests)
	}
	for _, sp := range spans {
		switch sp.Name {
		case proxy.SpanRequest:
			got := map[string]int{}
			for _, n := range children[sp.SpanContext.SpanID()] {
				got[n]++
			}
			if got[proxy.SpanDecode] != 1 || got[proxy.SpanPrepare] != 1 || got[proxy.SpanUpstream] != 1 {
				t.Errorf("request span's children: %v", got)
			}
			attrs := map[string]bool{}
			for _, a := range sp.Attributes {
				attrs[string(a.Key)] = true
			}
			for _, k := range []string{"agentctx.session", "agentctx.tokens_before", "gen_ai.usage.input_tokens", "http.response.status_code"} {
				if !attrs[k] {
					t.Errorf("request span lacks %s", k)
				}
			}
		case proxy.SpanPrepare:
			steps := children[sp.SpanContext.SpanID()]
			if len(steps) != 6 || steps[0] != proxy.SpanStep+"repair" || steps[5] != proxy.SpanStep+"validate" {
				t.Errorf("prepare's steps: %v", steps)
			}
			for _, c := range spans {
				if c.Parent.SpanID() == sp.SpanContext.SpanID() && (c.StartTime.Before(sp.StartTime) || c.EndTime.Before(c.StartTime)) {
					t.Errorf("step %s outside its prepare span", c.Name)
				}
			}
		}
	}
}

// Without a tracer provider nothing is traced (and nothing breaks).
func TestTracingOffByDefault(t *testing.T) {
	s := scriptedSession(t, 2, proxy.Options{})
	if n := s.srv.Stats()[0].Requests; n != 3 {
		t.Fatalf("%d requests", n)
	}
}

func TestOTLPProtocolRefused(t *testing.T) {
	_, err := proxy.NewOTLPTracerProvider(context.Background(), func(k string) string {
		if k == "OTEL_EXPORTER_OTLP_PROTOCOL" {
			return "grpc"
		}
		return ""
	})
	if !errors.Is(err, proxy.ErrOTLPProtocol) {
		t.Fatalf("err %v", err)
	}
	tp, err := proxy.NewOTLPTracerProvider(context.Background(), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	tp.Shutdown(ctx) // nothing to flush
}
