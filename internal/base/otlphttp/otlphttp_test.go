package otlphttp_test

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/agentctx/agentctx/internal/base/otlphttp"
	"github.com/agentctx/agentctx/internal/testkit/otlptest"
)

// exportRequest is opentelemetry.proto.collector.trace.v1's
// ExportTraceServiceRequest: resource_spans, field 1, repeated. (Its
// generated package imports grpc, kept out of the module's tests too.)
type exportRequest struct{ ResourceSpans []*tracepb.ResourceSpans }

// decode reads an ExportTraceServiceRequest as a collector does.
func decode(b []byte) (*exportRequest, error) {
	rs, err := otlptest.DecodeExport(b)
	if err != nil {
		return nil, err
	}
	return &exportRequest{ResourceSpans: rs}, nil
}

// collector is an OTLP/HTTP collector that decodes what it receives.
type collector struct {
	mu       sync.Mutex
	requests []*exportRequest
	headers  []http.Header
	status   int
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		body = zr
	}
	data, _ := io.ReadAll(body)
	req, err := decode(data)
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || err != nil || len(req.ResourceSpans) == 0 {
		http.Error(w, "bad request", 400)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests = append(c.requests, req)
	c.headers = append(c.headers, r.Header.Clone())
	if c.status != 0 {
		http.Error(w, "overloaded", c.status)
	}
}

func (c *collector) spans() []*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*tracepb.Span
	for _, r := range c.requests {
		for _, rs := range r.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				out = append(out, ss.Spans...)
			}
		}
	}
	return out
}

// The spans a tracer provider ends reach the collector whole: names,
// parent, attributes, status, the resource, with the headers and the
// compression the variables ask for.
func TestExportToACollector(t *testing.T) {
	for _, compression := range []string{"none", "gzip"} {
		t.Run(compression, func(t *testing.T) {
			col := &collector{}
			srv := httptest.NewServer(col)
			defer srv.Close()
			env := map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT":    srv.URL + "/",
				"OTEL_EXPORTER_OTLP_HEADERS":     "x-team=ctx,authorization=Bearer%20abc",
				"OTEL_EXPORTER_OTLP_COMPRESSION": compression,
			}
			cfg, err := otlphttp.ConfigFromEnv(func(k string) string { return env[k] })
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			exp, err := otlptrace.New(ctx, otlphttp.New(cfg))
			if err != nil {
				t.Fatal(err)
			}
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
				sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "agentctx"))))
			tr := tp.Tracer("test")
			ctx, parent := tr.Start(ctx, "agentctx.request")
			_, child := tr.Start(ctx, "agentctx.prepare")
			child.SetAttributes(attribute.Int("tokens", 42), attribute.StringSlice("steps", []string{"prune", "offload"}))
			child.End()
			parent.SetStatus(codes.Error, "upstream 500")
			parent.End()
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := tp.Shutdown(sctx); err != nil {
				t.Fatal(err)
			}
			spans := col.spans()
			if len(spans) != 2 {
				t.Fatalf("%d spans received, want 2", len(spans))
			}
			byName := map[string]*tracepb.Span{}
			for _, s := range spans {
				byName[s.Name] = s
			}
			req, prep := byName["agentctx.request"], byName["agentctx.prepare"]
			if req == nil || prep == nil || string(prep.ParentSpanId) != string(req.SpanId) || string(prep.TraceId) != string(req.TraceId) {
				t.Fatalf("spans %v", spans)
			}
			if req.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || req.Status.GetMessage() != "upstream 500" {
				t.Errorf("status %v", req.Status)
			}
			attrs := map[string]string{}
			for _, kv := range prep.Attributes {
				attrs[kv.Key] = kv.Value.String()
			}
			if !strings.Contains(attrs["tokens"], "42") || !strings.Contains(attrs["steps"], "offload") {
				t.Errorf("attributes %v", attrs)
			}
			res := col.requests[0].ResourceSpans[0].Resource
			if len(res.Attributes) != 1 || res.Attributes[0].Value.GetStringValue() != "agentctx" {
				t.Errorf("resource %v", res)
			}
			h := col.headers[0]
			if h.Get("x-team") != "ctx" || h.Get("Authorization") != "Bearer abc" {
				t.Errorf("headers %v", h)
			}
			if (h.Get("Content-Encoding") == "gzip") != (compression == "gzip") {
				t.Errorf("Content-Encoding %q with compression %s", h.Get("Content-Encoding"), compression)
			}
		})
	}
}

// A collector's refusal is an export error that says what it answered.
func TestCollectorRefusal(t *testing.T) {
	col := &collector{status: http.StatusServiceUnavailable}
	srv := httptest.NewServer(col)
	defer srv.Close()
	c := otlphttp.New(otlphttp.Config{Endpoint: srv.URL + "/v1/traces", Timeout: 5 * time.Second})
	err := c.UploadTraces(context.Background(), []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "x"}}}}}})
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "overloaded") {
		t.Fatalf("err %v", err)
	}
	if err := c.UploadTraces(context.Background(), nil); err != nil {
		t.Errorf("no spans: %v", err)
	}
}

func TestConfigFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want otlphttp.Config
		err  string
	}{
		{"defaults", nil, otlphttp.Config{Endpoint: otlphttp.DefaultEndpoint, Timeout: otlphttp.DefaultTimeout}, ""},
		{"base endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://col:4318"},
			otlphttp.Config{Endpoint: "https://col:4318/v1/traces", Timeout: otlphttp.DefaultTimeout}, ""},
		{"traces endpoint as is", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://a", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://b/custom"},
			otlphttp.Config{Endpoint: "https://b/custom", Timeout: otlphttp.DefaultTimeout}, ""},
		{"traces timeout first", map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "100", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "2500"},
			otlphttp.Config{Endpoint: otlphttp.DefaultEndpoint, Timeout: 2500 * time.Millisecond}, ""},
		{"bad timeout", map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "5s"}, otlphttp.Config{}, `OTEL_EXPORTER_OTLP_TIMEOUT="5s"`},
		{"bad compression", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "zstd"}, otlphttp.Config{}, "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION"},
		{"bad header", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "novalue"}, otlphttp.Config{}, "OTEL_EXPORTER_OTLP_HEADERS"},
		{"bad endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "col:4318"}, otlphttp.Config{}, "want an http:// or https:// URL"},
		{"missing certificate", map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent.pem"}, otlphttp.Config{}, "OTEL_EXPORTER_OTLP_CERTIFICATE"},
		{"key without certificate", map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_KEY": "/k.pem"}, otlphttp.Config{}, "go together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := otlphttp.ConfigFromEnv(func(k string) string { return tc.env[k] })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, otlphttp.ErrInvalid) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Endpoint != tc.want.Endpoint || got.Timeout != tc.want.Timeout || got.Gzip || got.TLS != nil || len(got.Headers) != 0 {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
