package cli

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentctx/agentctx/internal/app/config"
)

// configState is what the configuration step of a run knows: the --config
// flag and the file it read.
type configState struct {
	flag string
	file *config.File
}

// settle loads the configuration file and settles every flag of cmd that
// the command line left unset: environment, then file (see package
// config). A bad file, an unknown key or a bad value is a usage error
// (config.ErrInvalid, see ExitCode); a file that cannot be read is a
// runtime failure.
func (e *env) settle(cmd *cobra.Command) error {
	path, explicit := config.Path(e.cfg.flag, e.s.LookupEnv)
	f, err := config.Load(path, explicit)
	if err != nil {
		return err
	}
	if err := f.Check(schemaOf(cmd.Root())); err != nil {
		return err
	}
	e.cfg.file = f
	if err := checkValues(cmd, f); err != nil {
		return err
	}
	_, err = config.Settle(cmd.Flags(), config.Options{
		Command:     commandPath(cmd),
		File:        f,
		Env:         envOf,
		LookupEnv:   e.s.LookupEnv,
		SectionOnly: filterFlag,
		Also:        alsoSection(cmd),
	})
	return err
}

// alsoSection returns the sections of the file a command takes what its
// own does not set: the proxy's for claude, codex and gemini, which run one with
// its flags (issue 48: the proxy section did not reach them), but for
// --listen (a standing proxy's address, which their own proxy would
// collide with). Nil for other commands.
func alsoSection(cmd *cobra.Command) func(*pflag.Flag) []string {
	if p := commandPath(cmd); len(p) != 1 || (p[0] != "claude" && p[0] != "codex" && p[0] != "gemini") {
		return nil
	}
	return func(f *pflag.Flag) []string {
		if f.Name == "listen" {
			return nil
		}
		return []string{"proxy"}
	}
}

// checkValues tries the file's values on the flags of every command but
// cmd (which Settle sets for real), so that a bad value fails every
// command, not only those that read it. Those commands do not run.
func checkValues(cmd *cobra.Command, f *config.File) error {
	var err error
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if err != nil {
			return
		}
		if c != cmd {
			_, err = config.Settle(allFlags(c), config.Options{Command: commandPath(c), File: f, SectionOnly: filterFlag, Also: alsoSection(c)})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(cmd.Root())
	return err
}

// allFlags returns every flag of c, its parents' persistent flags
// included, whether or not c was parsed (cobra merges them only then).
func allFlags(c *cobra.Command) *pflag.FlagSet {
	fs := pflag.NewFlagSet(c.Name(), pflag.ContinueOnError)
	fs.AddFlagSet(c.Flags())
	fs.AddFlagSet(c.PersistentFlags())
	fs.AddFlagSet(c.InheritedFlags())
	return fs
}

// filterFlag reports a flag that environment variables and the file's top
// level leave alone (markNoEnv): it is a filter in its command.
func filterFlag(f *pflag.Flag) bool { return f.Annotations[noEnv] != nil }

// hidden are the flags that no file sets and config does not show.
func hidden(name string) bool {
	return name == "config" || name == "help" || name == "version"
}

// commandPath returns the names of cmd below the root.
func commandPath(cmd *cobra.Command) []string {
	var names []string
	for c := cmd; c.HasParent(); c = c.Parent() {
		names = append([]string{c.Name()}, names...)
	}
	return names
}

// schemaOf returns every command of root with its flags: what a
// configuration file may set. The file's own flags (config, help,
// version) are left out.
func schemaOf(root *cobra.Command) config.Schema {
	s := config.Schema{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		var flags []string
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags(), c.InheritedFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				if hidden(f.Name) {
					return
				}
				flags = append(flags, f.Name)
			})
		}
		s[strings.Join(commandPath(c), " ")] = flags
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return s
}

// configReport is the output of agentctx config --json.
type configReport struct {
	// File is the configuration file read, "" when none; Found says
	// whether it exists (a default location may not).
	File     string           `json:"file"`
	Found    bool             `json:"found"`
	Command  string           `json:"command"`  // the command whose settings are shown
	Settings []config.Setting `json:"settings"` // one per flag of the command, in the help's order
}

