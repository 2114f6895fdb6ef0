package cli

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentctx/agentctx/launch"
	"github.com/agentctx/agentctx/proxy"
)

// ownsSignalsKey is the annotation of the commands that run a client in
// the foreground and forward it the process's signals (see
// Traits.OwnsSignals).
const ownsSignalsKey = "agentctx_owns_signals"

// longRunningKey is the annotation of the commands that serve until
// stopped (see Traits.ShortLived).
const longRunningKey = "agentctx_long_running"

// Traits are what the process must know of a command line before Run
// runs it.
type Traits struct {
	// OwnsSignals is set when it runs a client in the foreground (agentctx
	// claude, agentctx codex). Its process must then not stop on SIGINT,
	// which the terminal delivers to the client as well (Ctrl-C belongs
	// to the client, which may only clear its input line), and must pass
	// SIGINT, SIGTERM and SIGHUP to Run in Streams.Signals instead of
	// cancelling its context: the command forwards them and returns the
	// client's exit code.
	OwnsSignals bool
	// ShortLived is set when it runs a command that ends once its input
	// is done (count, offload, prepare...), which may trade memory for
	// fewer garbage collections, rather than one that serves until
	// stopped (proxy, mcp, claude, codex: a proxy and its sessions live
	// for hours, and a collector that lets the heap grow to five times
	// what is live would multiply every memory bound it keeps). Unknown
	// commands are short-lived.
	ShortLived bool
}

// TraitsOf returns the Traits of the command line args.
func TraitsOf(args []string) Traits {
	root := newRoot(&env{s: &Streams{}})
	cmd, _, err := root.Find(args)
	if err != nil {
		return Traits{ShortLived: true}
	}
	return Traits{OwnsSignals: cmd.Annotations[ownsSignalsKey] != "", ShortLived: cmd.Annotations[longRunningKey] == ""}
}

// clientExit is the exit code of a client that did not end with 0: Run
// returns it as its own, printing nothing (the client said why).
type clientExit struct{ code int }

func (e *clientExit) Error() string { return fmt.Sprintf("the client exited with code %d", e.code) }

// launchFlags are the flags of a launch command: every flag of proxy,
// and its own.
type launchFlags struct {
	p        proxyFlags
	proxyURL string
	logFile  string
}

func newLaunchCmd(e *env, client launch.Client) *cobra.Command {
	lf := &launchFlags{}
	long, example := launchHelp(client)
	name, _ := launchClientNames(client)
	cmd := &cobra.Command{
		Use:                string(client) + " [flags] [--] [" + string(client) + " arguments...]",
		Short:              "Run " + name + " through an agentctx proxy, with the read-back tools",
		Long:               long,
		Example:            example,
		DisableFlagParsing: true, // the client's own flags pass through
		Annotations:        map[string]string{ownsSignalsKey: "true", longRunningKey: "true"},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLaunch(cmd, e, client, lf, args)
		},
	}
	lf.p.register(cmd, "127.0.0.1:0")
	fs := cmd.Flags()
	fs.StringVar(&lf.proxyURL, "proxy", "", "use the running proxy at this base URL (it must answer GET /agentctx/stats) instead of starting one; the proxy flags are then unused")
	fs.StringVar(&lf.logFile, "log", "", "append the proxy's log to this file (default: no log, or stderr with -v)")
	return cmd
}

// launchClientNames returns the client's name for people and what the
// launch gives it.
func launchClientNames(client launch.Client) (name, other string) {
	switch client {
	case launch.Codex:
		return "Codex", "-c overrides: a model provider \"agentctx\" at the proxy (Responses\nAPI; the key from OPENAI_API_KEY when set, else Codex's login) selected as\nmodel_provider, and the MCP server \"agentctx\" at the proxy's /mcp"
	case launch.Gemini:
		return "Gemini CLI", "GOOGLE_GEMINI_BASE_URL (the Gemini API, with the API key auth:\nGEMINI_API_KEY; a Google login talks to Code Assist, which the proxy does not\nserve). The proxy bills and logs its requests and does not edit them yet, so no\nread-back MCP server is registered"
	}
	return "Claude Code", "ANTHROPIC_BASE_URL and --mcp-config FILE (a temporary file;\nthe user's own configuration is never written), with --allowedTools\nmcp__agentctx so that the read-back tools need no approval"
}

