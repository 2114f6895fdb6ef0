package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentctx/agentctx/internal/base/otlphttp"
	"github.com/agentctx/agentctx/session"
)

// TracerName is the instrumentation scope of the proxy's spans.
const TracerName = "github.com/agentctx/agentctx/proxy"

// Span names. A model request's span (SpanRequest) holds, in order, the
// decoding of its body (SpanDecode), the Engine (SpanPrepare, with a
// child per pipeline step the Engine reported: SpanStep + the step's
// name, laid end to end from the start of SpanPrepare with their measured
// durations; the store's reads and writes of tool results and archives,
// and the session state's, are spans of their own under SpanPrepare with
// TraceWorkspace (SpanArtifacts + the call) and TraceSessions
// (SpanStore + the call)) and the
// upstream exchange, answer relayed (SpanUpstream). Inside the upstream
// exchange, SpanStore is the write of the answer's usage (and thinking) to
// the session's state in the store, done before the answer's last bytes
// reach the client.
const (
	SpanRequest  = "agentctx.request"
	SpanDecode   = "agentctx.decode"
	SpanPrepare  = "agentctx.prepare"
	SpanStep     = "agentctx.step."
	SpanUpstream = "agentctx.upstream"
	SpanStore    = "agentctx.store"
)

// tracer returns the Server's tracer, nil when tracing is off.
func (s *Server) tracer() trace.Tracer {
	if s.opts.TracerProvider == nil {
		return nil
	}
	return s.opts.TracerProvider.Tracer(TracerName)
}

// startSpan starts a span under ctx when tracing is on; end is never nil.
func (s *Server) startSpan(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	t := s.tracer()
	if t == nil {
		return ctx, nil
	}
	return t.Start(ctx, name, opts...)
}

// endSpan ends sp (nil: tracing is off), marking err.
func endSpan(sp trace.Span, err error) {
	if sp == nil {
		return
	}
	if err != nil {
		sp.RecordError(err)
		sp.SetStatus(codes.Error, redactErr(err))
	}
	sp.End()
}

// traceSteps adds to the prepare span one child per step of the Engine's
// report, end to end from start.
func (s *Server) traceSteps(ctx context.Context, start time.Time, p *Prepared) {
	t := s.tracer()
	if t == nil || p == nil || p.Report == nil {
		return
	}
	at := start
	for _, st := range p.Report.Steps {
		_, sp := t.Start(ctx, SpanStep+string(st.Step), trace.WithTimestamp(at),
			trace.WithAttributes(attribute.Bool("agentctx.step.skipped", st.Skipped), attribute.Int("agentctx.step.changed", st.Changed),
				attribute.Int("agentctx.step.new", st.New), attribute.Int("agentctx.step.tokens_saved", st.TokensSaved),
				attribute.Int("agentctx.step.tokens", st.Tokens)))
		at = at.Add(st.Duration)
		sp.End(trace.WithTimestamp(at))
	}
}

// traceFinish sets the request span's attributes once the exchange is
// done.
func traceFinish(r *http.Request, x *exchange) {
	sp := trace.SpanFromContext(r.Context())
	if !sp.IsRecording() {
		return
	}
	sp.SetAttributes(attribute.Int("http.response.status_code", x.status))
	if x.api != "" {
		sp.SetAttributes(attribute.String("agentctx.api", string(x.api)), attribute.String("agentctx.session", x.session),
			attribute.Bool("agentctx.edited", x.edited), attribute.Int("agentctx.bytes_in", x.bytesIn), attribute.Int("agentctx.bytes_out", x.bytesOut),
			attribute.Float64("agentctx.overhead_ms", ms(x.overhead)))
		if p := x.prepared; p != nil {
			sp.SetAttributes(attribute.Int("agentctx.tokens_before", p.TokensBefore), attribute.Int("agentctx.tokens_after", p.TokensAfter),
				attribute.Bool("agentctx.compacted", p.Compacted), attribute.Bool("agentctx.prefix_changed", p.PrefixChanged))
		}
		if x.gotUsage {
			sp.SetAttributes(attribute.Int("gen_ai.usage.input_tokens", x.usage.Input()), attribute.Int("gen_ai.usage.output_tokens", x.usage.Output))
		}
	}
	if x.engineErr != nil {
		sp.RecordError(x.engineErr)
	}
	if x.status >= 500 || x.status == 0 {
		sp.SetStatus(codes.Error, http.StatusText(x.status))
	}
}

// ErrOTELExporter is matched by the error of TracingWanted for a traces
// exporter the proxy does not have (it exports over OTLP only).
var ErrOTELExporter = errors.New("unsupported OpenTelemetry traces exporter (want otlp or none)")

