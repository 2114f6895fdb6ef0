// Package sdkmw is the HTTP middleware shared by anthropicx and openaix: it
// runs a pipeline on the messages of a request body and reports the usage of
// the response, without buffering a streamed response. It keeps the
// messages it decoded of each conversation's last request
// (internal/lib/decodecache, bounded by Options.DecodeCacheBytes), so that a
// request decodes only what is new in it and the pipeline is handed the
// encodings and hashes of the others.
package sdkmw

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"slices"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/lib/wire"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pricing"
)

// Preparer runs the pipeline on a request body read as a document
// (*pipeline.Pipeline implements it).
type Preparer interface {
	PrepareDocument(ctx context.Context, doc *agentctx.Document) (*pipeline.Result, error)
}

// CallPreparer is the optional ability of a Preparer to take what the
// middleware knows of a request besides its messages
// (*pipeline.Pipeline implements it).
type CallPreparer interface {
	PrepareCall(ctx context.Context, doc *agentctx.Document, co pipeline.CallOptions) (*pipeline.Result, error)
}

// Observer is told the usage of every response whose request the
// middleware prepared. It is an optional ability of a Preparer, or set in
// Options.
type Observer interface {
	Observe(ctx context.Context, u pricing.Usage)
}

// usageObserver is the session engine's feedback (*pipeline.Pipeline).
type usageObserver interface {
	Observe(ctx context.Context, u pricing.Usage, counted int) error
}

// observeUsage feeds the usage of each response to the session engine,
// which estimates the next request from it.
type observeUsage struct {
	p        usageObserver
	log      *slog.Logger
	provider string
}

func (o observeUsage) Observe(ctx context.Context, u pricing.Usage) {
	// The engine is told the provider's usage as it is, cache reads and
	// writes apart: its cache model learns the hit rate and that the
	// provider caches from them. Told the input as a whole (as it was
	// until issue 45), it concluded after three reports that the
	// provider never caches, and priced every clearing batch as free of
	// cache rewrites.
	if err := o.p.Observe(ctx, u, 0); err != nil && o.log != nil { // of the last request prepared
		o.log.WarnContext(ctx, "agentctx: cannot record usage", "provider", o.provider, "err", err)
	}
}

// Options configure the middleware. The zero value means: fail a request
// whose preparation fails, log nothing, observe usage when the Preparer is
// an Observer.
type Options struct {
	// Observer receives the usage of each response; nil means the
	// Preparer when it implements Observer, or, for a *pipeline.Pipeline,
	// its Observe (the session's estimates then start from the usage).
	Observer Observer
	// OnResult, when set, is called with the result of every preparation
	// (the messages sent and the report).
	OnResult func(ctx context.Context, res *pipeline.Result)
	// FailOpen sends a request unchanged when it cannot be prepared (the
	// body is not a request with messages, the pipeline fails), after
	// logging why. By default the request fails with the error.
	FailOpen bool
	// Logger receives a record per failure; nil discards them.
	Logger *slog.Logger
	// DecodeCacheBytes bounds the memory kept of the messages decoded,
	// so that a request decodes only the messages its conversation's
	// previous request did not send (and the pipeline neither encodes nor
	// hashes the others again). 0 means DefaultDecodeCacheBytes (64 MiB);
	// a negative value turns the cache off.
	DecodeCacheBytes int64
}

// Provider is what differs between the APIs.
type Provider struct {
	Name string
	// Match reports whether a request carries messages to prepare.
	Match func(r *http.Request) bool
	// API is the wire format of the responses, whose usage is read
	// (internal/lib/wire); 0 reads none.
	API wire.API
	// Binding, when set, returns what the request's signed thinking binds
	// (pipeline.CallOptions), given to a CallPreparer.
	Binding func(body []byte, doc *agentctx.Document) pipeline.CallOptions
	// Finish, when set, is called with each preparation's result before
	// the body is written (and before Options.OnResult): it may replace
	// res.Messages (anthropicx removes the thinking an edit invalidated),
	// change the request's headers (req is nil in Prepare), and return
	// top-level members to set in the body sent (anthropicx's native mode
	// sets context_management). known says what the middleware knows of
	// the messages, for Finish not to encode them again. sources is, for
	// the messages Finish leaves in res.Messages (metadata stripped), the
	// index of doc's message each one is, unchanged, or -1 (as
	// Known.Sources), so that the body is written with their known
	// encodings; nil when not known.
	Finish func(req *http.Request, body []byte, doc *agentctx.Document, res *pipeline.Result, known Known) (members map[string][]byte, sources []int, err error)
	// Decode, when set, reads the messages of a matched request body in
	// place of agentctx.ParseDocument (openaix's Responses requests, whose
	// "input" holds items), and returns with them the function that writes
	// the body to send for the prepared messages (metadata stripped). A
	// nil document and no error send the body as it is, unprepared (a
	// Responses request whose history the server keeps).
	// encode is given, with the messages to send, what the pipeline said
	// of them (pipeline.Result.Sources: the index of the document's
	// message each one is, unchanged, or -1), nil when not known.
	Decode func(ctx context.Context, body []byte) (doc *agentctx.Document, encode func(msgs []agentctx.Message, sources []int) ([]byte, error), err error)
	// Cut, when set, returns the index of the first message the Preparer
	// is given (anthropicx's native mode: the history from its last
	// compaction block on, as the API reads it); Finish still gets the
	// whole document, and the result of the messages from there.
	Cut func(doc *agentctx.Document) int
}

