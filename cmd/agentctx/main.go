// Command agentctx keeps an LLM agent's conversation inside its context
// window: it counts, offloads, prunes and compacts transcripts. Run
// "agentctx help" for the commands.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/agentctx/agentctx/internal/app/cli"
)

// grace is how long a command may take to stop after the first Ctrl-C
// before the process exits anyway. Every step checks its context, so this
// only bounds a step that cannot be interrupted (a write already started
// finishes; a temp file left behind is removed by the next run).
const grace = 3 * time.Second

func main() {
	// A short-lived command trades memory for fewer collections while a
	// transcript is parsed; one that serves (proxy, mcp, claude, codex)
	// keeps Go's default, so that its memory stays about twice what its
	// bounds let it keep. GOGC, when set, is the user's: never overridden.
	// (The library itself never changes GC settings.)
	traits := cli.TraitsOf(os.Args[1:])
	if _, set := os.LookupEnv("GOGC"); !set && traits.ShortLived {
		debug.SetGCPercent(400)
	}
	streams := cli.Streams{
		In:            os.Stdin,
		Out:           os.Stdout,
		Err:           os.Stderr,
		InIsTerminal:  isTerminal(os.Stdin),
		OutIsTerminal: isTerminal(os.Stdout),
		ErrIsTerminal: isTerminal(os.Stderr),
		LookupEnv:     os.LookupEnv,
	}
	if traits.OwnsSignals {
		// agentctx claude, agentctx codex: the client decides what
		// Ctrl-C does; the command forwards the signals it must and
		// returns the client's exit code.
		sigs := make(chan os.Signal, 4)
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		streams.Signals = sigs
		os.Exit(cli.Run(context.Background(), os.Args[1:], streams))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		// From now on a second Ctrl-C kills the process at once.
		stop()
		time.Sleep(grace)
		fmt.Fprintln(os.Stderr, "agentctx: interrupted")
		os.Exit(cli.ExitInterrupted)
	}()
	code := cli.Run(ctx, os.Args[1:], streams)
	stop()
	os.Exit(code)
}

// isTerminal reports whether f is a terminal (not merely a character
// device such as /dev/null).
func isTerminal(f *os.File) bool {
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}
