package cli

import (
	"github.com/spf13/cobra"

	"github.com/agentctx/agentctx/mcpserver"
	"github.com/agentctx/agentctx/workspace"
)

func newToolsCmd(e *env) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "Print the read-back tool definitions (anthropic, openai or mcp shape)",
		Long: `tools prints, as a JSON array, the definitions of the tools that read
offloaded tool results back, in the shape of the Anthropic Messages API
(--format anthropic, the default: {name, description, input_schema}), of
OpenAI Chat Completions (--format openai: {type, function}) or of MCP
(--format mcp: {name, description, inputSchema, annotations, _meta}).
The names are the same everywhere: in the library (workspace.Tools), in
agentctx mcp and here.`,
		Example: `  agentctx tools
  agentctx tools --format openai | jq '.[].function.name'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch format {
			case "anthropic":
				return e.writeJSON(cmd.Context(), workspace.Tools())
			case "openai":
				defs := workspace.Tools()
				out := make([]workspace.OpenAITool, len(defs))
				for i, d := range defs {
					out[i] = d.OpenAI()
				}
				return e.writeJSON(cmd.Context(), out)
			case "mcp":
				return e.writeJSON(cmd.Context(), mcpserver.Tools(0))
			}
			return usagef("--format %q: want anthropic, openai or mcp", format)
		},
	}
	cmd.Flags().StringVar(&format, "format", "anthropic", "anthropic, openai or mcp")
	return cmd
}
