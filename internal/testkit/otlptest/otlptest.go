// Package otlptest is an OTLP/HTTP traces receiver on the loopback
// interface for tests: what an exporter configured by the standard OTEL_*
// variables sends it, decoded.
package otlptest

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
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
	var in coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &in)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var got []Span
	for _, rs := range in.GetResourceSpans() {
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
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
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
