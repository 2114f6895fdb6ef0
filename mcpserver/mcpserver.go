// Package mcpserver serves the read-back tools of an agentctx workspace over
// the Model Context Protocol, so that an agent that cannot call Go (Claude
// Code, any MCP client) can read offloaded tool results back.
//
// # Quick start
//
//	store, _ := dirstore.Open(".agentctx", dirstore.Options{})
//	srv := mcpserver.New(store, mcpserver.Options{}) // the namespace "default", every session
//	err := srv.Run(ctx, &mcp.StdioTransport{}) // or http.Handle("/mcp", srv.Handler())
//
// From the command line: agentctx mcp --workspace DIR [--namespace NS]
// [--session ID] [--http ADDR], and for Claude Code:
//
//	claude mcp add agentctx -- agentctx mcp --workspace DIR
//
// agentctx proxy serves the same tools at /mcp on its own port, over the
// store it writes to:
//
//	claude mcp add --transport http agentctx http://127.0.0.1:8787/mcp
//
// # What a call may reach
//
// The namespace served: a tool reads any artifact of it by the id the model
// was given, whichever session stored it (ids are unique in a namespace),
// and nothing of another namespace. The listings and the session-wide grep
// cover every session, or Options.SessionID when set; a call naming a
// session_id (or a filter with one) lists that session's.
//
// # Tools
//
// The tools are the workspace's (see workspace.Tools), under the same names
// and with the same arguments as in the library and the CLI:
// get_knowledge_by_id, get_knowledge_by_lines, grep_knowledge,
// grep_session_knowledge, query_artifacts and get_tool_result_offload_info.
// Every tool is marked read-only and carries
// _meta {"anthropic/alwaysLoad": true}, so Claude Code loads it up front
// instead of deferring it behind its tool search.
//
// # Pages
//
// Claude Code writes a tool result of more than about 25,000 tokens to a
// file instead of showing it. Every result of this server is therefore one
// page of at most Options.MaxChars characters (default 40,000, the workspace's read cap) and
// Options.MaxTokens tokens (default 20,000 o200k_base tokens, which leaves
// room for Claude's own tokenizer): a longer read returns its first part and
// a notice naming the call that reads on (an offset, the next lines, a
// narrower grep).
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentctx/agentctx/tokens"
	"github.com/agentctx/agentctx/workspace"
)

// Defaults of Options.
const (
	// DefaultMaxChars caps the characters of every page, its notice
	// included: the workspace's read cap, so that a read cuts at the same
	// place whether the model calls the tool over MCP, in the request
	// (the proxy's and the SDK middleware's read-back) or through `ws`.
	DefaultMaxChars = workspace.DefaultMaxChars
	// DefaultMaxTokens caps the o200k_base tokens of every page, under the
	// 25,000 tokens from which Claude Code stops showing a tool result.
	DefaultMaxTokens = 20_000
	// DefaultName is the server name announced to clients.
	DefaultName = "agentctx"
	// MetaAlwaysLoad is the _meta key that makes Claude Code load a tool
	// up front rather than behind its tool search.
	MetaAlwaysLoad = "anthropic/alwaysLoad"
)

// Options configure a Server. The zero value means every default.
type Options struct {
	// Namespace is the workspace namespace served; "" means
	// workspace.DefaultNamespace. Every tool reads any artifact of it by
	// id, whichever session stored it, and nothing of another namespace.
	Namespace string
	// SessionID, when set, is the session the listing and session-wide
	// search tools cover unless a call names another one; "" means every
	// session of the namespace. Reads by id find any artifact of the
	// namespace either way (and, with a SessionID, also those that earlier
	// versions kept in workspace.SessionNamespace(Namespace, SessionID)).
	SessionID string
	// MaxChars caps the characters of every page; 0 means DefaultMaxChars.
	MaxChars int
	// MaxTokens caps the tokens of every page, counted with Counter; 0
	// means DefaultMaxTokens.
	MaxTokens int
	// Counter counts the tokens of a page; nil means tokens.O200kBase().
	Counter tokens.Counter
	// Name and Version are announced to clients; "" means DefaultName and
	// "dev".
	Name, Version string
	// Logger receives a record per tool call; nil discards them.
	Logger *slog.Logger
}

// Server is an MCP server over one namespace of a workspace store. It is
// safe for concurrent use when the store is; it does not close the store.
type Server struct {
	store workspace.Store
	opts  Options
	log   *slog.Logger
	mcp   *mcp.Server
}

// New returns a Server over store. The zero Options means the documented
// defaults.
func New(store workspace.Store, opts Options) *Server {
	s := &Server{store: store, opts: opts}
	o := &s.opts
	if o.Namespace == "" {
		o.Namespace = workspace.DefaultNamespace
	}
	if o.MaxChars <= 0 {
		o.MaxChars = DefaultMaxChars
	}
	if o.MaxTokens <= 0 {
		o.MaxTokens = DefaultMaxTokens
	}
	if o.Counter == nil {
		o.Counter = tokens.O200kBase()
	}
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	s.log = o.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: o.Name, Version: o.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       s.log,
		Capabilities: &mcp.ServerCapabilities{},
	})
	for _, t := range Tools(o.MaxChars) {
		s.mcp.AddTool(t, s.handler(t.Name))
	}
	return s
}