// Known is what the middleware knows of a request's messages besides
// them, given to Provider.Finish so that it need not encode them again.
type Known struct {
	// Facts are of the document's messages, index for index (see
	// agentctx.Conversation); nil when not known.
	Facts []agentctx.Facts
	// Sources is, for the result's messages with their metadata stripped
	// (agentctx.StripMetadata), the index of the document's message each
	// one is, unchanged, or -1; nil when not known.
	Sources []int
}

// Encoding returns the encoding of the result's message j with its
// metadata stripped, or nil when it is not known.
func (k Known) Encoding(j int) []byte {
	if j < len(k.Sources) {
		if s := k.Sources[j]; s >= 0 && s < len(k.Facts) {
			return k.Facts[s].Encoding
		}
	}
	return nil
}

// Fact returns the facts known of the document's message j (none when
// not known).
func (k Known) Fact(j int) agentctx.Facts {
	if j < len(k.Facts) {
		return k.Facts[j]
	}
	return agentctx.Facts{}
}

// known returns what is known of the messages of res, prepared from
// pdoc, the messages of doc from the index cut on.
func known(facts []agentctx.Facts, pdoc *agentctx.Document, cut int, res *pipeline.Result) Known {
	if facts == nil {
		return Known{}
	}
	src := res.Sources
	if len(src) != len(res.Messages) {
		src = nil
		if n := len(res.Messages); n > 0 && n == len(pdoc.Messages) && &res.Messages[0] == &pdoc.Messages[0] {
			// The input list itself, which is never modified: every
			// message is the input's.
			src = make([]int, n)
			for j := range src {
				src[j] = j
			}
		}
	}
	if src == nil {
		return Known{Facts: facts}
	}
	src = stripped(src, res.Messages)
	for j := range src {
		if src[j] >= 0 {
			src[j] += cut
		}
	}
	return Known{Facts: facts, Sources: src}
}

// ErrNotMessages is returned (wrapped) for a matched request whose body is
// not a JSON object with "messages".
var ErrNotMessages = errors.New("request body is not a JSON object with messages")

// Middleware is an SDK middleware (the shape of option.Middleware in both
// official SDKs).
type Middleware = func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error)

// New returns the middleware. The zero Options means the documented
// defaults.
func New(p Preparer, prov Provider, opts Options) Middleware {
	mw, _ := newMiddleware(p, prov, opts)
	return mw
}

// newMiddleware is New, returning also its decode cache (for tests).
func newMiddleware(p Preparer, prov Provider, opts Options) (Middleware, *mwCache) {
	if opts.Observer == nil {
		switch v := p.(type) {
		case Observer:
			opts.Observer = v
		case usageObserver:
			opts.Observer = observeUsage{v, opts.Logger, prov.Name}
		}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mc := &mwCache{cache: newDecodeCache(opts.DecodeCacheBytes), prefix: prov.Name + "\x00"}
	return func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		if req.Body == nil || !prov.Match(req) {
			return next(req)
		}
		ctx := req.Context()
		body, err := readBody(req)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("agentctx: read request body: %w", err)
		}
		out, prepared, err := prepare(ctx, req, p, prov, body, opts.OnResult, mc)
		if err != nil {
			if !opts.FailOpen {
				return nil, fmt.Errorf("agentctx: prepare %s request: %w", prov.Name, err)
			}
			log.LogAttrs(ctx, slog.LevelWarn, "agentctx: request sent unprepared", slog.String("provider", prov.Name), slog.String("error", err.Error()))
			out, prepared = body, true // observed: the pipeline's estimates start from it
		}
		setBody(req, out)
		resp, err := next(req)
		if err != nil || opts.Observer == nil || !prepared || resp.StatusCode != http.StatusOK || resp.Body == nil {
			return resp, err
		}
		resp.Body = &usageReader{rc: resp.Body, ctx: ctx, prov: prov, obs: opts.Observer, sse: isSSE(resp.Header.Get("Content-Type"))}
		return resp, nil
	}, mc
}

