package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/savings"
	"github.com/agentctx/agentctx/session"
)

func newSavingsCmd(e *env) *cobra.Command {
	var (
		path, store, sess string
		daily, asJSON     bool
	)
	cmd := &cobra.Command{
		Use:   "savings",
		Short: "Print what agentctx saved: today, 7 days, 30 days, all time, by model, client and project",
		Long: `savings reads the ledger the proxy keeps beside the session state (every
answered request of agentctx proxy, claude and codex: its usage, its bill
and the estimate of its bill without agentctx) in the workspace or store
of --workspace and --store, and prints the requests, the bill, the bill
without agentctx, the saving and the saving in percent today, over the
last 7 and 30 days (today included) and all time, then all time by
model, client (claude-code, codex...) and project directory.

--daily adds a row per day, --session ID reports one session (its key,
as GET /agentctx/stats names it). Days are in the local time zone. The
bill is at list prices; the bill without agentctx is an estimate (see
agentctx proxy --help). Output is a table on a terminal, JSON otherwise
or with --json.`,
		Example: `  agentctx savings
  agentctx savings --daily
  agentctx savings --session 3f9c2a --json
  agentctx savings --workspace team.db`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("session") && sess == "" {
				return usagef("--session must not be empty")
			}
			loc, err := location(store, path)
			if err != nil {
				return err
			}
			if loc == "" {
				return usagef("--workspace must not be empty")
			}
			opts := savings.Options{Session: sess, Daily: daily}
			var r savings.Report
			if !isPostgresURL(loc) && !exists(loc) {
				r = savings.Summarize(nil, opts) // no workspace: nothing recorded (and nothing created)
			} else {
				ss, err := openSessions(cmd.Context(), loc)
				if err != nil {
					return err
				}
				defer ss.Close()
				l, err := session.LedgerOf(ss)
				if err != nil {
					return fmt.Errorf("savings: %w", err)
				}
				if r, err = savings.Read(cmd.Context(), l, opts); err != nil {
					return fmt.Errorf("savings: %w", err)
				}
			}
			if e.s.OutIsTerminal && !asJSON {
				return writeSavingsTable(e.s.Out, r)
			}
			return e.writeJSON(cmd.Context(), r)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&path, "workspace", pipeline.DefaultWorkspaceDir, "workspace directory, or a SQLite file (.db, .sqlite, .sqlite3)")
	fs.StringVar(&store, "store", "", storeFlagHelp)
	fs.StringVar(&sess, "session", "", "report this session only (its key)")
	fs.BoolVar(&daily, "daily", false, "add a row per day")
	fs.BoolVar(&asJSON, "json", false, "print JSON even on a terminal")
	return cmd
}

// writeSavingsTable prints a savings report as tables: the periods, then
// all time by model, client and project, then the days (--daily).
func writeSavingsTable(w io.Writer, r savings.Report) error {
	type row struct {
		name string
		t    savings.Totals
	}
	type section struct {
		title string
		rows  []row
	}
	names := map[string]string{"today": "today", "7d": "7 days", "30d": "30 days", "all": "all time"}
	periods := section{title: "PERIOD"}
	for _, p := range r.Periods {
		periods.rows = append(periods.rows, row{names[p.Name], p.Totals})
	}
	sections := []section{periods}
	for _, g := range []struct {
		title string
		list  []savings.Group
	}{{"MODEL", r.ByModel}, {"CLIENT", r.ByClient}, {"PROJECT", r.ByProject}} {
		sec := section{title: g.title}
		for _, x := range g.list {
			name := x.Name
			if name == "" {
				name = "(unknown)"
			}
			sec.rows = append(sec.rows, row{strings.ToValidUTF8(name, "?"), x.Totals})
		}
		if len(sec.rows) > 0 {
			sections = append(sections, sec)
		}
	}
	if r.Days != nil {
		days := section{title: "DAY"}
		for _, d := range r.Days {
			days.rows = append(days.rows, row{d.Date, d.Totals})
		}
		sections = append(sections, days)
	}
	width := 0 // of the first column, every section alike
	for _, sec := range sections {
		width = max(width, utf8.RuneCountInString(sec.title))
		for _, x := range sec.rows {
			width = max(width, utf8.RuneCountInString(x.name))
		}
	}
	if r.Session != "" {
		fmt.Fprintf(w, "session %s\n", strconv.QuoteToGraphic(r.Session))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for i, sec := range sections {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		pad := func(s string) string { return s + strings.Repeat(" ", width-utf8.RuneCountInString(s)) }
		fmt.Fprintf(tw, "%s\tREQUESTS\tBILL\tWITHOUT AGENTCTX\tSAVED\tSAVED %%\t\n", pad(sec.title))
		for _, x := range sec.rows {
			t := x.t
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t\n", pad(x.name), t.Requests, usd(t.CostUSD), usd(t.CostWithoutUSD), usd(t.SavedUSD),
				strconv.FormatFloat(t.SavedPct, 'f', 1, 64)+"%")
		}
	}
	return tw.Flush()
}

// usd formats an amount of dollars to the cent ($0.0012 below a cent).
func usd(v float64) string {
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	if v > 0 && v < 0.01 {
		return sign + "$" + strconv.FormatFloat(v, 'f', 4, 64)
	}
	return sign + "$" + strconv.FormatFloat(v, 'f', 2, 64)
}
