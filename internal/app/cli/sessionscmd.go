package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/memsession"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/memstore"
)

// sessionsFlags are the flags every sessions subcommand shares.
type sessionsFlags struct {
	path, store, namespace string
	all                    bool
	asJSON                 bool
}

func newSessionsCmd(e *env) *cobra.Command {
	f := &sessionsFlags{}
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List, show, delete and prune the stored sessions",
		Long: `sessions looks after what the proxy and prepare keep per session: the
session state (what was pruned, offloaded, compacted) and the workspace
artifacts the session owns (offloaded tool results and compaction
archives, by their session_id), in the workspace or store of --workspace
and --store, namespace --namespace (--all: every namespace with sessions).

ls lists each session with its size (state and artifacts), requests,
compactions and last activity; show prints one with its artifacts; rm
deletes sessions by id or by idleness (--older-than); prune applies the
retention (--retain-age, --retain-size), which the proxy also applies
periodically when given them.

What deletion guarantees: a session's state is deleted only at the version
that was judged (one saved meanwhile is left whole and listed as skipped);
an artifact is deleted only when no remaining session owns it or names it
(in its state, its summary's pointers or the summaries in its archives); size pruning never touches a session active within --retain-live or
an artifact created within it. Output is JSON, or a table on a terminal.`,
		Example: `  agentctx sessions ls
  agentctx sessions show s1
  agentctx sessions rm --older-than 30d
  agentctx sessions prune --retain-age 30d --retain-size 2GiB --dry-run`,
		Args: wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.path, "workspace", "", projectWorkspaceHelp)
	pf.StringVar(&f.store, "store", "", storeFlagHelp)
	pf.StringVar(&f.namespace, "namespace", workspace.DefaultNamespace, "namespace inside the workspace")
	pf.BoolVar(&f.all, "all", false, "every namespace that has sessions (tenants included), not only --namespace")
	pf.BoolVar(&f.asJSON, "json", false, "print JSON even on a terminal")
	for _, c := range []*cobra.Command{newSessionsLsCmd(e, f), newSessionsShowCmd(e, f), newSessionsRmCmd(e, f), newSessionsPruneCmd(e, f)} {
		c.Args = wrapArgs(c.Args)
		cmd.AddCommand(c)
	}
	return cmd
}

// open opens the stores. A workspace that does not exist is read as an
// empty one and not created.
func (f *sessionsFlags) open(ctx context.Context, e *env) (*pipeline.Sessions, func(), error) {
	if f.namespace == "" && !f.all {
		return nil, nil, usagef("--namespace must not be empty")
	}
	path := f.path
	if f.store == "" {
		p, err := e.workspaceOr(path)
		if err != nil {
			return nil, nil, err
		}
		path = p
	}
	loc, err := location(f.store, path)
	if err != nil {
		return nil, nil, err
	}
	if loc == "" {
		return nil, nil, usagef("--workspace must not be empty")
	}
	if !isPostgresURL(loc) && !exists(loc) {
		return &pipeline.Sessions{Workspace: memstore.New(), Sessions: memsession.New()}, func() {}, nil
	}
	ws, err := openStore(ctx, loc)
	if err != nil {
		return nil, nil, err
	}
	ss, err := openSessions(ctx, loc)
	if err != nil {
		ws.Close()
		return nil, nil, err
	}
	return &pipeline.Sessions{Workspace: ws, Sessions: ss, Logger: e.logger}, func() { ss.Close(); ws.Close() }, nil
}

// ns is the namespace to work on: "" (every one) with --all.
func (f *sessionsFlags) ns() string {
	if f.all {
		return ""
	}
	return f.namespace
}

func (f *sessionsFlags) table(e *env) bool { return e.s.OutIsTerminal && !f.asJSON }