// strippedSources returns res.Sources for res.Messages with their metadata
// stripped (agentctx.StripMetadata): a message that had some is no longer
// the input's (-1). nil when res says nothing of its messages.
func strippedSources(res *pipeline.Result) []int {
	if len(res.Sources) != len(res.Messages) {
		return nil
	}
	return stripped(res.Sources, res.Messages)
}

// stripped returns a copy of the sources of msgs in which a message
// agentctx.StripMetadata changes is no longer the input's (-1).
func stripped(sources []int, msgs []agentctx.Message) []int {
	src := slices.Clone(sources)
	for j := range src {
		if src[j] < 0 {
			continue
		}
		_, ts := msgs[j].Field(agentctx.FieldTimestamp)
		_, st := msgs[j].Field(agentctx.FieldMessageStatus)
		if ts || st {
			src[j] = -1
		}
	}
	return src
}

// Prepare runs p on a request body and returns the body to send: the same
// object with the prepared messages, metadata (timestamp, messageStatus)
// stripped. binding, when set and p is a CallPreparer, says what the
// request's thinking binds.
func Prepare(ctx context.Context, p Preparer, binding func([]byte, *agentctx.Document) pipeline.CallOptions, body []byte, onResult func(context.Context, *pipeline.Result)) ([]byte, error) {
	out, _, err := prepare(ctx, nil, p, Provider{Binding: binding}, body, onResult, nil)
	return out, err
}

// prepare returns the body to send and whether the pipeline prepared it
// (false: a body Provider.Decode passes through, whose usage is not
// observed either).
// mwCache is a middleware's decode cache (nil or a nil cache: none).
type mwCache struct {
	cache  *decodeCache
	prefix string
}

func prepare(ctx context.Context, req *http.Request, p Preparer, prov Provider, body []byte, onResult func(context.Context, *pipeline.Result), mc *mwCache) ([]byte, bool, error) {
	binding := prov.Binding
	var doc *agentctx.Document
	var facts []agentctx.Facts // of doc.Messages, when known
	var encode func([]agentctx.Message, []int) ([]byte, error)
	var err error
	if prov.Decode != nil {
		if doc, encode, err = prov.Decode(ctx, body); err != nil {
			return nil, false, err
		}
		if doc == nil {
			return body, false, nil
		}
	} else if d, f, ok := mc.document(body); ok {
		doc, facts = d, f
	} else {
		if doc, err = agentctx.ParseDocument(ctx, body); err != nil {
			return nil, false, err
		}
		if doc.Format != agentctx.FormatObject {
			return nil, false, ErrNotMessages
		}
	}
	pdoc, pfacts, cut := doc, facts, 0
	if prov.Cut != nil {
		if k := prov.Cut(doc); k > 0 && k < len(doc.Messages) {
			pdoc, cut = doc.WithMessages(doc.Messages[k:]), k
			if pfacts != nil {
				pfacts = pfacts[k:]
			}
		}
	}
	var res *pipeline.Result
	if cp, ok := p.(conversationPreparer); ok && pfacts != nil {
		var co pipeline.CallOptions
		if binding != nil {
			co = binding(body, pdoc)
		}
		if co.Tools == nil {
			co.Tools, _ = pdoc.Member("tools") // as PrepareCall reads them
		}
		res, err = cp.PrepareConversation(ctx, agentctx.Conversation{Messages: pdoc.Messages, Facts: pfacts}, cp.RequestTokens(pdoc), co)
	} else if cp, ok := p.(CallPreparer); ok && binding != nil {
		res, err = cp.PrepareCall(ctx, pdoc, binding(body, pdoc))
	} else {
		res, err = p.PrepareDocument(ctx, pdoc)
	}
	if err != nil {
		return nil, false, err
	}
	var members map[string][]byte
	var sources []int // of the messages to send, stripped: see Known.Sources
	if prov.Finish != nil {
		if members, sources, err = prov.Finish(req, body, doc, res, known(facts, pdoc, cut, res)); err != nil {
			return nil, false, err
		}
	} else if facts != nil {
		sources = known(facts, pdoc, cut, res).Sources
	}
	if onResult != nil {
		onResult(ctx, res)
	}
	out, err := writeBody(body, doc, res, facts, sources, encode, pdoc == doc && prov.Finish == nil)
	if err != nil {
		return nil, true, err
	}
	return setMembers(out, members), true, nil
}

