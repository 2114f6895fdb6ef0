package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/trace"
)

// forward is one request's trip upstream, made by an
// httputil.ReverseProxy: rewrite builds the upstream request,
// modifyResponse installs the watch on the answer (usage, thinking
// signatures, compaction blocks), errorHandler answers an upstream that
// failed. done finishes the exchange, whichever way it ended.
type forward struct {
	s        *Server
	r        *http.Request
	x        *exchange
	rt       route
	body     io.Reader // the body to send, when it was not read whole
	sent     sendBody  // the body sent, when it was read whole
	recorded chan struct{}
	upSpan   trace.Span // the upstream span, when traced
	// cutErr is the error that ended the upstream's answer before its
	// body's end: the upstream cut it, or the client hung up (which
	// cancels the upstream request). The client's answer is then aborted;
	// done tells which it was.
	cutErr error
	sc     usageScanner
	// rp and watched are held here, one allocation with the forward.
	rp      httputil.ReverseProxy
	watched watchedBody
	// upCtx is the upstream request's context (its span), for the store
	// writes the answer makes.
	upCtx context.Context
	ended bool // the answer's body was read to its end or its error
	// upHeader and upURL are the headers and URL of an Anthropic request
	// as sent upstream, for its keep-warm requests (keepwarm.go).
	upHeader http.Header
	upURL    string
}

// proxyHandler returns the ReverseProxy of one forward.
func (s *Server) proxyHandler(f *forward) *httputil.ReverseProxy {
	f.rp = httputil.ReverseProxy{
		Rewrite:        f.rewrite,
		ModifyResponse: f.modifyResponse,
		ErrorHandler:   f.errorHandler,
		Transport:      s.opts.Transport,
		// FlushInterval 0: ReverseProxy flushes every write of a stream
		// (text/event-stream, or no Content-Length), each event as it
		// comes; an answer of known length ends for the client when the
		// handler returns, the exchange finished (done), as before.
		BufferPool: &s.buffers,
		// The proxy logs the cut itself (done), credentials redacted.
		ErrorLog: s.discardLog,
	}
	return &f.rp
}

// forwardedHeaders are the client's forwarding headers, which
// ReverseProxy drops with Rewrite; the proxy forwards them as they came.
var forwardedHeaders = [...]string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"}

// rewrite sets the upstream URL, the body to send (with its length) and
// the headers: the client's, less the hop-by-hop ones (which
// ReverseProxy removed, with those the Connection header names), Te,
// Host and Accept-Encoding (the transport negotiates compression itself
// so the proxy can read usage), plus the betas the prepared request
// needs.
func (f *forward) rewrite(pr *httputil.ProxyRequest) {
	s, x, in, out := f.s, f.x, pr.In, pr.Out
	*out.URL = *f.rt.upstream
	rawBase := strings.TrimSuffix(out.URL.EscapedPath(), "/")
	out.URL.Path = strings.TrimSuffix(out.URL.Path, "/") + f.rt.path
	out.URL.RawPath = ""
	if f.rt.rawPath != "" {
		// The path as the client escaped it (url.URL sends RawPath, an
		// encoding of Path): %2F stays %2F.
		out.URL.RawPath = rawBase + f.rt.rawPath
	}
	out.URL.RawQuery = in.URL.RawQuery
	out.Host = ""
	out.Trailer = nil
	h := out.Header
	h.Del("Te")
	h.Del("Host")
	h.Del("Accept-Encoding")
	h.Del("Content-Length")
	for _, k := range forwardedHeaders {
		if v, ok := in.Header[k]; ok {
			h[k] = v
		}
	}
	if _, ok := in.Header["User-Agent"]; !ok {
		// As http.Client sent it (ReverseProxy would send none).
		h["User-Agent"] = []string{defaultUserAgent}
	}
	switch {
	case f.sent.read:
		out.ContentLength = int64(f.sent.Len())
		sent := &f.sent
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(sent.reader()), nil }
		if sent.Len() == 0 {
			out.Body = http.NoBody
		} else {
			out.Body = io.NopCloser(sent.reader())
		}
	case in.Body == nil || in.Body == http.NoBody:
		out.Body, out.ContentLength = nil, 0
	default:
		if f.body != io.Reader(in.Body) {
			out.Body = io.NopCloser(f.body)
		}
		out.ContentLength = in.ContentLength
	}
	s.addBetas(h, x)
	if s.warm != nil && x.api == APIAnthropic {
		f.upHeader, f.upURL = h.Clone(), out.URL.String()
	}
	x.overhead = s.opts.Now().Sub(x.start)
	f.recorded = s.recordSent(x)
	if ctx, sp := s.startSpan(out.Context(), SpanUpstream, trace.WithSpanKind(trace.SpanKindClient)); sp != nil {
		pr.Out = out.WithContext(ctx)
		f.upSpan = sp
	}
}

