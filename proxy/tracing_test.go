package proxy_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/internal/testkit/otlptest"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/session/memsession"
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
	// The usage of every answer is written to the session's state: a
	// store span inside the request's upstream exchange.
	stores := 0
	for _, sp := range spans {
		if sp.Name != proxy.SpanStore {
			continue
		}
		stores++
		if p := byID[sp.Parent.SpanID()]; p.Name != proxy.SpanUpstream {
			t.Errorf("store span under %q, want %s", p.Name, proxy.SpanUpstream)
		}
	}
	if stores != st.Requests {
		t.Errorf("%d store spans, %d requests", stores, st.Requests)
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

func TestTracingWanted(t *testing.T) {
	for _, tc := range []struct {
		flag bool
		env  map[string]string
		want bool
		err  bool
	}{
		{false, nil, false, false}, // off by default
		{true, nil, true, false},
		{false, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, false, false}, // an endpoint alone does not turn it on
		{false, map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, false},
		{false, map[string]string{"OTEL_TRACES_EXPORTER": " OTLP , console"}, true, false},
		{true, map[string]string{"OTEL_TRACES_EXPORTER": "none"}, false, false},
		{true, map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, false, false},
		{true, map[string]string{"OTEL_SDK_DISABLED": "false"}, true, false},
		{false, map[string]string{"OTEL_TRACES_EXPORTER": "console"}, false, false}, // another program's setting
		{true, map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, true},
	} {
		got, err := proxy.TracingWanted(tc.flag, func(k string) string { return tc.env[k] })
		if got != tc.want || (err != nil) != tc.err || err != nil && !errors.Is(err, proxy.ErrOTELExporter) {
			t.Errorf("--otel=%v %v: %v, %v; want %v, error %v", tc.flag, tc.env, got, err, tc.want, tc.err)
		}
	}
}

// NewOTLPTracerProvider exports, as the standard variables say, to an OTLP
// collector: a receiver on the loopback interface gets every span of a
// scripted session once the provider is shut down, as service "agentctx"
// (OTEL_SERVICE_NAME overrides it).
func TestOTLPExportToReceiver(t *testing.T) {
	for _, service := range []string{"", "my-proxy"} {
		rcv := otlptest.Start(t)
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
		t.Setenv("OTEL_SERVICE_NAME", service)
		tp, err := proxy.NewOTLPTracerProvider(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		s := scriptedSession(t, 3, proxy.Options{TracerProvider: tp})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = tp.Shutdown(ctx) // flushes the batch
		cancel()
		if err != nil {
			t.Fatalf("shutdown: %v", err)
		}
		want := service
		if want == "" {
			want = "agentctx"
		}
		names := map[string]int{}
		for _, sp := range rcv.Spans() {
			names[sp.Name]++
			if sp.Service != want {
				t.Errorf("span %s of service %q, want %q", sp.Name, sp.Service, want)
			}
		}
		n := s.srv.Stats()[0].Requests
		for _, name := range []string{proxy.SpanRequest, proxy.SpanDecode, proxy.SpanPrepare, proxy.SpanUpstream, proxy.SpanStep + "offload"} {
			if names[name] != n {
				t.Errorf("service %q: %d spans %s received, %d requests (%v)", want, names[name], name, n, names)
			}
		}
	}
}

// TraceSessions puts the session state's reads and writes in the request
// they serve: a load under the prepare span, a save under prepare (the
// decisions) or under the usage's store span, in the request's trace.
func TestTraceSessions(t *testing.T) {
	mem := memsession.New()
	if proxy.TraceSessions(mem, nil) != mem {
		t.Error("without a tracer provider the store is not the one given")
	}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	spans, byID := tracedRequest(t, tp, exp, pipeline.Options{Sessions: proxy.TraceSessions(mem, tp)})
	under := map[string]map[string]int{}
	for _, sp := range spans {
		if !strings.HasPrefix(sp.Name, proxy.SpanStore+".") {
			continue
		}
		p := byID[sp.Parent.SpanID()]
		if under[sp.Name] == nil {
			under[sp.Name] = map[string]int{}
		}
		under[sp.Name][p.Name]++
		if sp.Status.Code == codes.Error {
			t.Errorf("%s: error %q", sp.Name, sp.Status.Description)
		}
	}
	if under[proxy.SpanStore+".load"][proxy.SpanPrepare] == 0 {
		t.Errorf("no session state load under the prepare span: %v", under)
	}
	if under[proxy.SpanStore+".save"][proxy.SpanPrepare]+under[proxy.SpanStore+".save"][proxy.SpanStore] == 0 {
		t.Errorf("no session state save in the request: %v", under)
	}
}

// tracedRequest sends one model request through a proxy over a pipeline
// engine with po, traced by tp into exp, and returns the spans and each
// span by its id.
func tracedRequest(t *testing.T, tp trace.TracerProvider, exp *tracetest.InMemoryExporter, po pipeline.Options) ([]tracetest.SpanStub, map[trace.SpanID]tracetest.SpanStub) {
	t.Helper()
	e := pipelineEngine(t, proxy.PipelineOptions{Pipeline: po})
	srv, err := proxy.New(proxy.Options{Engine: e, AnthropicURL: newServer(t, fakeupstream.New(fakeupstream.Options{})), TracerProvider: tp, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	base := newServer(t, srv)
	resp := post(t, base+"/v1/messages", toolTurns(2, 500), map[string]string{proxy.HeaderSession: "s1"})
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	spans := exp.GetSpans()
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, sp := range spans {
		byID[sp.SpanContext.SpanID()] = sp
	}
	return spans, byID
}
