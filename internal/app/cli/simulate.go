package cli

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctx/agentctx/proxy"
)

// SimulatedProxy returns the proxy that `agentctx proxy ARGS` serves,
// with its clocks (the engine's, the pipeline's and the statistics') all
// reading now: what a simulation that replays a recorded session needs
// (bench/cmd/costsim's replay), so that what it measures is the command's
// own wiring of flags, stores and summarizers. The flags are those of
// the command line only: no environment and no configuration file are
// read, --listen is ignored (the caller serves the handler) and
// --clock-speed may not be given. after runs a function later on the
// clock now (the keep-warm requests' timers: proxy.Options.AfterFunc);
// nil runs it on the wall clock. Its log goes to logw, with debug detail
// when args give -v (--verbose, a root flag of the command line).
// closeAll releases what it opened (stores, the server).
func SimulatedProxy(ctx context.Context, args []string, now func() time.Time, after func(time.Duration, func()) func() bool, logw io.Writer) (srv *proxy.Server, closeAll func(), err error) {
	var p proxyFlags
	cmd := &cobra.Command{Use: "proxy", Args: cobra.NoArgs}
	p.register(cmd, "127.0.0.1:0")
	verbose := cmd.Flags().BoolP("verbose", "v", false, "log debug detail")
	if err := cmd.ParseFlags(args); err != nil {
		return nil, nil, usagef("%v", err)
	}
	if cmd.Flags().Changed("clock-speed") {
		return nil, nil, usagef("--clock-speed cannot be used in a simulation: its clock is the caller's")
	}
	cmd.SetContext(ctx)
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: level}))
	e := &env{s: &Streams{Out: io.Discard, Err: logw}, logger: log}
	p.now, p.after = now, after
	if after == nil {
		p.after = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	return p.server(cmd, e, log)
}