// defaultUserAgent is the User-Agent http.Client sends when a request has
// none.
const defaultUserAgent = "Go-http-client/1.1"

// waitRecorded waits until what the exchange sends is recorded (see
// recordSent).
func (f *forward) waitRecorded() {
	if f.recorded != nil {
		<-f.recorded
		f.recorded = nil
	}
}

// modifyResponse starts the exchange's answer: a whole JSON answer is
// read and watched before it is relayed, any other body (a stream: SSE, or
// a JSON array its family streams) is watched as it is relayed.
func (f *forward) modifyResponse(resp *http.Response) error {
	s, x := f.s, f.x
	f.waitRecorded()
	f.upCtx = context.WithoutCancel(resp.Request.Context())
	x.status = resp.StatusCode
	if resp.StatusCode >= 400 {
		s.undoRefused(f.upCtx, x, "the upstream refused the request") // before the client has the refusal (undo.go)
	}
	x.answering = resp.StatusCode == http.StatusOK
	if fw, ok := s.opts.Engine.(Forwarder); ok && x.prepared != nil && resp.StatusCode == http.StatusOK && f.sent.read {
		if pf, ok := fw.(partsForwarder); ok {
			pf.forwardedParts(x.session, x.api, &f.sent) // joined only when kept
		} else {
			fw.Forwarded(x.session, x.api, f.sent.Bytes())
		}
	}
	switch {
	case resp.StatusCode != http.StatusOK || !f.sent.read:
	case x.sentListParts != nil:
		s.tools.rememberParts(x.api, x.session, x.reqTools, x.sentListParts, x.reqList)
	default:
		s.tools.remember(x.api, x.session, f.sent.Bytes(), x.reqList)
	}
	// Not answer headers; ReverseProxy removed the hop-by-hop ones.
	resp.Header.Del("Host")
	resp.Header.Del("Accept-Encoding")
	sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	f.watched = watchedBody{f: f, body: resp.Body, track: x.api != "" && resp.StatusCode < 300}
	w := &f.watched
	// A JSON array streamed element by element (Gemini's stream without
	// alt=sse) is relayed as it comes, each element read as an event.
	f.sc.array = !sse && f.rt.array
	if w.track && !sse && !f.sc.array {
		// A whole JSON answer: read it, then relay it.
		data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
		if err != nil {
			f.cutErr = err // a cut answer is not parsed nor relayed whole
			return err
		}
		f.sc.whole(data, x.fam)
		f.seen()
		f.got()
		f.ended = true
		w.whole = bytes.NewReader(data)
	}
	resp.Body = w
	return nil
}

// seen remembers what the scanner found, and records the usage once the
// answer carries its final count, before the bytes that carry them reach
// the client: a client sends its next request as soon as it has the
// answer, maybe to another replica, and that request must be prepared
// with this one's usage in the session state, or the decisions of two
// replicas could differ.
func (f *forward) seen() {
	x := f.x
	f.s.rememberSeen(x, &f.sc)
	if f.sc.got && f.sc.final && !x.compacted {
		// (An answer that compacted reports the step after the summary,
		// not the request the Engine counted: native.go.)
		f.s.observe(f.upCtx, x, f.sc.usage)
	}
}

// got keeps the usage read in the exchange.
func (f *forward) got() {
	x := f.x
	x.usage, x.gotUsage = f.sc.usage, f.sc.got
}

// watchedBody is the upstream answer's body as the client receives it:
// read, it feeds the usage scanner before the bytes go on, and notes
// the error that cut it short.
type watchedBody struct {
	f     *forward
	body  io.ReadCloser
	whole *bytes.Reader // the whole answer, when read in modifyResponse
	track bool
}

func (w *watchedBody) Read(p []byte) (int, error) {
	if w.whole != nil {
		return w.whole.Read(p)
	}
	f := w.f
	n, err := w.body.Read(p)
	if f.ended {
		return n, err
	}
	if n > 0 && w.track {
		f.sc.feed(p[:n], f.x.fam)
		f.seen()
	}
	switch {
	case err == io.EOF:
		f.ended = true
		if w.track {
			f.sc.end(f.x.fam) // an event the stream did not end with an empty line
			f.seen()
		}
		f.got()
	case err != nil:
		f.ended = true
		f.cutErr = err
		if w.track {
			// What came before the error is what the upstream sent: an
			// event its empty line did not end may still be the last.
			f.sc.end(f.x.fam)
			f.seen()
		}
		f.got()
	}
	return n, err
}

func (w *watchedBody) Close() error { return w.body.Close() }