// launchHelp returns the long help and the examples of a launch command.
func launchHelp(client launch.Client) (long, example string) {
	name, other := launchClientNames(client)
	example = `  agentctx claude
  agentctx claude --limit 150000 -- --model opus
  agentctx claude -p "fix the failing test"
  agentctx claude --proxy http://127.0.0.1:8787 -- --resume`
	switch client {
	case launch.Codex:
		example = `  agentctx codex
  agentctx codex exec "fix the failing test"
  agentctx codex --limit 150000 -- --model gpt-5.5`
	case launch.Gemini:
		example = `  agentctx gemini
  agentctx gemini -p "fix the failing test"
  agentctx gemini --upstream-gemini http://127.0.0.1:9000 -- -m gemini-2.5-pro`
	}
	mcp := " and the proxy's read-back MCP server\nregistered for this run"
	if client == launch.Gemini {
		mcp = ""
	}
	long = string(client) + ` starts an agentctx proxy on a free loopback port (or, with --proxy
URL, uses the running proxy that answers there), runs ` + name + ` with
its model requests going through it` + mcp + `, and stops the proxy when the client exits. The
exit code is the client's. When the client exits, a line on stderr says
what the proxy forwarded and billed: "33 requests, 3 compactions, $0.86
instead of $1.76" (the bill and its estimate without agentctx; agentctx
savings reads them back later).

` + name + ` gets ` + other + `.

Arguments: agentctx's flags (every flag of agentctx proxy) come first;
the first argument that is not one of them, or everything after "--",
goes to ` + string(client) + ` unchanged (` + "`agentctx " + string(client) + ` -- --help` + "`" + ` for its help).

Ctrl-C reaches the client from the terminal, and agentctx keeps running
until the client exits. SIGTERM and SIGHUP sent to agentctx are forwarded
to the client (SIGINT too when stdin is not a terminal).

The proxy's log goes to --log FILE (with -v: to stderr, in detail);
otherwise it is not written, so that it never mixes with the client's
screen. Its statistics are at URL/agentctx/stats while it runs.`
	return long, example
}

// runLaunch runs a launch command: agentctx's flags parsed from args, a
// proxy started (unless --proxy), the client run through it.
func runLaunch(cmd *cobra.Command, e *env, client launch.Client, lf *launchFlags, args []string) error {
	fs := cmd.Flags()
	cmd.InheritedFlags() // merges -v and the other root flags into fs
	ours, theirs, err := splitLaunchArgs(fs, args)
	if err != nil {
		return &usageError{err}
	}
	if err := fs.Parse(ours); err != nil {
		return &usageError{err}
	}
	if help, _ := fs.GetBool("help"); help {
		return cmd.Help()
	}
	verbose, _ := fs.GetBool("verbose")
	// The client first: no proxy is started for a client that is not
	// installed.
	path, err := launch.LookPath(client)
	if err != nil {
		return err
	}
	o := launch.Options{
		Client: client, Command: []string{path}, Args: theirs, ProxyURL: lf.proxyURL,
		Stdin: e.s.In, Stdout: e.s.Out, Stderr: e.s.Err,
		Signals: forwarded(e.s.Signals, e.s.InIsTerminal),
	}
	log, closeLog, err := launchLogger(lf.logFile, verbose, e.s.Err)
	if err != nil {
		return err
	}
	defer closeLog()
	o.Logger = log
	p := &lf.p
	if lf.proxyURL != "" {
		o.Token = p.token
		if o.Token == "" {
			o.Token = os.Getenv(tokenEnv)
		}
	} else {
		srv, closeAll, err := p.server(cmd, e, log)
		if err != nil {
			return err
		}
		defer closeAll()
		ln, err := p.listenTCP()
		if err != nil {
			return err
		}
		o.Server, o.Listener, o.Token = srv, ln, p.token
		o.ReadDirs = p.readDirs()
		fmt.Fprintf(e.s.Err, "agentctx: %s through a proxy at %s (dashboard: %s%s)\n", client, localURL(ln.Addr()), localURL(ln.Addr()), proxy.DashboardPath)
	}
	code, err := launch.Run(cmd.Context(), o)
	if srv, ok := o.Server.(*proxy.Server); ok && err == nil {
		fmt.Fprintf(e.s.Err, "agentctx: %s\n", launchSummary(srv.TotalSinceStart(), srv.Stats()))
	}
	switch {
	case err != nil: // launch.ErrClientNotFound, ErrProxyUnavailable: bad usage (ExitCode)
		return err
	case code != 0:
		return &clientExit{code}
	}
	return nil
}

