// Package wire reads the providers' wire formats, once, for the proxy and
// the SDK middleware (internal/lib/sdkmw, anthropicx, openaix):
//
//   - [Usage], the one type for the token usage an upstream reported for
//     a response, and [UsageReader], its parser for each API ([Anthropic]
//     Messages, OpenAI [Chat] Completions, OpenAI [Responses]), fed a
//     whole JSON answer or the events of a stream;
//   - [SSE], an incremental Server-Sent Events reader (events split across
//     any chunk boundaries, CR, LF or CRLF line ends, comments, multi-line
//     data);
//   - [SplitBody], the top-level members of a request body located once
//     ([Body]), the result reused by the document decoder
//     (agentctx.RequestDocumentSplit) so that the proxy splits a body once.
//
// Responses items (the mapping of a Responses request's input to
// messages) are in internal/lib/respitems, which both users share already.
//
// Usage is what the upstream reported; two other usage types stay, on
// purpose, each converted from it in one place. pipeline.Usage (the
// proxy's Usage) is what the session engine is told: the uncached input
// apart from the cache tokens, and the count of the request the usage is
// for (proxy/usage.go's sync; internal/lib/sdkmw's default Observer).
// pricing.Usage is a bill: cache writes split by their price (5-minute and
// 1-hour), the same shape for the upstream's answer and the proxy's own
// summary requests (proxy/bill.go's usageOf). wire is a leaf (it imports
// internal/base/rawjson only), so that every layer may read the wire formats.
//
// Nothing here does I/O or keeps global state; no input makes it panic.
package wire
