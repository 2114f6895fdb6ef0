// Package wire reads the providers' wire formats, once, for the proxy and
// the SDK middleware (internal/sdkmw, anthropicx, openaix):
//
//   - [Usage], the one type for the token usage an upstream reported for
//     a response, and [UsageReader], its parser for each API ([Anthropic]
//     Messages, OpenAI [Chat] Completions, OpenAI [Responses]), fed a
//     whole JSON answer or the events of a stream;
//   - [SSE], an incremental Server-Sent Events reader (events split across
//     any chunk boundaries, CR, LF or CRLF line ends, comments, multi-line
//     data);
//   - [Split], the top-level members of a request body located once, the
//     result reused by the document decoder (agentctx.SplitDocument).
//
// Responses items (the mapping of a Responses request's input to
// messages) are in internal/respitems, which both users share already.
//
// Two other usage types stay, on purpose: pipeline.Usage (the proxy's
// Usage) is what the pipeline's calibration is told, with the count of the
// request it is for, cache tokens kept apart from the uncached input; and
// pricing.Usage is a bill, its cache writes split by price (5-minute and
// 1-hour). Both are converted from a wire.Usage in one place each
// (proxy/usage.go, internal/sdkmw).
//
// Nothing here does I/O or keeps global state; no input makes it panic.
package wire