// launchLogger returns the proxy's logger: to --log FILE (appended; debug
// with -v), else to stderr with -v, else none. Close the file with the
// function returned.
func launchLogger(logFile string, verbose bool, stderr io.Writer) (*slog.Logger, func(), error) {
	switch {
	case logFile != "":
		f, err := os.OpenFile(logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, &fileError{prefix: "--log", err: err}
		}
		level := slog.LevelInfo
		if verbose {
			level = slog.LevelDebug
		}
		return slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: level})), func() { f.Close() }, nil
	case verbose:
		return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug})), func() {}, nil
	}
	return slog.New(slog.DiscardHandler), func() {}, nil
}

// splitLaunchArgs splits the arguments of a launch command into agentctx's
// flags (with their values) and the client's arguments: the first argument
// that is not a flag of fs, or everything after "--".
func splitLaunchArgs(fs *pflag.FlagSet, args []string) (ours, theirs []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return ours, args[i+1:], nil
		}
		if len(a) < 2 || a[0] != '-' {
			return ours, args[i:], nil
		}
		var f *pflag.Flag
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "--") {
			f = fs.Lookup(name)
		} else if len(name) == 1 {
			f = fs.ShorthandLookup(name)
		}
		if f == nil {
			return ours, args[i:], nil // the client's first flag
		}
		ours = append(ours, a)
		if !hasValue && f.NoOptDefVal == "" {
			if i+1 == len(args) {
				return nil, nil, fmt.Errorf("flag needs an argument: %s", a)
			}
			i++
			ours = append(ours, args[i])
		}
	}
	return ours, nil, nil
}

// forwarded is the signals to forward to the client, from those the
// process received: SIGINT only when stdin is not a terminal (on a
// terminal, Ctrl-C reaches the client directly; a second copy would count
// as a second Ctrl-C).
func forwarded(in <-chan os.Signal, stdinIsTerminal bool) <-chan os.Signal {
	if in == nil {
		return nil
	}
	out := make(chan os.Signal, 4)
	go func() {
		for s := range in {
			if s == os.Interrupt || s == syscall.SIGINT {
				if stdinIsTerminal {
					continue
				}
			}
			select {
			case out <- s:
			default: // the client is not taking them: drop, never block
			}
		}
		close(out)
	}()
	return out
}

// readDirs returns the directories of the proxy's workspace and offload
// files, absolute, that exist: outside the project by default
// (projectws), where the client reads the references' files back.
func (p *proxyFlags) readDirs() []string {
	var dirs []string
	for _, d := range []string{p.f.workspace, p.f.dir} {
		if d == "" || p.f.store != "" && d == p.f.workspace {
			continue
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(abs); err == nil && fi.IsDir() && !slices.Contains(dirs, abs) {
			dirs = append(dirs, abs)
		}
	}
	return dirs
}
