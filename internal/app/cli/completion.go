package cli

import (
	"github.com/spf13/cobra"
)

// newCompletionCmd prints a shell completion script for root.
func newCompletionCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print a shell completion script",
		Long: `completion prints the script that lets your shell complete agentctx
commands, flags and file names. Load it once per session, or install it:

  bash  source <(agentctx completion bash)
        agentctx completion bash > ~/.local/share/bash-completion/completions/agentctx
  zsh   agentctx completion zsh > "${fpath[1]}/_agentctx"
  fish  agentctx completion fish > ~/.config/fish/completions/agentctx.fish

The bash script needs the bash-completion package (Debian and Ubuntu:
apt-get install bash-completion; macOS: brew install bash-completion@2),
loaded by your ~/.bashrc; zsh needs compinit (autoload -U compinit;
compinit) before the script is loaded.`,
		Example:   `  source <(agentctx completion bash)`,
		ValidArgs: []string{"bash", "zsh", "fish"},
		Args:      wrapArgs(cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs)),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(out, true)
			case "zsh":
				return root.GenZshCompletion(out)
			default:
				return root.GenFishCompletion(out, true)
			}
		},
	}
}
