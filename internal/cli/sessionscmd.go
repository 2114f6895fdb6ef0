package cli

import "github.com/spf13/cobra"

func newSessionsCmd(e *env) *cobra.Command {
	return &cobra.Command{Use: "sessions", Short: "List, show, delete and prune stored sessions"}
}
