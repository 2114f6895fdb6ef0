// Command agentctx keeps an LLM agent's conversation inside its context
// window: it counts, offloads, prunes and compacts transcripts. Run
// "agentctx help" for the commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/agentctx/agentctx/internal/cli"
)

func main() {
	// A short-lived process: trade memory for fewer collections while a
	// transcript is parsed (the library itself never changes GC settings).
	debug.SetGCPercent(400)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, ErrIsTerminal: isTerminal(os.Stderr)})
	stop()
	os.Exit(code)
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
