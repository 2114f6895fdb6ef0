package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentctx/agentctx/internal/base/fsutil"
	"github.com/agentctx/agentctx/pipeline/replay"
	"github.com/agentctx/agentctx/proxy"
)

const reportLong = `report shows, for a recorded session (FILE, replayed as agentctx replay
does, with the pipeline flags of prepare) or a live one (--session ID, read
from a running proxy's statistics), a line per request (tokens the client
sent and forwarded, cache read and written, cost, offload, clearing,
compaction) and what fills the context (system, tools, messages, tool
results kept, references, summary), before and after agentctx for a
transcript.

The table goes to stdout. --html FILE also writes the dashboard's charts
of the same report as one self-contained HTML page (no network needed to
open it), readable by the user only (mode 0600: it quotes the session).`

func newReportCmd(e *env) *cobra.Command {
	f := &prepareFlags{}
	var (
		htmlOut, session, proxyURL, token, pricesFile string
	)
	cmd := &cobra.Command{
		Use:   "report FILE | --session ID",
		Short: "Show where a session's tokens went: its timeline and what fills its context",
		Long:  reportLong,
		Example: `  agentctx report --limit 100000 session.jsonl --html report.html
  agentctx report --session 4f0c... --proxy http://127.0.0.1:8787`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (session == "") == (len(args) == 0) {
				return usagef("report: give a FILE or --session ID (one of them)")
			}
			var rep *proxy.Report
			if session != "" {
				if token == "" {
					token = os.Getenv(tokenEnv)
				}
				r, err := proxy.FetchReport(cmd.Context(), nil, proxyURL, token, session)
				if err != nil {
					if errors.Is(err, proxy.ErrReport) {
						return usagef("%v", err)
					}
					return err
				}
				rep = r
			} else {
				base, err := f.options(e, cmd.Flags().Changed)
				if err != nil {
					return err
				}
				if !cmd.Flags().Changed("whole-history") {
					e.read.WholeHistory = true
				}
				doc, err := e.readConversation(cmd.Context(), "report", args)
				if err != nil {
					return err
				}
				prices, err := readPrices(pricesFile)
				if err != nil {
					return err
				}
				r, err := proxy.ReplayReport(cmd.Context(), filepath.Base(args[0]), doc, replay.Options{Options: base, Prices: prices})
				if err != nil {
					return err
				}
				rep = r
			}
			if htmlOut != "" {
				var b bytes.Buffer
				if err := proxy.WriteReportHTML(&b, rep); err != nil {
					return err
				}
				if err := fsutil.WriteFile(htmlOut, b.Bytes(), fsutil.Options{}); err != nil {
					return fmt.Errorf("--html: %w", err)
				}
			}
			return proxy.WriteReportText(e.s.Out, rep)
		},
	}
	f.register(cmd.Flags(), true)
	cmd.Flags().StringVar(&htmlOut, "html", "", "also write the report as one self-contained HTML page to this file")
	cmd.Flags().StringVar(&session, "session", "", "report a live session of a running proxy (its session key, as in /agentctx/stats)")
	cmd.Flags().StringVar(&proxyURL, "proxy", "http://127.0.0.1:8787", "the running proxy's URL (with --session)")
	cmd.Flags().StringVar(&token, "token", "", "the proxy's token (with --session; default $"+tokenEnv+")")
	cmd.Flags().StringVar(&pricesFile, "prices", "", pricesFlagHelp)
	return cmd
}