// writeBody returns the body to send for res, prepared from doc's
// messages. With the Provider's encode, it is given the result's sources
// when plain (they index doc, and no Finish changed the messages);
// otherwise the body is doc with the result's messages, those that
// sources (Known.Sources) says are doc's copied from their encodings in
// facts, not encoded again.
func writeBody(body []byte, doc *agentctx.Document, res *pipeline.Result, facts []agentctx.Facts, sources []int, encode func([]agentctx.Message, []int) ([]byte, error), plain bool) ([]byte, error) {
	msgs := agentctx.StripMetadata(res.Messages)
	if encode != nil {
		var src []int
		if plain {
			src = strippedSources(res)
		}
		return encode(msgs, src)
	}
	var enc func(int) []byte
	if facts != nil && len(sources) == len(msgs) {
		enc = func(j int) []byte {
			if s := sources[j]; s >= 0 && s < len(facts) {
				return facts[s].Encoding
			}
			return nil
		}
	}
	out, err := doc.WithMessages(msgs).AppendJSONEncoded(make([]byte, 0, len(body)+len(body)/8), enc)
	return bytes.TrimSuffix(out, []byte("\n")), err
}

// setMembers sets the top-level members of body, in key order.
func setMembers(body []byte, members map[string][]byte) []byte {
	keys := make([]string, 0, len(members))
	for k := range members {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		body = rawjson.Set(body, k, members[k])
	}
	return body
}

// document reads body through the cache (see cachedDocument); ok is
// false when there is no cache or the body must be read whole.
func (mc *mwCache) document(body []byte) (*agentctx.Document, []agentctx.Facts, bool) {
	if mc == nil || mc.cache == nil {
		return nil, nil, false
	}
	return cachedDocument(mc.cache, mc.prefix, body)
}

// readBody reads req's body, into a buffer made for its ContentLength
// when it has one (the SDKs set it): io.ReadAll grows its buffer by
// copies, twice the body in garbage. A body shorter or longer than it
// said is read as it is, as io.ReadAll reads it.
func readBody(req *http.Request) ([]byte, error) {
	n := req.ContentLength
	if n <= 0 || n > maxPresized {
		return io.ReadAll(req.Body)
	}
	// ReadFrom grows the buffer when less than MinRead is free: with that
	// much more, the read that finds the end needs no copy.
	buf := bytes.NewBuffer(make([]byte, 0, n+bytes.MinRead))
	if _, err := buf.ReadFrom(req.Body); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// maxPresized bounds the buffer readBody makes from a Content-Length
// before reading: a body said to be larger is read by io.ReadAll, so that
// a wrong Content-Length does not allocate a huge buffer up front.
const maxPresized = 32 << 20

func setBody(req *http.Request, b []byte) {
	req.Body = io.NopCloser(bytes.NewReader(b))
	req.ContentLength = int64(len(b))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	if req.Header != nil {
		req.Header.Del("Content-Length")
	}
}

func isSSE(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "text/event-stream"
}

// maxJSONBody caps what is kept of a non-streamed response to read its
// usage.
const maxJSONBody = 64 << 20

// usageReader passes a response body through unchanged and reads the usage
// from it as it goes: the events of an event stream (wire.SSE), or the
// whole JSON body. The Observer is called once, at the end of the body or
// when it is closed.
type usageReader struct {
	rc   io.ReadCloser
	ctx  context.Context
	prov Provider
	obs  Observer
	sse  bool

	events wire.SSE
	emit   func(wire.Event)
	usage  wire.UsageReader
	buf    []byte // the body so far (JSON)
	done   bool
}

func (r *usageReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	if n > 0 && !r.done {
		r.feed(p[:n])
	}
	if err == io.EOF {
		r.finish()
	}
	return n, err
}

func (r *usageReader) Close() error {
	r.finish()
	return r.rc.Close()
}

func (r *usageReader) feed(b []byte) {
	if !r.sse {
		if len(r.buf)+len(b) <= maxJSONBody {
			r.buf = append(r.buf, b...)
		}
		return
	}
	if r.emit == nil {
		r.emit = r.event
	}
	r.events.Feed(b, r.emit)
}

func (r *usageReader) event(e wire.Event) { r.usage.Event(r.prov.API, e.Data) }

func (r *usageReader) finish() {
	if r.done {
		return
	}
	r.done = true
	if r.sse {
		if r.emit == nil {
			r.emit = r.event
		}
		r.events.End(r.emit)
	} else {
		r.usage.Whole(r.prov.API, r.buf)
	}
	r.buf = nil
	if r.usage.Got {
		r.obs.Observe(r.ctx, r.usage.Usage)
	}
}
