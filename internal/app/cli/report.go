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
open it), readable by the user only (mode 0600: it quotes the session).

A transcript of a session that ran through agentctx records the usage of
the requests as agentctx edited them: replayed, it tells neither what the
session did nor what it billed. report recognises such a session by the
ledger the proxy keeps (--ledger: its entries under the transcript's
session id) or by agentctx's marks in it (references, placeholders,
summaries, read-backs), and then reports the ledger's figures (requests,
compactions, bill, bill without agentctx, saving, a line per request
billed); when the ledger holds nothing of it, a warning line (on stderr
and in the table) says the figures are not the session's.`

func newReportCmd(e *env) *cobra.Command {
	f := &prepareFlags{}
	var (
		htmlOut, session, proxyURL, token, pricesFile, ledger string
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
				m, err := e.findManaged(cmd.Context(), e.s.Err, "report", ledger, doc)
				if err != nil {
					return err
				}
				r, err := proxy.ReplayReport(cmd.Context(), filepath.Base(args[0]), doc, replay.Options{Options: base, Prices: prices})
				if err != nil {
					return err
				}
				m.ApplyToReport(r)
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
	cmd.Flags().StringVar(&ledger, "ledger", "", ledgerFlagHelp+"the project's workspace, as agentctx proxy keeps it)")
	return cmd
}
