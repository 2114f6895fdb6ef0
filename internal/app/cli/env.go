package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// envFlags are the environment variables that give defaults to common
// flags, in the order help lists them. A variable applies to every command
// that has the flag, unless the flag is marked with noEnv (where the flag
// means something else, such as a filter).
func envFlags() []envVar {
	return []envVar{
		{"AGENTCTX_WORKSPACE", "workspace", "workspace directory or SQLite file"},
		{"AGENTCTX_STORE", "store", "session store"},
		{"AGENTCTX_NAMESPACE", "namespace", "namespace inside the workspace"},
		{"AGENTCTX_SESSION", "session", "session id"},
		{"AGENTCTX_DIR", "dir", "directory of archives and offloaded files"},
		{"AGENTCTX_LIMIT", "limit", "context window, in tokens"},
		{"AGENTCTX_ENCODING", "encoding", "tokenizer"},
		{"AGENTCTX_SUMMARIZER", "summarizer", "extractive, anthropic or openai"},
		{"AGENTCTX_MODEL", "model", "summarizer model"},
		{"AGENTCTX_RETAIN_AGE", "retain-age", "retention: sessions idle and artifacts older than this are pruned"},
		{"AGENTCTX_RETAIN_SIZE", "retain-size", "retention: the store is pruned down to this size"},
		{tokenEnv, "token", "the token of the proxy's statistics and MCP endpoints"},
	}
}

// envVar is an environment variable, the flag it gives a default to, and
// what it is, for help.
type envVar struct{ name, flag, what string }

// noEnv is the flag annotation that keeps environment variables off a
// flag.
const noEnv = "agentctx_noenv"

// markNoEnv keeps environment variables off the named flags of cmd.
func markNoEnv(cmd *cobra.Command, names ...string) {
	for _, n := range names {
		cmd.Flags().SetAnnotation(n, noEnv, []string{"true"})
	}
}

func envFlag(f *pflag.Flag) (string, bool) {
	if f == nil || f.Annotations[noEnv] != nil {
		return "", false
	}
	for _, ef := range envFlags() {
		if ef.flag == f.Name {
			return ef.name, true
		}
	}
	return "", false
}

// envOf returns the environment variable that gives a flag its default,
// "" for none.
func envOf(f *pflag.Flag) string {
	name, _ := envFlag(f)
	return name
}

// envHelp lists the environment variables for the root help: those whose
// flag some command of root has.
func envHelp(root *cobra.Command) string {
	have := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) { have[f.Name] = true })
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	var b strings.Builder
	for _, ef := range envFlags() {
		if have[ef.flag] {
			fmt.Fprintf(&b, "  %-20s --%s: %s\n", ef.name, ef.flag, ef.what)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// documentEnv adds "(env NAME)" to the help of every flag an environment
// variable sets.
func documentEnv(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				if name, ok := envFlag(f); ok && !strings.Contains(f.Usage, "$"+name) {
					f.Usage += " ($" + name + ")"
				}
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
