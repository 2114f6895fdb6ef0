// Package proxy is agentctx in front of a model API: an HTTP reverse proxy
// that Claude Code, Codex or any SDK application points its base URL at.
// Each model request's conversation goes through an Engine (context
// management: prune, offload, compact) before it is forwarded, and the
// answer streams back as it arrives.
//
// # Quick start
//
//	engine, err := proxy.NewPipelineEngine(proxy.PipelineOptions{})
//	if err != nil { ... }
//	srv, err := proxy.New(proxy.Options{Engine: engine})
//	if err != nil { ... }
//	defer srv.Close()
//	ln, _ := net.Listen("tcp", "127.0.0.1:8787")
//	err = srv.Serve(ctx, ln) // until ctx is done; requests in flight finish
//
// Then run the agent with ANTHROPIC_BASE_URL=http://127.0.0.1:8787, or a
// Codex provider whose base_url is http://127.0.0.1:8787/v1 with
// wire_api = "responses" and supports_websockets = false. The command
// "agentctx proxy" does exactly this.
//
// # What is edited, what passes through, what is refused
//
// Every request is one of four kinds:
//
//   - Edited: POST /v1/messages (Anthropic), /v1/chat/completions (OpenAI
//     chat) and /v1/responses (OpenAI Responses, only when the request
//     carries its whole history: store false and no previous_response_id),
//     under any path prefix and with any query, whose body is a JSON
//     object of at most Options.MaxBody (64 MiB). It goes through the
//     Engine; one whose messages the Engine keeps is still sent byte for
//     byte (see Byte-faithful).
//   - Billed, not edited yet: POST /v1beta/models/{model}:generateContent
//     and :streamGenerateContent (Google's Gemini API, also under /v1/
//     and /v1alpha/ and a path prefix; APIGemini), to the Gemini upstream
//     (Options.GeminiURL) byte for byte, their key (x-goog-api-key or
//     ?key=) to it alone; their usage is billed, keyed to sessions and
//     logged as an edited API's, a JSON-array stream (no alt=sse) relayed
//     as it comes.
//   - Passed through untouched (the body byte for byte, the headers as
//     described under Byte-faithful): every other request of the
//     Anthropic, OpenAI and Gemini APIs, to the OpenAI upstream for chat
//     and responses paths or bearer credentials without Anthropic's
//     headers, to the Gemini one for Gemini's model methods, /v1beta/ and
//     /v1alpha/ paths, an x-goog-api-key or a ?key= without other
//     credentials, else to the Anthropic one. That is other paths and methods
//     (/v1/messages/count_tokens, /v1/models, /v1/files, batches,
//     /v1/responses/{id}, ...), a Responses request whose history lives
//     upstream, a body that is not a JSON object or is larger than
//     MaxBody, and, with Options.Tenants, a request without credentials.
//   - Answered by the proxy itself: StatsPath, MetricsPath, DashboardPath
//     and MCPPath (to loopback Host names, or with Options.Token).
//   - Refused, nothing forwarded or stored: a request that looks like the
//     Gemini API's (an x-goog-api-key header, a ?key= query without other
//     credentials, :generateContent, :streamGenerateContent or
//     :countTokens paths, /v1beta/) but routes to another family, so that
//     a Google key goes to Google only; a request of an API family the
//     proxy does not serve (Vertex AI: :rawPredict, :streamRawPredict,
//     /projects/{p}/locations/{l}/ paths, its Gemini models included; Amazon
//     Bedrock: /model/{id}/invoke, /invoke-with-response-stream,
//     /converse, /converse-stream, AWS Signature V4 credentials) gets one
//     400 with X-Should-Retry: false, in the family's error shape (Gemini
//     and Vertex: {"error":{"code":400,"message":...,"status":
//     "FAILED_PRECONDITION"}}), naming the family and what would serve it.
//     Forwarded, it would reach a provider it was not written for with the
//     client's credentials for another; a 5xx, 429 or 404 would be retried
//     or taken for a missing model (Gemini CLI retried a 501 for 217 s).
//     A websocket upgrade gets 426 Upgrade Required: Codex then sends the
//     request over HTTP at once (it retries any other status with backoff
//     first). A request with an Origin other than the proxy's own loopback
//     origin, or a model request with a Content-Type a web page may send
//     without a preflight (text/plain, a form), gets 403.
//
// Serve speaks HTTP/1.1 and, to clients with prior knowledge, HTTP/2 in
// the clear (h2c); an Upgrade: h2c offer is ignored (answered over
// HTTP/1.1).
//
// # Byte-faithful
//
// A request whose messages the Engine keeps goes upstream byte for byte.
// When the Engine changes messages, only the "messages" (or "input")
// value is rewritten, and in it every message the Engine kept is copied
// from the client's bytes; a changed message is written by the lossless
// encoder of package agentctx, which keeps every member, block type and
// signature it did not change. Headers pass both ways (minus hop-by-hop
// headers); credentials are never logged. Forwarding is an
// httputil.ReverseProxy's: the answer is relayed as it arrives, a stream
// (no Content-Length, or text/event-stream) flushed after every read,
// with its status, body and trailers verbatim; an answer the upstream
// cut is cut for the client too (and recorded 502, an error). An answer
// whose terminal event came (Anthropic's message_stop, the chat stream's
// [DONE], Responses' response.completed) was answered whole, whoever
// hangs up first: a client that closes the connection as soon as it has
// it (Codex does) is not a cut. A client that hangs up before it cancels
// the request, recorded StatusClientClosedRequest (499): not an error.
//
// # Prompt caches and signed thinking
//
// After an edit the proxy makes sure the request is one the API accepts:
//
//   - cache_control: at most MaxBreakpoints (4) in system, tools and
//     messages. The client's breakpoints stay on the content they were on
//     (content the Engine summarized away takes its breakpoint with it);
//     when there is room the proxy adds one at the end of the last edited
//     message, so the new prefix is cached from this request on.
//   - Signed thinking (Anthropic's preserved thinking, "prefix checks"): a
//     thinking block is valid only after the very prefix it was produced
//     after. The proxy remembers, for each thinking block it relays, the
//     prefix it sent (with a PipelineEngine, in the session state, so
//     that every replica over the same session store knows it); after an
//     edit, a block whose prefix changed is
//     removed from completed turns (the documented way to keep older
//     turns after trimming or summarizing). The open turn (the last
//     assistant message while its tool results are being answered) must
//     keep its thinking: when an edit changed the prefix before it, the
//     proxy uses the documented control,
//     thinking.block_binding.prefix_mismatch_behavior = "drop_block", with
//     its beta header, so the API drops the block rather than reject the
//     request. It never sends the client's request unedited instead: the
//     engine's edits are sticky, and postponing them to the end of an
//     agentic loop lets the context grow past the window. Nothing inside a
//     thinking block is changed.
//   - Thinking and the prompt cache: a block the previous request sent
//     after the same prefix is sent again as it was, with drop_block when
//     it is invalid, rather than removed. Removing it (the open turn's
//     block of the request before, once its turn is complete) would change
//     a message the provider has cached and, with it, the prefix of the
//     next turn's thinking, so that every request would invalidate the
//     next one's and break the cache at the previous turn. So thinking is
//     removed only in a request whose prefix before it changed anyway (a
//     prune batch or a compaction, Prepared.PrefixChanged), and the
//     requests between two such changes extend each other byte for byte
//     (cache_control markers aside). The price: after a change, requests
//     carry drop_block until the turns whose thinking is invalid are
//     compacted away; the API drops those blocks, as it would have had
//     the proxy removed them.
//   - A client's own compaction request on the OpenAI APIs (Codex's:
//     the conversation it sent last, its summary instruction appended,
//     and "tools": []) is sent with the tools of the session's last
//     request and "tool_choice": "none": OpenAI caches the prompt as
//     rendered from its start, tools before the conversation, so without
//     them the whole conversation is billed uncached. It is done only when
//     the request's list, as forwarded, starts with the whole list of that
//     request (clientcompact.go); Anthropic requests are left alone.
//
// # The Engine seam
//
// Engine is the boundary between HTTP and context management. The proxy
// decodes the request (agentctx.ParseDocument for Anthropic and OpenAI
// chat; ResponsesMessages for Responses input items), derives the session
// key (SessionKey; one session per conversation under a key), and calls
// Engine.Prepare with a Request; the Engine returns the whole list of
// messages to send (Prepared). Messages the
// Engine did not change must encode exactly as the request's own: the
// proxy finds them by their encoding and sends the client's bytes for
// them. Request.Facts carries the encodings and hashes the proxy made when
// decoding; an Engine that says which messages it kept
// (Prepared.Sources, as PipelineEngine does) spares the proxy encoding
// them again. After the answer, Engine.Observe receives the usage the upstream
// reported (Anthropic message_start and message_delta, the OpenAI chat
// usage chunk, Responses response.completed) for calibrated counts.
//
// PipelineEngine implements Engine over pipeline.Pipeline, one per session
// key, bounded in number and idle time. A live-session engine with state
// that survives restarts plugs in the same way: implement Prepare (and
// Observe), make its edits sticky so consecutive requests share their
// prefix, and pass it as Options.Engine.
//
// # Reports
//
// GET /agentctx/stats answers with per-session statistics (SessionStats):
// requests, errors and client cancels, bytes and tokens before and after,
// compactions (those whose
// summary the provider wrote, ContextNative on the Responses API and on
// Anthropic's, also as provider_compactions; see native_responses.go and
// native.go), cache breaks
// (requests that changed a message the request before had sent, compared
// without cache_control markers) beside the Engine's prefix changes (the
// breaks it planned: prune batches and compactions), requests that asked
// the API to drop thinking, the last usage and the proxy's overhead, and
// the session's money (Bill); "total" sums the money of every session.
// Every request is one slog line, with its cost_usd and cost_without_usd.
// Each session's stats also carry its client, model, last activity,
// clearing batches and a timeline of its last 200 requests (SessionView).
//
// MetricsPath (/metrics) serves the same counts in the Prometheus text
// format, from a registry of the Server's own (Registry). DashboardPath
// (/agentctx/) serves a dashboard over the statistics, embedded in the
// binary: sessions, a session's timeline, what fills its context
// (Composition) and its artifacts read back through Options.ReadBack.
// Both are protected as the statistics are (Options.Token). With
// Options.TracerProvider set, each request is traced with OpenTelemetry
// (SpanRequest and its children; NewOTLPTracerProvider exports over OTLP as
// the standard OTEL_* variables say, TracingWanted reads whether they turn
// tracing on or off).
//
// # Money
//
// The bill so far (cost_usd) is exact up to the price table: the usage the
// upstream reported for each answered request (uncached input, cache
// reads, cache writes by lifetime, output) at Options.Prices for the
// request's model, plus the summary requests UpstreamSummarizers sent
// (and the compaction requests NativeSummarizers sent) while the Engine
// prepared a request (summary_requests, summary_cost_usd), and the
// keep-warm requests it sent itself (Options.KeepWarm: keep_warm_requests,
// keep_warm_cost_usd; see keepwarm.go). Failed requests
// are not billed; a request its client cancelled is billed the usage its
// stream had reported (Anthropic's message_start carries the input), or,
// when the upstream had begun answering and reported nothing yet (OpenAI
// reports at a stream's end), the input the Engine counted
// (Prepared.TokensAfter), read from the prompt cache up to the input the
// session's last answer reported.
//
// The bill without agentctx (cost_without_usd) is an estimate: what the
// requests as the client sent them would have cost, with no summary
// requests. Per session and model the proxy keeps two simulated prompt
// caches (pricing.Cache), one fed the requests as sent, one as received,
// at message granularity: the tools and the system prompt, then one
// block per message, a message's prefix chained from its msgHash, a
// breakpoint on a message (or tools, system) that holds a cache_control.
// A message's tokens are counted once (the Engine's MessageCounter,
// memoized by msgHash); the tools and system prompt get what
// Prepared.TokensBefore counts beyond the messages; every count is scaled
// so that the request as sent adds up to the input the upstream reported.
// Both answers are taken to be the one the upstream gave (the same output
// tokens). The estimate is the actual cost plus the difference of the two
// simulations:
//
//	cost_without = cost + sim(as received) − sim(as sent)
//
// so what the simulation does not model (another session's cache entries,
// the provider's block boundaries) cancels out, and an unedited request
// costs the same both ways. Limits: requests the Engine did not prepare
// (an Engine error, a body over MaxBody) count as unedited; a client that
// would have compacted its own history without agentctx (Claude Code's
// auto-compact) is not modelled; the counts are the Engine's, calibrated
// per request, not the provider's tokenizer.
//
// With Options.Ledger each answered request's money is also recorded
// durably (a session.LedgerEntry, off the request's path: see ledger.go),
// and StartFromLedger makes the totals and counters of a restarted proxy
// go on from it; package savings reports it.
package proxy
