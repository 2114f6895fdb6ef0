// Package wire reads the providers' wire formats, once, for the proxy and
// the SDK middleware (internal/lib/sdkmw, anthropicx, openaix):
//
//   - [UsageReader], the parser of the token usage an upstream reported
//     for a response, for each API ([Anthropic] Messages, OpenAI [Chat]
//     Completions, OpenAI [Responses], Google's [Gemini]), fed a whole
//     JSON answer or the events of a stream, into pricing.Usage (the
//     module's one usage type; [AnthropicUsage] reads one usage object
//     alone);
//   - [SSE], an incremental Server-Sent Events reader (events split across
//     any chunk boundaries, CR, LF or CRLF line ends, comments, multi-line
//     data);
//   - [JSONArray], an incremental reader of a JSON array written element
//     by element (Gemini's streamGenerateContent without alt=sse), whose
//     elements the usage parser reads as a stream's events;
//   - [SplitBody], the top-level members of a request body located once
//     ([Body]), the result reused by the document decoder
//     (agentctx.RequestDocumentSplit) so that the proxy splits a body once.
//
// Responses items (the mapping of a Responses request's input to
// messages) are in internal/lib/respitems, which both users share already.
//
// The usage read is pricing.Usage as the proxy bills it, the session
// engine is told it and the middleware's Observer gets it: nothing
// converts it. wire imports internal/base/rawjson and pricing (which
// imports nothing of the module), so that every layer may read the wire
// formats.
//
// Nothing here does I/O or keeps global state; no input makes it panic.
package wire