func newSessionsLsCmd(e *env, f *sessionsFlags) *cobra.Command {
	var olderThan age
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the sessions with their size, requests, compactions and last activity",
		Long: `ls lists the sessions: a table on a terminal (ids as they are, quoted
only when they hold a space or an unprintable character; the last activity
in local time with its zone), JSON otherwise or with --json.`,
		Example: `  agentctx sessions ls
  agentctx sessions ls --older-than 7d
  agentctx sessions ls --all --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, closeAll, err := f.open(cmd.Context(), e)
			if err != nil {
				return err
			}
			defer closeAll()
			list, err := s.List(cmd.Context(), f.ns())
			if err != nil {
				return err
			}
			if olderThan > 0 {
				now := time.Now()
				kept := list[:0]
				for _, si := range list {
					if now.Sub(si.LastActivity) > time.Duration(olderThan) {
						kept = append(kept, si)
					}
				}
				list = kept
			}
			if f.table(e) {
				return writeSessionsTable(e.s.Out, list)
			}
			return e.writeJSON(cmd.Context(), list)
		},
	}
	cmd.Flags().Var(&olderThan, "older-than", "only sessions idle longer than this (30d, 12h, 90m)")
	return cmd
}

func writeSessionsTable(w io.Writer, list []pipeline.SessionInfo) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tSESSION\tSIZE\tREQUESTS\tCOMPACTIONS\tARTIFACTS\tLAST ACTIVITY")
	for _, si := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\n", tableCell(si.Namespace), tableCell(si.ID),
			formatBytes(si.Size), si.Requests, si.Compactions, si.Artifacts, si.LastActivity.Local().Format(tableTime))
	}
	return tw.Flush()
}

// tableTime is how a table prints a time: local, with its zone.
const tableTime = "2006-01-02 15:04:05 MST"

// tableCell is s as a table prints it: as it is, or quoted (Go syntax)
// when it is empty or holds a space or a character that is not graphic,
// which would shift or hide the columns.
func tableCell(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || !strconv.IsGraphic(r) }) {
		return strconv.QuoteToGraphic(s)
	}
	return s
}

func newSessionsShowCmd(e *env, f *sessionsFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show one session: its counts, compaction summary and artifacts",
		Long: `show prints one session as JSON: its counts, compaction summary and
artifacts; indented on a terminal (unless --json), one line otherwise.`,
		Example: `  agentctx sessions show s3
  agentctx sessions show --json s3 > s3.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.all {
				return usagef("show takes one --namespace, not --all")
			}
			s, closeAll, err := f.open(cmd.Context(), e)
			if err != nil {
				return err
			}
			defer closeAll()
			d, err := s.Show(cmd.Context(), f.namespace, args[0])
			if err != nil {
				return sessionsError(err)
			}
			if f.table(e) {
				return e.writeIndentedJSON(cmd.Context(), d)
			}
			return e.writeJSON(cmd.Context(), d)
		},
	}
}

func newSessionsRmCmd(e *env, f *sessionsFlags) *cobra.Command {
	var (
		olderThan age
		dryRun    bool
	)
	cmd := &cobra.Command{
		Use:   "rm [ID...]",
		Short: "Delete sessions (state and the artifacts they own) by id or by idleness",
		Long: `rm deletes each session named, or with --older-than every session idle
longer than that, with the artifacts it owns (those no remaining session
names). A session saved while it is deleted is left whole (skipped).`,
		Example: `  agentctx sessions rm s1 s2
  agentctx sessions rm --older-than 30d --dry-run`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 0) == (olderThan == 0) {
				return usagef("rm wants session ids or --older-than, not both or neither")
			}
			if len(args) > 0 && f.all {
				return usagef("rm by id takes one --namespace, not --all")
			}
			s, closeAll, err := f.open(cmd.Context(), e)
			if err != nil {
				return err
			}
			defer closeAll()
			var rep *pipeline.PruneReport
			if olderThan > 0 {
				rep, err = s.Prune(cmd.Context(), f.ns(), pipeline.Retention{MaxAge: time.Duration(olderThan), DryRun: dryRun})
			} else {
				rep = &pipeline.PruneReport{Sessions: []string{}, DryRun: dryRun}
				for _, id := range args {
					var one *pipeline.PruneReport
					one, err = s.Delete(cmd.Context(), f.namespace, id, dryRun)
					if err != nil {
						break
					}
					rep.Sessions = append(rep.Sessions, one.Sessions...)
					rep.Skipped = append(rep.Skipped, one.Skipped...)
					rep.Artifacts += one.Artifacts
					rep.Bytes += one.Bytes
					rep.Remaining = one.Remaining
				}
			}
			if err != nil {
				return sessionsError(err)
			}
			return e.writeJSON(cmd.Context(), rep)
		},
	}
	cmd.Flags().Var(&olderThan, "older-than", "delete every session idle longer than this (30d, 12h, 90m)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "report what would be deleted, delete nothing")
	return cmd
}

