package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/pipeline/replay"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/session"
)

const replayLong = `replay takes a recorded session (a Claude Code .jsonl) and replays it the
way an agent using agentctx would have run: prepare is called once before
each model request (each assistant message), with the history up to that
request, and the usage the session recorded for the request is fed back
afterwards, so later estimates are calibrated as they would be live.

It prints JSON: requests, compactions, cache_breaks (requests whose
prepared messages do not start with the previous request's, byte for
byte), prefix_stable_ratio (the share of the previous request a provider's
prompt cache could still serve, averaged), count_error (|estimate − usage|
/ usage for the requests after the first: median_pct, p95_pct, n), the
time of one prepare call (median_ms, max_ms), money (cost_without_usd:
the session's bill as recorded, its usage at list prices; cost_usd: the
estimated bill of the prepared requests, the recorded bill plus the
difference of two simulated prompt caches, one fed the prepared requests,
one the requests as sent; saved_usd, their difference; --prices FILE
overrides the prices) and per_request details (--per-request=false leaves
them out). On a terminal a short summary goes to stderr.

The pipeline flags are those of prepare. The workspace is a fresh
temporary one unless --workspace names one. A Claude Code session that
Claude Code compacted itself is replayed whole, from its first request
(--whole-history=false replays the live context only).

A transcript of a session that ran through agentctx records the usage of
the requests as agentctx edited them: replayed, it tells neither what the
session did nor what it billed. replay recognises such a session by the
ledger the proxy keeps (--ledger: its entries under the transcript's
session id) or by agentctx's marks in it, and adds "managed" to the JSON;
with the ledger's entries, requests, compactions, cost_usd,
cost_without_usd and saved_usd are the ledger's; without, a warning line
on stderr (and managed.warning) says the figures are not the session's.`

func newReplayCmd(e *env) *cobra.Command {
	f := &prepareFlags{}
	var (
		ws, store, session string
		noUsage            bool
		perRequest         bool
		pricesFile, ledger string
	)
	cmd := &cobra.Command{
		Use:   "replay FILE",
		Short: "Replay a recorded session through prepare, request by request",
		Long:  replayLong,
		Example: `  agentctx replay --limit 100000 session.jsonl
  agentctx replay --limit 100000 --per-request=false session.jsonl | jq .count_error`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			base, err := f.options(e, cmd.Flags().Changed)
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("whole-history") {
				// A session is replayed as the agent lived it: from its
				// first request, across Claude Code's own compactions.
				e.read.WholeHistory = true
			}
			doc, err := e.readConversation(cmd.Context(), "replay", args)
			if err != nil {
				return err
			}
			prices, err := readPrices(pricesFile)
			if err != nil {
				return err
			}
			o := replay.Options{Options: base, NoUsage: noUsage, Prices: prices}
			o.SessionID = session
			closeStores, err := replayStores(cmd.Context(), store, ws, &o)
			if err != nil {
				return err
			}
			defer closeStores()
			m, err := replayManaged(cmd.Context(), e, ledger, &o, doc)
			if err != nil {
				return err
			}
			res, err := replay.Run(cmd.Context(), doc, o)
			if err != nil {
				return err
			}
			m.ApplyToReplay(res)
			if e.s.ErrIsTerminal {
				name := "stdin"
				if len(args) > 0 {
					name = args[0]
				}
				printReplaySummary(e.s.Err, name, res, m != nil && m.Ledger != nil)
			}
			if !perRequest {
				res.PerRequest = nil
			}
			return e.writeJSON(cmd.Context(), replayOutput{res, m})
		},
	}
	f.register(cmd.Flags(), true)
	cmd.Flags().StringVar(&ws, "workspace", "", "workspace directory or SQLite file to replay into (default: a fresh temporary one)")
	cmd.Flags().StringVar(&store, "store", "", storeFlagHelp)
	cmd.Flags().StringVar(&session, "session", "replay", "the session id to replay as")
	cmd.Flags().BoolVar(&noUsage, "no-usage", false, "do not feed the recorded usage back")
	cmd.Flags().BoolVar(&perRequest, "per-request", true, "include per_request details")
	cmd.Flags().StringVar(&pricesFile, "prices", "", pricesFlagHelp)
	cmd.Flags().StringVar(&ledger, "ledger", "", ledgerFlagHelp+"--store or --workspace when given, else the project's workspace, as agentctx proxy keeps it)")
	return cmd
}

