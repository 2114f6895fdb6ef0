// Package otlphttp sends spans to an OpenTelemetry collector over OTLP/HTTP
// (http/protobuf): a Client for otlptrace.New, configured by the standard
// OTEL_EXPORTER_OTLP_* variables.
//
// It stands in for go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp,
// which imports google.golang.org/grpc, and grpc golang.org/x/net/trace,
// whose init serves HTML pages with html/template: linked into agentctx,
// that switched off the linker's dead-code elimination of methods and made
// the binary 48 MB larger (BENCHMARKS.md). The request is encoded here from
// the protobuf messages of go.opentelemetry.io/proto/otlp/trace/v1, which
// do not import grpc.
package otlphttp

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// ErrInvalid is matched by the errors of ConfigFromEnv for a variable
// whose value cannot be used (a certificate file that does not exist
// included; one that cannot be read is another error).
var ErrInvalid = errors.New("invalid OTLP exporter setting")

// DefaultEndpoint is where spans go when no variable names an endpoint.
const DefaultEndpoint = "http://localhost:4318/v1/traces"

// DefaultTimeout bounds one export when OTEL_EXPORTER_OTLP_TIMEOUT is unset.
const DefaultTimeout = 10 * time.Second

// Config is where and how spans are sent.
type Config struct {
	Endpoint string            // the URL spans are POSTed to
	Headers  map[string]string // sent with every export
	Timeout  time.Duration     // bound on one export
	Gzip     bool              // compress the body
	TLS      *tls.Config       // nil: the default
}

// ConfigFromEnv reads the configuration from the OTLP exporter variables
// as the specification defines them, the signal-specific one
// (OTEL_EXPORTER_OTLP_TRACES_*) over the general one: ENDPOINT (the
// general one gets /v1/traces appended), HEADERS (key=value pairs,
// comma-separated, values URL-encoded), TIMEOUT (milliseconds),
// COMPRESSION (gzip or none), CERTIFICATE, CLIENT_CERTIFICATE and
// CLIENT_KEY (PEM files). getenv nil means os.Getenv. A value it cannot
// use is an error naming the variable.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	get := func(name string) (string, string) {
		for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_" + name, "OTEL_EXPORTER_OTLP_" + name} {
			if v := strings.TrimSpace(getenv(k)); v != "" {
				return k, v
			}
		}
		return "", ""
	}
	c := Config{Endpoint: DefaultEndpoint, Timeout: DefaultTimeout, Headers: map[string]string{}}
	if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")); v != "" {
		c.Endpoint = v
	} else if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); v != "" {
		c.Endpoint = strings.TrimRight(v, "/") + "/v1/traces"
	}
	if u, err := url.Parse(c.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, fmt.Errorf("OTLP endpoint %q: want an http:// or https:// URL: %w", c.Endpoint, ErrInvalid)
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		if err := parseHeaders(getenv(k), c.Headers); err != nil {
			return c, fmt.Errorf("%s: %w: %w", k, err, ErrInvalid)
		}
	}
	if k, v := get("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 0 {
			return c, fmt.Errorf("%s=%q: want milliseconds: %w", k, v, ErrInvalid)
		}
		c.Timeout = time.Duration(ms) * time.Millisecond
	}
	if k, v := get("COMPRESSION"); v != "" {
		switch v {
		case "gzip":
			c.Gzip = true
		case "none":
		default:
			return c, fmt.Errorf("%s=%q: want gzip or none: %w", k, v, ErrInvalid)
		}
	}
	tc, err := tlsConfig(get)
	if err != nil {
		return c, err
	}
	c.TLS = tc
	return c, nil
}

func parseHeaders(s string, into map[string]string) error {
	for _, kv := range strings.Split(s, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return fmt.Errorf("%q is not key=value", kv)
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("the value of %q: %w", k, err)
		}
		into[k] = dv
	}
	return nil
}

func tlsConfig(get func(string) (string, string)) (*tls.Config, error) {
	var tc *tls.Config
	if k, path := get("CERTIFICATE"); path != "" {
		pem, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, notExist(err))
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: %s holds no PEM certificate: %w", k, path, ErrInvalid)
		}
		tc = &tls.Config{RootCAs: pool}
	}
	kc, certPath := get("CLIENT_CERTIFICATE")
	kk, keyPath := get("CLIENT_KEY")
	if (certPath == "") != (keyPath == "") {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY go together: %w", ErrInvalid)
	}
	if certPath != "" {
		cert, err := tls.LoadX509KeyPair(certPath, keyPath)
		if err != nil {
			return nil, fmt.Errorf("%s, %s: %w", kc, kk, notExist(err))
		}
		if tc == nil {
			tc = &tls.Config{}
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// notExist marks a file that does not exist as an invalid setting.
func notExist(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %w", err, ErrInvalid)
	}
	return err
}

// Client POSTs spans to a collector. It implements otlptrace.Client.
type Client struct {
	cfg  Config
	http *http.Client
}

// New returns a Client for cfg.
func New(cfg Config) *Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.TLS != nil {
		tr.TLSClientConfig = cfg.TLS
	}
	return &Client{cfg: cfg, http: &http.Client{Transport: tr}}
}

// Start does nothing: connections are made per export.
func (c *Client) Start(context.Context) error { return nil }

// Stop closes the idle connections.
func (c *Client) Stop(context.Context) error {
	c.http.CloseIdleConnections()
	return nil
}

// UploadTraces sends one ExportTraceServiceRequest holding spans, within
// the configured timeout. A status other than 2xx is an error with the
// start of the collector's answer.
func (c *Client) UploadTraces(ctx context.Context, spans []*tracepb.ResourceSpans) error {
	if len(spans) == 0 {
		return nil
	}
	body, err := Encode(spans)
	if err != nil {
		return err
	}
	if c.cfg.Gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(body)
		if err := zw.Close(); err != nil {
			return err
		}
		body = b.Bytes()
	}
	if c.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.Endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range c.cfg.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if c.cfg.Gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("otlp: %w", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("otlp: %s answered %s: %s", c.cfg.Endpoint, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}

// Encode returns the protobuf encoding of an ExportTraceServiceRequest
// holding spans: field 1 (resource_spans), repeated.
func Encode(spans []*tracepb.ResourceSpans) ([]byte, error) {
	var b []byte
	for _, rs := range spans {
		m, err := proto.Marshal(rs)
		if err != nil {
			return nil, fmt.Errorf("otlp: %w", err)
		}
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	return b, nil
}
