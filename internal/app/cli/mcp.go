package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/mcpserver"
	"github.com/agentctx/agentctx/workspace"

	"github.com/agentctx/agentctx/internal/base/httpguard"
)

func newMCPCmd(e *env) *cobra.Command {
	f := &wsFlags{}
	var session, addr, token string
	var maxChars, maxTokens int
	cmd := &cobra.Command{
		Use:         "mcp",
		Annotations: map[string]string{longRunningKey: "true"},
		Short:       "Serve the workspace read-back tools over MCP (stdio, or streamable HTTP with --http)",
		Long: `mcp serves the tools that read offloaded tool results back
(get_knowledge_by_id, get_knowledge_by_lines, grep_knowledge,
grep_session_knowledge, query_artifacts, get_tool_result_offload_info) over
the Model Context Protocol: on stdin/stdout by default, or as a streamable
HTTP endpoint at --http ADDR.

A tool reads any artifact of the namespace by the id the model was given,
whichever session stored it (the proxy's, prepare --session's), and nothing
of another namespace; the listings and grep_session_knowledge cover every
session unless --session, or a call's session_id, names one. With
--session, a plain id that two sessions' results share (tool_result_call_0,
tool_result_call_0-2) reads that session's own.

Without --workspace it serves the project's workspace, the one agentctx
proxy, claude and codex write when run in the same directory.

Every tool carries _meta {"anthropic/alwaysLoad": true}, so Claude Code loads
it up front, and every result is one page under --max-chars characters and
--max-tokens tokens, with a notice saying how to read on.

  claude mcp add agentctx -- agentctx mcp --workspace DIR

agentctx proxy serves the same tools at /mcp on its own port.

The server runs until stdin ends (exit 0) or until SIGINT (Ctrl-C) or
SIGTERM (exit 130).`,
		Example: `  claude mcp add agentctx -- agentctx mcp --workspace "$PWD/.agentctx"
  agentctx mcp --workspace .agentctx --session s1
  agentctx mcp --http 127.0.0.1:8790`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if maxChars < 0 || maxTokens < 0 {
				return usagef("--max-chars and --max-tokens must be 0 (the default) or more")
			}
			// A directory workspace that does not exist yet is read as it
			// fills; a SQLite one is created, so that the server sees what
			// an agent stores later.
			ws, closeStore, err := f.open(cmd.Context(), e, isSQLitePath(f.path), workspace.Options{})
			if err != nil {
				return err
			}
			defer closeStore()
			srv := mcpserver.New(ws.Store(), mcpserver.Options{
				Namespace: f.namespace, SessionID: session, MaxChars: maxChars, MaxTokens: maxTokens,
				Version: agentctx.Version, Logger: e.logger,
			})
			if addr == "" {
				return serveStdio(cmd.Context(), srv, e.s.In, e.s.Out)
			}
			if token == "" {
				token = os.Getenv(tokenEnv)
			}
			return serveHTTP(cmd.Context(), srv, addr, token, e.s.Err)
		},
	}
	cmd.Flags().StringVar(&f.path, "workspace", "", projectWorkspaceHelp)
	cmd.Flags().StringVar(&f.store, "store", "", storeFlagHelp)
	cmd.Flags().StringVar(&f.namespace, "namespace", workspace.DefaultNamespace, "namespace inside the workspace")
	cmd.Flags().StringVar(&session, "session", "", "session the listings and session-wide search cover by default (default: every session)")
	cmd.Flags().StringVar(&addr, "http", "", "serve streamable HTTP at this address (host:port; a missing host is 127.0.0.1) instead of stdio")
	cmd.Flags().StringVar(&token, "token", "", "with --http: the token every request must carry (X-Agentctx-Token or Authorization: Bearer; default $"+tokenEnv+"); required on a non-loopback address, and without it only requests to a loopback name are answered")
	cmd.Flags().IntVar(&maxChars, "max-chars", mcpserver.DefaultMaxChars, "characters per page")
	cmd.Flags().IntVar(&maxTokens, "max-tokens", mcpserver.DefaultMaxTokens, "o200k_base tokens per page")
	return cmd
}

// tokenEnv names the environment variable that gives --token its default.
const tokenEnv = "AGENTCTX_TOKEN"

// serveStdio serves one client on in/out until in ends or ctx is done.
func serveStdio(ctx context.Context, srv *mcpserver.Server, in io.Reader, out io.Writer) error {
	err := srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}})
	if ctx.Err() != nil {
		return ctx.Err() // stopped by a signal: exit 130
	}
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) {
		return nil // the client closed stdin
	}
	return fmt.Errorf("mcp: %w", err)
}

// serveHTTP serves streamable HTTP at addr until ctx is done, and says
// where on stderr.
func serveHTTP(ctx context.Context, srv *mcpserver.Server, addr, token string, stderr io.Writer) error {
	addr, err := httpguard.ListenAddr(addr, token)
	if err != nil {
		return usagef("--http: %v", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return listenError("--http", addr, err)
	}
	hs := &http.Server{Handler: httpguard.Wrap(srv.Handler(), token), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stderr, "agentctx mcp: serving streamable HTTP at http://%s/\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("mcp: %w", err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
		return ctx.Err() // stopped by a signal: exit 130
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
