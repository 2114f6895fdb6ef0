package proxy

import (
	"context"
	"net/http"
	"strings"
)

// MCPPath is where the proxy serves Options.MCP on its own listener: the
// read-back tools over MCP streamable HTTP, so that an agent behind the
// proxy reads what the proxy stored with one line of set-up:
//
//	claude mcp add --transport http agentctx http://127.0.0.1:8787/mcp
const MCPPath = "/mcp"

// isMCP reports whether a request path is the proxy's own MCP endpoint
// (MCPPath or below it).
func isMCP(path string) bool {
	return path == MCPPath || strings.HasPrefix(path, MCPPath+"/")
}

// stopKey is the request context key of the context that Serve cancels
// when it starts shutting down.
type stopKey struct{}

// serveMCP answers a request to MCPPath with Options.MCP, never upstream:
// without an MCP handler it is a 404. An MCP client keeps a stream open
// (its standing GET) for as long as it is connected; that stream ends when
// Serve shuts down, so that it does not hold the shutdown for
// ShutdownTimeout as a model request in flight does.
func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request) {
	if s.opts.MCP == nil {
		writeError(w, http.StatusNotFound, "agentctx proxy: this proxy serves no MCP endpoint")
		return
	}
	if stop, ok := r.Context().Value(stopKey{}).(context.Context); ok {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		defer context.AfterFunc(stop, cancel)()
		r = r.WithContext(ctx)
	}
	s.opts.MCP.ServeHTTP(w, r)
}