// TracingWanted reports whether the proxy traces its requests, from the
// proxy's own switch (agentctx proxy --otel) and the standard variables
// read by getenv (nil: os.Getenv): tracing is off by default, on with the
// switch or when OTEL_TRACES_EXPORTER names otlp; OTEL_SDK_DISABLED=true
// or OTEL_TRACES_EXPORTER=none turn it off even with the switch. Any other
// exporter alone (console, zipkin...) is an error matching ErrOTELExporter
// with the switch, and leaves tracing off without it.
func TracingWanted(on bool, getenv func(string) string) (bool, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))
	if exp == "" {
		return on, nil
	}
	otlp, other := false, false
	for _, e := range strings.Split(exp, ",") {
		switch strings.ToLower(strings.TrimSpace(e)) {
		case "otlp":
			otlp = true
		case "none":
			return false, nil
		default:
			other = true
		}
	}
	if on && !otlp && other {
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: %w", exp, ErrOTELExporter)
	}
	return on || otlp, nil
}

// ErrOTLPProtocol is matched by the error of NewOTLPTracerProvider for an
// OTLP protocol it does not speak.
var ErrOTLPProtocol = errors.New("unsupported OTLP protocol (want http/protobuf)")

// NewOTLPTracerProvider returns a tracer provider that exports spans in
// batches to an OTLP collector over HTTP, configured by the standard
// variables (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_SERVICE_NAME,
// OTEL_EXPORTER_OTLP_COMPRESSION, OTEL_EXPORTER_OTLP_CERTIFICATE, the
// TRACES_ variants; OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
// OTEL_TRACES_SAMPLER...), service name "agentctx" by default. getenv
// reads the exporter's variables (nil: os.Getenv); the resource and the
// sampler are read from the process's. Shut it down (with a deadline) to
// flush the last spans. The exporter is internal/base/otlphttp's (see there
// why not otlptracehttp).
func NewOTLPTracerProvider(ctx context.Context, getenv func(string) string) (*sdktrace.TracerProvider, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := strings.TrimSpace(getenv(k)); p != "" {
			if p != "http/protobuf" {
				return nil, fmt.Errorf("%s=%q: %w", k, p, ErrOTLPProtocol)
			}
			break
		}
	}
	cfg, err := otlphttp.ConfigFromEnv(getenv)
	if err != nil {
		return nil, fmt.Errorf("otlp exporter: %w", err)
	}
	exp, err := otlptrace.New(ctx, otlphttp.New(cfg))
	if err != nil {
		return nil, fmt.Errorf("otlp exporter: %w", err)
	}
	res, err := resource.Merge(resource.NewSchemaless(semconv.ServiceName("agentctx")), resource.Environment())
	if err != nil {
		res = resource.NewSchemaless(semconv.ServiceName("agentctx"))
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

// TraceSessions returns sessions with a span around each of its calls
// (SpanStore + "." + the call: load, save, delete...), a child of the span
// in the call's context: in the proxy, the session state's reads and
// writes show inside a request's SpanPrepare (and the usage's inside
// SpanStore). A missing session is not an error. tp nil returns sessions
// as is.
func TraceSessions(sessions session.Store, tp trace.TracerProvider) session.Store {
	if tp == nil || sessions == nil {
		return sessions
	}
	return tracedSessions{Store: sessions, t: tp.Tracer(TracerName)}
}

type tracedSessions struct {
	session.Store
	t trace.Tracer
}

func (s tracedSessions) start(ctx context.Context, op, ns, id string) (context.Context, trace.Span) {
	return s.t.Start(ctx, SpanStore+"."+op, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("agentctx.namespace", ns), attribute.String("agentctx.session_state", id)))
}

func endStoreSpan(sp trace.Span, err error) {
	if errors.Is(err, session.ErrNotFound) {
		err = nil
	}
	endSpan(sp, err)
}

func (s tracedSessions) Load(ctx context.Context, ns, id string) ([]byte, int64, error) {
	ctx, sp := s.start(ctx, "load", ns, id)
	data, v, err := s.Store.Load(ctx, ns, id)
	sp.SetAttributes(attribute.Int("agentctx.bytes", len(data)))
	endStoreSpan(sp, err)
	return data, v, err
}

func (s tracedSessions) Save(ctx context.Context, ns, id string, data []byte, version int64) (int64, error) {
	ctx, sp := s.start(ctx, "save", ns, id)
	sp.SetAttributes(attribute.Int("agentctx.bytes", len(data)))
	v, err := s.Store.Save(ctx, ns, id, data, version)
	endStoreSpan(sp, err)
	return v, err
}

func (s tracedSessions) Delete(ctx context.Context, ns, id string) error {
	ctx, sp := s.start(ctx, "delete", ns, id)
	err := s.Store.Delete(ctx, ns, id)
	endStoreSpan(sp, err)
	return err
}

func (s tracedSessions) DeleteVersion(ctx context.Context, ns, id string, version int64) error {
	ctx, sp := s.start(ctx, "delete", ns, id)
	err := s.Store.DeleteVersion(ctx, ns, id, version)
	endStoreSpan(sp, err)
	return err
}

func (s tracedSessions) Stat(ctx context.Context, ns, id string) (session.Info, error) {
	ctx, sp := s.start(ctx, "stat", ns, id)
	in, err := s.Store.Stat(ctx, ns, id)
	endStoreSpan(sp, err)
	return in, err
}

func (s tracedSessions) List(ctx context.Context, ns string) ([]session.Info, error) {
	ctx, sp := s.start(ctx, "list", ns, "")
	list, err := s.Store.List(ctx, ns)
	endStoreSpan(sp, err)
	return list, err
}
