package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// --dir says the same thing everywhere (issue 48: each command said
// something else): one help where the pipeline's flags are shared, and
// "directory of ..." in every command.
func TestDirHelpSaysTheSameThing(t *testing.T) {
	helps := map[string]string{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if f := c.Flags().Lookup("dir"); f != nil {
			helps[c.CommandPath()] = f.Usage
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot(&env{s: &Streams{}}))
	if len(helps) < 5 {
		t.Fatalf("--dir found in %d commands: %v", len(helps), helps)
	}
	for cmd, h := range helps {
		if !strings.HasPrefix(h, "directory of ") {
			t.Errorf("%s --dir: %q, want \"directory of ...\"", cmd, h)
		}
	}
	for _, cmd := range []string{"agentctx proxy", "agentctx claude", "agentctx codex"} {
		if helps[cmd] != helps["agentctx prepare"] {
			t.Errorf("%s --dir: %q, prepare's %q", cmd, helps[cmd], helps["agentctx prepare"])
		}
	}
}