// replayOutput is replay's JSON: the result, and what is known of a
// session that ran through agentctx.
type replayOutput struct {
	*replay.Result
	// Managed is set for the transcript of a session that ran through
	// agentctx, recognised by the ledger or by agentctx's marks in it; when
	// the ledger holds the session, requests, compactions, cost_usd,
	// cost_without_usd and saved_usd are the ledger's, not the replay's.
	Managed *proxy.Managed `json:"managed,omitempty"`
}

// replayManaged finds whether doc ran through agentctx: in the ledger of
// --ledger, else of the store the replay opened (--store, --workspace),
// else of the project's workspace.
func replayManaged(ctx context.Context, e *env, ledger string, o *replay.Options, doc *agentctx.Document) (*proxy.Managed, error) {
	if ledger != "" || o.Sessions == nil {
		return e.findManaged(ctx, e.s.Err, "replay", ledger, doc)
	}
	l, err := session.LedgerOf(o.Sessions)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	return e.managedOf(ctx, e.s.Err, "replay", doc, l)
}

// replayStores opens the workspace and session stores --store or
// --workspace name into o, and returns what closes them; with neither, o is
// left alone (the replay makes a fresh temporary workspace).
func replayStores(ctx context.Context, store, ws string, o *replay.Options) (func(), error) {
	loc, err := location(store, ws)
	if err != nil || loc == "" {
		return func() {}, err
	}
	st, err := openStore(ctx, loc)
	if err != nil {
		return nil, err
	}
	sessions, err := openSessions(ctx, loc)
	if err != nil {
		st.Close()
		return nil, err
	}
	o.Store, o.Sessions = st, sessions
	return func() { sessions.Close(); st.Close() }, nil
}

// printReplaySummary writes replay's lines for a person. Without recorded
// usage there is no count error to report, and the bill without agentctx
// is an estimate from our counts, not the recorded one.
// With fromLedger the requests, compactions and money are the ledger's.
func printReplaySummary(w io.Writer, name string, res *replay.Result, fromLedger bool) {
	fmt.Fprintf(w, "agentctx replay: %s: %d requests, %d compaction(s), %d cache break(s), prefix stable %.1f%%\n",
		name, res.Requests, res.Compactions, res.CacheBreaks, 100*res.PrefixStableRatio)
	without := "as recorded"
	if res.CountError.N == 0 {
		fmt.Fprintf(w, "  count error: no recorded usage to compare with; prepare: median %.1f ms, max %.1f ms\n", res.MedianMs, res.MaxMs)
		without = "estimated from our counts"
	} else {
		fmt.Fprintf(w, "  count error: median %.2f%%, p95 %.2f%% over %d requests; prepare: median %.1f ms, max %.1f ms\n",
			res.CountError.MedianPct, res.CountError.P95Pct, res.CountError.N, res.MedianMs, res.MaxMs)
	}
	if fromLedger {
		fmt.Fprintf(w, "  cost (from the agentctx ledger): $%.4f with agentctx, $%.4f without (estimated), saved $%.4f\n",
			res.CostUSD, res.CostWithoutUSD, res.SavedUSD)
		return
	}
	fmt.Fprintf(w, "  cost: $%.4f with agentctx (estimate), $%.4f without (%s), saved $%.4f\n",
		res.CostUSD, res.CostWithoutUSD, without, res.SavedUSD)
}