// errorHandler answers an upstream that failed: 502 with the error
// (credentials redacted) when there was no answer, an aborted client
// connection when the answer was cut. A client that hung up before the
// answer came gets nothing, and the request is recorded as its cancel
// (StatusClientClosedRequest).
func (f *forward) errorHandler(w http.ResponseWriter, up *http.Request, err error) {
	if f.cutErr != nil {
		panic(http.ErrAbortHandler)
	}
	// As http.Client reported it.
	msg := urlErrorOp(up.Method) + ": " + err.Error()
	trace.SpanFromContext(up.Context()).RecordError(errors.New(msg))
	f.waitRecorded()
	// No answer came: the upstream accepted nothing, so what the request
	// stored is taken back, as for a refusal, before the client has the
	// error (it may retry at once).
	undo := func() { f.s.undoRefused(context.WithoutCancel(up.Context()), f.x, "the upstream did not answer") }
	if bodyTimedOut(f.r) { // the client's fault, not the upstream's
		f.x.status = http.StatusRequestTimeout
		undo()
		writeError(w, http.StatusRequestTimeout, "agentctx proxy: reading the request body: timed out")
		return
	}
	if f.clientGone() {
		f.x.status, f.x.cancelled = StatusClientClosedRequest, true
		undo()
		return
	}
	status := http.StatusBadGateway
	if errors.Is(err, ErrUpstreamTimeout) {
		status = http.StatusGatewayTimeout // UpstreamHeaderTimeout
	}
	f.x.status = status
	undo()
	writeError(w, status, "agentctx proxy: upstream: "+msg)
}

// StatusClientClosedRequest is the status the proxy records (in its log,
// the statistics' timeline and the traces) for a request whose client hung
// up before the answer's end: nginx's 499, "client closed request". The
// client is gone, so no one receives it. The request is not an error (the
// upstream did nothing wrong); it is counted as a client cancel, and
// billed for the usage its stream had reported (Anthropic's message_start
// reports the input).
const StatusClientClosedRequest = 499

// clientGone reports whether the client hung up (or its connection
// failed): the request's context is then cancelled, before the handler
// returns.
func (f *forward) clientGone() bool { return f.r.Context().Err() != nil }

// urlErrorOp is url.Error's Op for a method, as http.Client sets it.
func urlErrorOp(method string) string {
	if method == "" {
		return "Get"
	}
	if lower := strings.ToLower(method); lower != method {
		return method[:1] + lower[1:]
	}
	return method
}

// done finishes the exchange, whether its answer was relayed, cut or
// never came; it runs when the handler is aborted too.
func (f *forward) done() {
	f.waitRecorded()
	f.ending()
	f.s.finish(f.r, f.x)
	if f.s.warm != nil && f.x.api != "" {
		f.s.warm.arm(f)
	}
	if f.upSpan != nil {
		f.upSpan.End() // once the answer is relayed
	}
}

// ending records how the answer ended, whoever hung up first:
//   - an answer whole (its terminal event read, or read to its end) was
//     answered, with its status: the client hanging up as soon as it has
//     the terminal event (Codex does), before the upstream ends its body,
//     changes nothing, nor does an upstream that cuts the connection
//     after its last event (issue 45: both were recorded as cut, an
//     error, their usage dropped);
//   - else a client that hung up (or whose connection failed) cancelled
//     the request (StatusClientClosedRequest), unless the upstream had
//     answered an error status, which stays;
//   - else an error that ended the upstream's answer cut it: the client's
//     is cut too, as ReverseProxy does, so it sees a transport error (and
//     retries) rather than a complete-looking answer (the hardening rule,
//     issue 24), and the request is recorded 502.
func (f *forward) ending() {
	x := f.x
	switch {
	case f.sc.done || f.ended && f.cutErr == nil:
	case f.clientGone():
		if x.status < 300 {
			x.status, x.cancelled = StatusClientClosedRequest, true
		}
		f.s.log.Info("proxy: the client hung up before the answer's end", "path", f.r.URL.Path, "session", x.session)
	case f.cutErr != nil:
		f.s.log.Warn("proxy: the upstream's answer was cut; aborting the client's", "path", f.r.URL.Path, "session", x.session, "err", redactErr(f.cutErr))
		x.status = http.StatusBadGateway
	}
}

// bufferPool is the ReverseProxy's copy buffers.
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }

func newDiscardLog() *log.Logger { return log.New(io.Discard, "", 0) }

// rememberSeen remembers the thinking blocks and the compaction the
// scanner found since the last call, before the bytes that complete them
// reach the client, which may send its next request at once.
func (s *Server) rememberSeen(x *exchange, sc *usageScanner) {
	if len(sc.thinking) > len(x.thinkKeys) {
		s.rememberThinking(x, sc.thinking[len(x.thinkKeys):])
		x.thinkKeys = sc.thinking
	}
	if sc.compaction != nil && !x.compacted {
		x.compacted = true
		s.rememberCompaction(x, sc.compaction)
	}
}