func newSessionsPruneCmd(e *env, f *sessionsFlags) *cobra.Command {
	var (
		r      retentionFlags
		dryRun bool
	)
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Apply the retention: delete idle sessions and old artifacts, down to a size",
		Long: `prune deletes the sessions idle longer than --retain-age with the
artifacts they own, and the artifacts of no session created longer ago;
then, while a namespace holds more than --retain-size bytes, the idlest
sessions and the oldest artifacts of no session, never what was active
within --retain-live. Both settings usually live in the configuration file
("retain-age", "retain-size"), which the proxy reads too.`,
		Example: `  agentctx sessions prune --retain-age 30d
  agentctx sessions prune --retain-size 2GiB --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ret := r.retention()
			if ret.MaxAge == 0 && ret.MaxBytes == 0 {
				return usagef("prune needs --retain-age or --retain-size (or retain-age / retain-size in the configuration file)")
			}
			ret.DryRun = dryRun
			s, closeAll, err := f.open(cmd.Context(), e)
			if err != nil {
				return err
			}
			defer closeAll()
			rep, err := s.Prune(cmd.Context(), f.ns(), ret)
			if err != nil {
				return sessionsError(err)
			}
			return e.writeJSON(cmd.Context(), rep)
		},
	}
	r.add(cmd)
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "report what would be deleted, delete nothing")
	return cmd
}

// retentionFlags are the retention settings, shared by sessions prune and
// the proxy.
type retentionFlags struct {
	maxAge age
	size   byteSize
	live   age
	every  time.Duration // the proxy's interval
}

// startRetention runs the retention in the background of a proxy when it
// has one, over the proxy's namespace and the tenant namespaces under it,
// and returns the function that stops it and waits for it.
func startRetention(ctx context.Context, r retentionFlags, ws workspace.Store, ss session.Store, ns string, log *slog.Logger) func() {
	ret := r.retention()
	if ret.MaxAge == 0 && ret.MaxBytes == 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	s := &pipeline.Sessions{Workspace: ws, Sessions: ss, Logger: log}
	go func() {
		defer close(done)
		s.PruneEvery(ctx, r.every, ret, func(n string) bool { return n == ns || strings.HasPrefix(n, proxy.TenantNamespace(ns, "")) })
	}()
	return func() { cancel(); <-done }
}

func (r *retentionFlags) add(cmd *cobra.Command) {
	r.live = age(pipeline.DefaultLive)
	cmd.Flags().Var(&r.maxAge, "retain-age", "delete sessions idle, and artifacts of no session created, longer ago than this (30d, 12h; 0: no limit)")
	cmd.Flags().Var(&r.size, "retain-size", "then delete the idlest sessions and oldest artifacts while a namespace holds more than this (2GiB, 500MB; 0: no limit)")
	cmd.Flags().Var(&r.live, "retain-live", "size pruning never deletes what was active within this (0: no such protection)")
}

func (r *retentionFlags) retention() pipeline.Retention {
	live := time.Duration(r.live)
	if live == 0 {
		live = -1 // the flag's 0 protects nothing
	}
	return pipeline.Retention{MaxAge: time.Duration(r.maxAge), MaxBytes: int64(r.size), Live: live}
}

// sessionsError makes a session that does not exist a usage error.
func sessionsError(err error) error {
	if errors.Is(err, pipeline.ErrSessionNotFound) || errors.Is(err, session.ErrInvalidKey) {
		return &usageError{fmt.Errorf("%w (agentctx sessions ls lists them)", err)}
	}
	return err
}

// age is a duration flag that also takes days: 30d, 1d12h.
type age time.Duration

// String prints a as it is written: whole days as "30d", then the rest
// without its zero units ("1d12h", "1h30m"; issue 48: config showed
// 720h0m0s for 30d).
func (a *age) String() string {
	d := time.Duration(*a)
	if d == 0 {
		return "0"
	}
	var b strings.Builder
	if days := d / (24 * time.Hour); days > 0 {
		fmt.Fprintf(&b, "%dd", days)
		d -= days * 24 * time.Hour
	}
	if d > 0 {
		r := d.String()
		if strings.HasSuffix(r, "m0s") {
			r = strings.TrimSuffix(r, "0s")
		}
		if strings.HasSuffix(r, "h0m") {
			r = strings.TrimSuffix(r, "0m")
		}
		b.WriteString(r)
	}
	return b.String()
}

func (a *age) Type() string { return "duration" }

func (a *age) Set(s string) error {
	d, err := parseAge(s)
	if err != nil {
		return err
	}
	*a = age(d)
	return nil
}

// parseAge parses a Go duration with an optional leading number of days
// ("30d", "1d12h", "90m", "0").
func parseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.ParseUint(s[:i], 10, 32)
		if err != nil {
			return 0, fmt.Errorf("bad duration %q: want 30d, 12h, 90m", s)
		}
		days, s = time.Duration(n)*24*time.Hour, s[i+1:]
		if s == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bad duration %q: want 30d, 12h, 90m", s)
	}
	return days + d, nil
}

// byteSize is a size flag: bytes, or with a unit (KB, MB, GB: powers of
// 1000; KiB, MiB, GiB: of 1024).
type byteSize int64

// String prints b as it is written: in the unit that gives the smallest
// whole number ("2GiB", "500MB"), else in bytes (issue 48: config showed
// 2147483648 for 2GiB).
func (b *byteSize) String() string {
	n := int64(*b)
	best := strconv.FormatInt(n, 10)
	if n == 0 {
		return best
	}
	m := n
	for _, u := range []struct {
		unit string
		size int64
	}{{"KB", 1e3}, {"KiB", 1 << 10}, {"MB", 1e6}, {"MiB", 1 << 20}, {"GB", 1e9}, {"GiB", 1 << 30}, {"TB", 1e12}, {"TiB", 1 << 40}} {
		if n%u.size == 0 && n/u.size < m {
			m, best = n/u.size, strconv.FormatInt(n/u.size, 10)+u.unit
		}
	}
	return best
}

func (b *byteSize) Type() string { return "size" }

func (b *byteSize) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	mult := map[string]float64{"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
		"KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[strings.ToUpper(unit)]
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || mult == 0 || v < 0 || v*mult > 1<<62 {
		return 0, fmt.Errorf("bad size %q: want bytes or 500MB, 2GiB", s)
	}
	return int64(v * mult), nil
}

// formatBytes prints a size for people: 512 B, 1.5 MiB.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
