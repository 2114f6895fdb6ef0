// Package otlptest is an OTLP/HTTP traces receiver on the loopback
// interface for tests: what an exporter configured by the standard OTEL_*
// variables sends it, decoded.
package otlptest

import (
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Span is a span received: its name, its service and its attributes' keys.
type Span struct {
	Name    string
	Service string // the resource's service.name
	TraceID string // hex
	SpanID  string // hex
	Parent  string // hex, "" for a root
	Attrs   map[string]bool
}

// Receiver answers POST /v1/traces with an empty ExportTraceServiceResponse
// and keeps the spans of each request.
type Receiver struct {
	// URL is the receiver's base URL: OTEL_EXPORTER_OTLP_ENDPOINT.
	URL string

	mu    sync.Mutex
	spans []Span
	posts int
}

// Start starts a receiver, closed when the test ends.
func Start(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "not an OTLP/HTTP protobuf export of traces", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(req.Body)
	var in []*tracepb.ResourceSpans
	if err == nil {
		in, err = DecodeExport(body)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var got []Span
	for _, rs := range in {
		service := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				service = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				s := Span{Name: sp.GetName(), Service: service, TraceID: hex.EncodeToString(sp.GetTraceId()), SpanID: hex.EncodeToString(sp.GetSpanId()),
					Parent: hex.EncodeToString(sp.GetParentSpanId()), Attrs: map[string]bool{}}
				for _, a := range sp.GetAttributes() {
					s.Attrs[a.GetKey()] = true
				}
				got = append(got, s)
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.posts++
	r.mu.Unlock()
	// An ExportTraceServiceResponse with no partial success: no field set,
	// no byte.
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

// DecodeExport decodes an ExportTraceServiceRequest as a collector reads
// it: its one field, resource_spans = 1 (repeated ResourceSpans); any
// other field is an error, as no exporter writes one. Decoded by hand: the
// collector package that declares the message brings gRPC, whose
// html/template keeps every exported method of a test binary alive (a
// binary twice the size, and twice the link time).
func DecodeExport(b []byte) ([]*tracepb.ResourceSpans, error) {
	var out []*tracepb.ResourceSpans
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num != 1 || typ != protowire.BytesType {
			return nil, errors.New("otlptest: not an ExportTraceServiceRequest")
		}
		b = b[n:]
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		rs := &tracepb.ResourceSpans{}
		if err := proto.Unmarshal(v, rs); err != nil {
			return nil, err
		}
		out = append(out, rs)
	}
	return out, nil
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Posts returns how many exports the receiver got.
func (r *Receiver) Posts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.posts
}