const instructions = "agentctx keeps the tool results of an agent whole in a workspace and replaces large ones in the conversation " +
	"by a <knowledge_list> entry naming an artifact id (tool_result_<tool_call_id>). Read them back with these tools: " +
	"get_knowledge_by_id, get_knowledge_by_lines and grep_knowledge for one artifact, grep_session_knowledge across the session, " +
	"get_tool_result_offload_info and query_artifacts to list what is stored."

// MCP returns the underlying server of the official Go SDK, to run it over
// any transport or add features.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Run serves one client over t (for example &mcp.StdioTransport{}) until
// the client disconnects or ctx is done.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error { return s.mcp.Run(ctx, t) }

// Handler returns an http.Handler serving the streamable HTTP transport.
// Requests that arrive on a loopback address with a Host that is not a
// loopback name are refused (DNS rebinding protection).
func (s *Server) Handler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{Logger: s.log})
}

// Tools returns the MCP definitions of the read-back tools: the workspace
// tools (workspace.Tools) with their descriptions stating the page cap of
// maxChars characters (0 means DefaultMaxChars), each marked read-only and
// carrying _meta {"anthropic/alwaysLoad": true}.
func Tools(maxChars int) []*mcp.Tool {
	if maxChars <= 0 {
		maxChars = DefaultMaxChars
	}
	defs := workspace.New(nil, workspace.Options{MaxChars: maxChars}).Tools()
	out := make([]*mcp.Tool, len(defs))
	closed := false
	for i, d := range defs {
		out[i] = &mcp.Tool{
			Meta:        mcp.Meta{MetaAlwaysLoad: true},
			Name:        d.Name,
			Description: d.Description,
			InputSchema: d.InputSchema,
			Annotations: &mcp.ToolAnnotations{
				Title:          title(d.Name),
				ReadOnlyHint:   true,
				IdempotentHint: true,
				OpenWorldHint:  &closed,
			},
		}
	}
	return out
}

func title(name string) string {
	w := strings.Split(name, "_")
	w[0] = strings.ToUpper(w[0][:1]) + w[0][1:]
	return strings.Join(w, " ")
}

func (s *Server) handler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		text, err := s.Call(ctx, name, req.Params.Arguments)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err // the client went away: a protocol error
			}
			s.log.LogAttrs(ctx, slog.LevelDebug, "mcp tool call failed", slog.String("tool", name), slog.String("error", err.Error()))
		} else {
			s.log.LogAttrs(ctx, slog.LevelDebug, "mcp tool call", slog.String("tool", name), slog.Int("chars", utf8.RuneCountInString(text)))
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: err != nil}, nil
	}
}

// Call runs a read-back tool as the server does for a client, and returns
// one page: at most MaxChars characters and MaxTokens tokens, with a
// notice saying how to read on when the read is longer. Errors are as
// workspace.Workspace.Execute returns them, with the text for the model.
func (s *Server) Call(ctx context.Context, name string, args json.RawMessage) (string, error) {
	limit := s.opts.MaxChars
	for range 8 {
		ws := workspace.New(s.store, workspace.Options{Namespace: s.opts.Namespace, SessionID: s.opts.SessionID, MaxChars: limit})
		text, err := ws.Execute(ctx, name, args)
		if err != nil {
			return text, err
		}
		n := s.opts.Counter.Count(text)
		if n <= s.opts.MaxTokens {
			return text, nil
		}
		// Too many tokens for its characters (dense data, CJK text): shrink
		// the character cap in proportion, with a margin, and read again.
		chars := utf8.RuneCountInString(text)
		next := int(float64(chars) * float64(s.opts.MaxTokens) / float64(n) * 0.9)
		if next >= limit {
			next = limit - limit/10
		}
		if next < 500 {
			next = 500
		}
		limit = next
	}
	return "", errors.New("mcpserver: cannot fit a page under the token cap") // not reached for sane caps
}

// HandlerFor returns a streamable HTTP handler that serves each request
// with the Server of its own namespace: namespace(r) names it (ok false
// refuses the request with 403, nothing read), and the Server is made on
// first use over store with opts (whose Namespace it replaces). A shared
// proxy isolating tenants by credentials (proxy.Options.Tenants) serves
// read-back this way, so a client reads only its own tenant's artifacts.
// At most maxServers servers are kept (the least recently made go first);
// 0 means 1,000.
func HandlerFor(store workspace.Store, o Options, namespace func(r *http.Request) (string, bool), maxServers int) http.Handler {
	if maxServers <= 0 {
		maxServers = 1000
	}
	var (
		mu      sync.Mutex
		servers = map[string]*Server{}
		order   []string
	)
	serverOf := func(ns string) *Server {
		mu.Lock()
		defer mu.Unlock()
		if s := servers[ns]; s != nil {
			return s
		}
		so := o
		so.Namespace = ns
		s := New(store, so)
		servers[ns] = s
		order = append(order, ns)
		if len(order) > maxServers {
			delete(servers, order[0])
			order = order[1:]
		}
		return s
	}
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		ns, ok := namespace(r)
		if !ok {
			return nil
		}
		return serverOf(ns).mcp
	}, &mcp.StreamableHTTPOptions{Logger: o.Logger})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := namespace(r); !ok {
			http.Error(w, "agentctx mcp: this server reads a tenant's artifacts: send the credentials of the tenant", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}