func newConfigCmd(e *env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "config [COMMAND...]",
		Short: "Show the configuration file and the effective settings, with where each came from",
		Long: `Show the configuration file and the effective settings of a command (by
default the settings every command shares), each with its source: flag,
env (the variable), file (the key) or default. Secrets (database
passwords, tokens, API keys) are masked.

The file is JSON: keys are flag names and apply to every command that has
the flag; a key naming a command holds that command's own settings (which
win), and subcommands nest. Precedence: flag > environment > file >
default. Location: --config, else $` + config.EnvConfig + `, else
$XDG_CONFIG_HOME/agentctx/config.json (~/.config/agentctx/config.json).
An unknown key or a bad value is an error (exit 2) for every command.`,
		Example: `  agentctx config
  agentctx config proxy
  agentctx config --json sessions prune
  echo '{"workspace": "/data/ws", "proxy": {"listen": ":9000"}}' > ~/.config/agentctx/config.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			target, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 || (len(args) > 0 && target == root) {
				return usagef("config: unknown command %q", strings.Join(args, " "))
			}
			rep := configReport{Command: strings.Join(commandPath(target), " ")}
			if f := e.cfg.file; f != nil {
				rep.File, rep.Found = f.Path, f.Path != ""
			}
			if rep.File == "" {
				rep.File, _ = config.Path(e.cfg.flag, e.s.LookupEnv)
			}
			if len(args) == 0 {
				// The settings every command shares: the flags of the
				// environment variables, as the first command with each
				// settles them.
				rep.Command = ""
				rep.Settings, err = e.sharedSettings(root)
			} else {
				rep.Settings, err = config.Settle(allFlags(target), config.Options{
					Command: commandPath(target), File: e.cfg.file, Env: envOf, LookupEnv: e.s.LookupEnv, SectionOnly: filterFlag,
					Also: alsoSection(target),
				})
			}
			if err != nil {
				return err
			}
			rep.Settings = slices.DeleteFunc(rep.Settings, func(s config.Setting) bool { return hidden(s.Name) })
			if asJSON {
				return e.writeJSON(cmd.Context(), rep)
			}
			return writeConfig(e, rep)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// sharedSettings settles, for each flag an environment variable sets, the
// first command of root that has it, and returns those settings in the
// variables' order.
func (e *env) sharedSettings(root *cobra.Command) ([]config.Setting, error) {
	var out []config.Setting
	for _, ev := range envFlags() {
		c := firstWithFlag(root, ev.flag)
		if c == nil {
			continue
		}
		fs := pflag.NewFlagSet(c.Name(), pflag.ContinueOnError)
		fs.AddFlag(c.Flags().Lookup(ev.flag))
		settings, err := config.Settle(fs, config.Options{
			Command: commandPath(c), File: e.cfg.file, Env: envOf, LookupEnv: e.s.LookupEnv, SectionOnly: filterFlag,
		})
		if err != nil {
			return nil, err
		}
		if len(settings) == 1 && settings[0].Source == config.SourceDefault {
			// The first command's default may not be every command's
			// (summarizer: extractive for prepare, upstream for the
			// proxy): show the most common one and the exceptions.
			if common, except := commonDefault(root, ev.flag); except != "" {
				settings[0].Value, settings[0].Origin = config.Mask(ev.flag, common), "except "+except
			}
		}
		out = append(out, settings...)
	}
	return out, nil
}

// commonDefault returns the default most commands of root that take the
// flag give it (environment variables apply to them), and the others as
// "command: value, ..." ("" when all agree).
func commonDefault(root *cobra.Command, name string) (string, string) {
	byCmd := map[string]string{}
	count := map[string]int{}
	var order []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if f := c.Flags().Lookup(name); f != nil && f.Annotations[noEnv] == nil && c.HasParent() {
			path := strings.Join(commandPath(c), " ")
			byCmd[path] = f.DefValue
			count[f.DefValue]++
			order = append(order, path)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	common := ""
	for _, p := range order {
		if v := byCmd[p]; count[v] > count[common] || (count[v] == count[common] && v < common) {
			common = v
		}
	}
	var except []string
	for _, p := range order {
		if v := byCmd[p]; v != common {
			except = append(except, p+": "+quote(config.Mask(name, v)))
		}
	}
	return common, strings.Join(except, ", ")
}

func firstWithFlag(c *cobra.Command, name string) *cobra.Command {
	if f := c.Flags().Lookup(name); f != nil && f.Annotations[noEnv] == nil && c.HasParent() {
		return c
	}
	for _, sub := range c.Commands() {
		if found := firstWithFlag(sub, name); found != nil {
			return found
		}
	}
	return nil
}

func writeConfig(e *env, rep configReport) error {
	w := e.s.Out
	switch {
	case rep.File == "":
		fmt.Fprintln(w, "# no configuration file (no $HOME to find it in)")
	case rep.Found:
		fmt.Fprintf(w, "# configuration file: %s\n", rep.File)
	default:
		fmt.Fprintf(w, "# configuration file: %s (absent)\n", rep.File)
	}
	if rep.Command != "" {
		fmt.Fprintf(w, "# settings of %s\n", rep.Command)
	}
	width := 0
	for _, s := range rep.Settings {
		width = max(width, len(s.Name))
	}
	for _, s := range rep.Settings {
		src := string(s.Source)
		if s.Origin != "" {
			src += " " + s.Origin
		}
		fmt.Fprintf(w, "%-*s = %s  (%s)\n", width, s.Name, quote(s.Value), src)
	}
	return nil
}

// quote writes a value as a JSON string, without the HTML escapes
// (a URL's & stays &).
func quote(v string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}
