package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/app/projectws"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/dirstore"
	"github.com/agentctx/agentctx/workspace/memstore"
	"github.com/agentctx/agentctx/workspace/pgstore"
	"github.com/agentctx/agentctx/workspace/sqlitestore"
)

// wsFlags are the flags every ws command shares.
type wsFlags struct {
	path      string
	store     string
	namespace string
}

type wsOffloadOutput struct {
	Messages  []agentctx.Message    `json:"messages"`  // the messages, large results replaced by references
	Artifacts []workspace.Offloaded `json:"artifacts"` // the results stored
	Inlined   int                   `json:"inlined"`   // results kept in the messages
	Indexed   int                   `json:"indexed"`   // results stored and indexed for search
}

func newWSCmd(e *env) *cobra.Command {
	f := &wsFlags{}
	cmd := &cobra.Command{
		Use:   "ws",
		Short: "Store tool results whole as artifacts and read them back",
		Long: `ws keeps every tool result whole as an artifact in a workspace and reads
it back the way an agent's tools do (get_knowledge_by_id,
get_knowledge_by_lines, grep_knowledge).

The workspace (--workspace) is a directory of plain files, readable with
ls and cat; a path ending in .db, .sqlite or .sqlite3 is an indexed SQLite
file instead. --store postgres://... (or AGENTCTX_STORE) keeps the workspace
in a PostgreSQL database shared by a fleet, and overrides --workspace.
Namespaces (--namespace) keep workspaces apart; the sessions of a namespace
share it (an id is never reused for other content), so get, lines and grep
find an artifact by its id whichever session stored it, and ls and grep
without ID cover every session unless --session names one. When two
sessions' results of one tool call id are stored (tool_result_call_0 and
tool_result_call_0-2), --session S makes the plain id name S's; without
--session the plain id is an error that lists both.

get, lines and grep print what the agent tool returns, capped at
--max-chars characters (0 lifts the cap). An ID is the artifact id as ws ls
prints it; an id holding characters a shell cannot pass (a NUL byte) is
given with the JSON escapes ws ls shows, such as tool_result_a\u0000b.`,
		Example: `  agentctx ws offload --session s1 session.jsonl
  agentctx ws ls --session s1
  agentctx ws grep -i -C 2 tool_result_toolu_01 'error'`,
		Args: wrapArgs(cobra.NoArgs), // an unknown subcommand is a usage error
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.PersistentFlags().StringVar(&f.path, "workspace", "", projectWorkspaceHelp+"; ws offload: ./"+projectws.LocalDir)
	cmd.PersistentFlags().StringVar(&f.store, "store", "", "PostgreSQL store URL (postgres://...); default $AGENTCTX_STORE; overrides --workspace")
	cmd.PersistentFlags().StringVar(&f.namespace, "namespace", workspace.DefaultNamespace, "namespace inside the workspace")
	for _, c := range []*cobra.Command{newWSOffloadCmd(e, f), newWSGetCmd(e, f), newWSLinesCmd(e, f), newWSGrepCmd(e, f), newWSLsCmd(e, f)} {
		c.Args = wrapArgs(c.Args)
		cmd.AddCommand(c)
	}
	return cmd
}

// isSQLitePath reports whether a workspace path names a SQLite file.
// checkWorkspacePath rejects, before anything is opened or created, a
// workspace path where no workspace can be kept: a SQLite file that is a
// directory, or a path under a file (a directory workspace that is a file
// is dirstore.Open's own error). The error matches
// workspace.ErrInvalidLocation: a bad flag (exit 2).
func checkWorkspacePath(path string) error {
	if path == "" || isPostgresURL(path) {
		return nil
	}
	if isSQLitePath(path) {
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			return fmt.Errorf("workspace %s is a directory: a SQLite workspace (.db, .sqlite, .sqlite3) is a file: %w", path, workspace.ErrInvalidLocation)
		}
	}
	for dir := filepath.Dir(filepath.Clean(path)); ; dir = filepath.Dir(dir) {
		if fi, err := os.Stat(dir); err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("workspace %s: %s is not a directory: %w", path, dir, workspace.ErrInvalidLocation)
			}
			return nil // the nearest existing ancestor is a directory
		}
		if parent := filepath.Dir(dir); parent == dir {
			return nil
		}
	}
}

func isSQLitePath(p string) bool {
	switch strings.ToLower(filepath.Ext(p)) {
	case ".db", ".sqlite", ".sqlite3":
		return true
	}
	return false
}

// open opens the workspace. A read-only command on a workspace that does
// not exist sees an empty one, and creates nothing.
func (f *wsFlags) open(ctx context.Context, e *env, write bool, opts workspace.Options) (*workspace.Workspace, func(), error) {
	if f.namespace == "" {
		return nil, nil, usagef("--namespace must not be empty")
	}
	path := f.path
	switch {
	case path != "" || f.store != "":
	case write:
		path = projectws.LocalDir // ws offload, a single-shot command: the seed's default
	default:
		p, err := e.projectWorkspace()
		if err != nil {
			return nil, nil, err
		}
		path = p
	}
	var (
		store workspace.Store
		err   error
	)
	if f.store == "" {
		if err := checkWorkspacePath(path); err != nil {
			return nil, nil, err
		}
	}
	switch {
	case f.store != "":
		if !isPostgresURL(f.store) {
			return nil, nil, usagef("--store must be a postgres:// URL, got %q", f.store)
		}
		store, err = pgstore.Open(ctx, f.store, pgstore.Options{})
	case !isSQLitePath(path):
		if write {
			if err := makeWorkspaceDir(path); err != nil {
				return nil, nil, err
			}
		}
		store, err = dirstore.Open(path, dirstore.Options{})
	case !write && !exists(path):
		store = memstore.New()
	default:
		if write {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return nil, nil, fmt.Errorf("workspace: %w", err)
			}
		}
		store, err = sqlitestore.Open(ctx, path, sqlitestore.Options{})
	}
	if err != nil {
		return nil, nil, err
	}
	opts.Namespace = f.namespace
	opts.Logger = e.logger
	return workspace.New(store, opts), func() { store.Close() }, nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return !errors.Is(err, fs.ErrNotExist)
}

// wsError makes what the user got wrong (an unknown id, a bad range or
// pattern) a usage error, exit 2; store failures stay runtime failures. A
// missing artifact says where to look: its error names the namespace
// searched, and ws ls lists what it holds.
func wsError(err error) error {
	if errors.Is(err, workspace.ErrNotFound) {
		return &usageError{fmt.Errorf("%w (agentctx ws ls lists the namespace's artifacts)", err)}
	}
	if errors.Is(err, workspace.ErrAmbiguousID) {
		return &usageError{fmt.Errorf("%w; give --session or one of these ids", err)}
	}
	for _, target := range []error{workspace.ErrNotFound, workspace.ErrInvalidRange, workspace.ErrInvalidPattern,
		workspace.ErrInvalidID, workspace.ErrInvalidNamespace, workspace.ErrInvalidMetadata} {
		if errors.Is(err, target) {
			return &usageError{err}
		}
	}
	return err
}

// maxCharsOption maps --max-chars (0 lifts the cap) to Options.MaxChars.
func maxCharsOption(n int) (int, error) {
	switch {
	case n < 0:
		return 0, usagef("--max-chars must be 0 (no cap) or more, got %d", n)
	case n == 0:
		return workspace.NoLimit, nil
	}
	return n, nil
}

// byID runs read with the artifact id given on the command line. An id
// that is not found and holds a backslash is read again with its JSON
// escapes decoded, the way ws ls prints ids: a shell cannot pass a NUL
// byte, but it can pass tool_result_a\u0000b.
func byID(arg string, read func(id string) (string, error)) (string, error) {
	text, err := read(arg)
	if err == nil || !errors.Is(err, workspace.ErrNotFound) || !strings.Contains(arg, `\`) {
		return text, err
	}
	var id string
	if json.Unmarshal([]byte(`"`+arg+`"`), &id) != nil || id == arg {
		return text, err
	}
	if text, err2 := read(id); !errors.Is(err2, workspace.ErrNotFound) {
		return text, err2
	}
	return text, err
}

func (e *env) writeText(ctx context.Context, s string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := io.WriteString(e.s.Out, s); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

func newWSOffloadCmd(e *env, f *wsFlags) *cobra.Command {
	var (
		session, task, agent string
		messagesOnly         bool
	)
	cmd := &cobra.Command{
		Use:   "offload [FILE]",
		Short: "Store every tool result as an artifact; index the large ones",
		Long: `offload stores every tool result of a conversation whole as the artifact
tool_result_<tool_call_id>, with the metadata context_type=tool_result,
biz_id (the tool call id), agent_id, task_id, session_id, tool_name and
action_name. A result of fewer than 40,000 characters stays as it is; a
larger one is replaced by a <knowledge_list> entry that names the artifact
and the tools that read it back (get_knowledge_by_id,
get_knowledge_by_lines, grep_knowledge).

It prints the new messages, the stored artifacts, and how many results
were inlined and indexed; the other members of a request body (model,
system, tools, ...) are kept around "messages" unless --messages-only.
Results already stored unchanged are not written again.`,
		Example: `  agentctx ws offload --session s1 --task fix-bug session.jsonl > offloaded.json
  agentctx ws offload --workspace ws.db < request.json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			doc, err := e.readConversation(cmd.Context(), "ws offload", args)
			if err != nil {
				return err
			}
			for r := range agentctx.ToolResults(doc.Messages) {
				if r.ID == "" {
					return usagef("tool result %d of message %d has no tool call id", max(r.Block, 0), r.Message)
				}
			}
			ws, closeStore, err := f.open(cmd.Context(), e, true, workspace.Options{SessionID: session, TaskID: task, AgentID: agent})
			if err != nil {
				return err
			}
			defer closeStore()
			res, err := ws.Offload(cmd.Context(), doc.Messages)
			if err != nil {
				return wsError(err)
			}
			return e.writeEveryMessage(cmd.Context(), doc, res.Messages, wsOffloadOutput{Messages: res.Messages, Artifacts: res.Artifacts, Inlined: res.Inlined, Indexed: res.Indexed}, messagesOnly)
		},
	}
	cmd.Flags().StringVar(&session, "session", "", "session_id written on every artifact")
	cmd.Flags().StringVar(&task, "task", "", "task_id written on every artifact")
	cmd.Flags().StringVar(&agent, "agent", "", "agent_id written on every artifact")
	cmd.Flags().BoolVar(&messagesOnly, "messages-only", false, "print the messages without the other members of a request body (model, system, tools, ...)")
	return cmd
}

func newWSGetCmd(e *env, f *wsFlags) *cobra.Command {
	var maxChars, offset int
	var session string
	var asSent bool
	cmd := &cobra.Command{
		Use:   "get ID",
		Short: "Print an artifact (get_knowledge_by_id)",
		Long: `get prints an artifact's content as the get_knowledge_by_id tool returns
it: exactly the stored bytes when it is under --max-chars characters;
otherwise the first part and a notice telling how to read on. With --as-sent
it prints the tool result whole as the agent sent it (a result stored in
another form: text blocks, a JSON-encoded string, given back byte for byte;
a string holding a lone surrogate escape, which no text holds, as its JSON
string as sent).`,
		Example: `  agentctx ws get tool_result_toolu_01
  agentctx ws get --max-chars 0 tool_result_toolu_01 > original.txt
  agentctx ws get --as-sent tool_result_toolu_01`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			mc, err := maxCharsOption(maxChars)
			if err != nil {
				return err
			}
			ws, closeStore, err := f.open(cmd.Context(), e, false, workspace.Options{MaxChars: mc, SessionID: session})
			if err != nil {
				return err
			}
			defer closeStore()
			text, err := byID(args[0], func(id string) (string, error) {
				id, err := ws.Resolve(cmd.Context(), id)
				if err != nil {
					return "", err
				}
				if asSent {
					return asSentText(cmd.Context(), ws, id)
				}
				return ws.GetKnowledgeByID(cmd.Context(), id, offset)
			})
			if err != nil {
				return wsError(err)
			}
			return e.writeText(cmd.Context(), text)
		},
	}
	cmd.Flags().IntVar(&maxChars, "max-chars", workspace.DefaultMaxChars, "cap on the characters printed; 0 lifts it")
	cmd.Flags().IntVar(&offset, "offset", 0, "characters to skip from the start")
	cmd.Flags().BoolVar(&asSent, "as-sent", false, "print the tool result whole, as the agent sent it (workspace.OriginalContent)")
	cmd.Flags().StringVar(&session, "session", "", sessionFlagHelp)
	return cmd
}

func newWSLinesCmd(e *env, f *wsFlags) *cobra.Command {
	var maxChars int
	var session string
	cmd := &cobra.Command{
		Use:   "lines ID START END",
		Short: "Print lines START..END of an artifact (get_knowledge_by_lines)",
		Long: `lines prints lines START to END of an artifact (1-based, inclusive; an END
past the last line is clamped) after the header "Lines a-b of N".`,
		Example: `  agentctx ws lines tool_result_toolu_01 1 40`,
		Args:    cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			start, err1 := strconv.Atoi(args[1])
			end, err2 := strconv.Atoi(args[2])
			if err1 != nil || err2 != nil {
				return usagef("START and END must be line numbers, got %q and %q", args[1], args[2])
			}
			mc, err := maxCharsOption(maxChars)
			if err != nil {
				return err
			}
			ws, closeStore, err := f.open(cmd.Context(), e, false, workspace.Options{MaxChars: mc, SessionID: session})
			if err != nil {
				return err
			}
			defer closeStore()
			text, err := byID(args[0], func(id string) (string, error) {
				id, err := ws.Resolve(cmd.Context(), id)
				if err != nil {
					return "", err
				}
				return ws.GetKnowledgeByLines(cmd.Context(), id, start, end)
			})
			if err != nil {
				return wsError(err)
			}
			return e.writeText(cmd.Context(), text+"\n")
		},
	}
	cmd.Flags().IntVar(&maxChars, "max-chars", workspace.DefaultMaxChars, "cap on the characters printed; 0 lifts it")
	cmd.Flags().StringVar(&session, "session", "", sessionFlagHelp)
	return cmd
}

// sessionFlagHelp describes --session of the reads by id: an id names one
// artifact of the namespace whatever its session, but for a plain tool
// result id that several sessions hold (workspace.Workspace.Resolve), which
// names the given session's result.
const sessionFlagHelp = "the session whose result a plain id names (two sessions' results of one tool call id are ID and ID-2); without it such an id is an error listing them; also looks where earlier versions kept this session's artifacts"

func newWSGrepCmd(e *env, f *wsFlags) *cobra.Command {
	var (
		maxChars, maxResults int
		o                    workspace.SessionGrepOptions
	)
	cmd := &cobra.Command{
		Use:   "grep [ID] PATTERN",
		Short: "Search an artifact's lines, or every tool result (grep_knowledge)",
		Long: `grep searches the lines of artifact ID for PATTERN, an RE2 regular
expression, and prints "N:line" for matches, "N-line" for context lines
and "--" between groups. At most --max-results matching lines are shown
(0: all), with a warning when more match.

Without ID it searches every stored tool result of the namespace, of every
session (of one session with --session, one task with --task), and prints
"ID:N:line".`,
		Example: `  agentctx ws grep -i -C 2 tool_result_toolu_01 'error|fail'
  agentctx ws grep --session s1 'panic:'`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			mc, err := maxCharsOption(maxChars)
			if err != nil {
				return err
			}
			if o.Context < 0 {
				return usagef("-C must be 0 or more, got %d", o.Context)
			}
			if len(args) == 2 && o.TaskID != "" {
				return usagef("--task selects tool results to search when no ID is given")
			}
			o.MaxResults = maxResults
			if maxResults <= 0 {
				o.MaxResults = -1
			}
			ws, closeStore, err := f.open(cmd.Context(), e, false, workspace.Options{MaxChars: mc, SessionID: o.SessionID})
			if err != nil {
				return err
			}
			defer closeStore()
			var text string
			if len(args) == 2 {
				text, err = byID(args[0], func(id string) (string, error) {
					id, err := ws.Resolve(cmd.Context(), id)
					if err != nil {
						return "", err
					}
					return ws.GrepKnowledge(cmd.Context(), id, args[1], o.GrepOptions)
				})
			} else {
				text, err = ws.GrepSession(cmd.Context(), args[0], o)
			}
			if err != nil {
				return wsError(err)
			}
			return e.writeText(cmd.Context(), text+"\n")
		},
	}
	cmd.Flags().BoolVarP(&o.IgnoreCase, "ignore-case", "i", false, "match letters in any case")
	cmd.Flags().IntVarP(&o.Context, "context", "C", 0, "lines of context before and after each match")
	cmd.Flags().IntVar(&maxResults, "max-results", workspace.DefaultMaxResults, "most matching lines shown; 0 shows all")
	cmd.Flags().IntVar(&maxChars, "max-chars", workspace.DefaultMaxChars, "cap on the characters printed; 0 lifts it")
	cmd.Flags().StringVar(&o.SessionID, "session", "", "without ID: search only this session's tool results (default: every session); with ID: the session whose result a plain id names")
	cmd.Flags().StringVar(&o.TaskID, "task", "", "without ID: search only this task's tool results")
	markNoEnv(cmd, "session") // a filter: without it, every session is searched
	return cmd
}

func newWSLsCmd(e *env, f *wsFlags) *cobra.Command {
	var (
		contextType, session, task, bizID string
		meta                              []string
		limit                             int
	)
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List artifacts by metadata (query_artifacts)",
		Long: `ls prints the artifacts whose metadata matches every filter given, as a
JSON list ordered by creation time: id, type, metadata, created_at, and
sizes (chars, lines, bytes, sha256), of every session of the namespace
unless --session names one. A filter given as "" matches artifacts that
lack the key.`,
		Example: `  agentctx ws ls --session s1
  agentctx ws ls --meta tool_name=Bash --limit 10`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			filter := workspace.Filter{Metadata: workspace.Metadata{}, Limit: limit}
			if limit < 0 {
				return usagef("--limit must be 0 (no limit) or more, got %d", limit)
			}
			for flag, key := range map[string]string{"context-type": workspace.KeyContextType, "session": workspace.KeySessionID,
				"task": workspace.KeyTaskID, "biz-id": workspace.KeyBizID} {
				if cmd.Flags().Changed(flag) {
					v, _ := cmd.Flags().GetString(flag)
					filter.Metadata[key] = v
				}
			}
			for _, kv := range meta {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return usagef("--meta wants KEY=VALUE, got %q", kv)
				}
				filter.Metadata[k] = v
			}
			ws, closeStore, err := f.open(cmd.Context(), e, false, workspace.Options{})
			if err != nil {
				return err
			}
			defer closeStore()
			list, err := ws.Query(cmd.Context(), filter)
			if err != nil {
				return wsError(err)
			}
			return e.writeJSON(cmd.Context(), list)
		},
	}
	cmd.Flags().StringVar(&contextType, "context-type", "", "match metadata context_type (tool_result for offloaded tool results)")
	cmd.Flags().StringVar(&session, "session", "", "match metadata session_id (default: every session)")
	cmd.Flags().StringVar(&task, "task", "", "match metadata task_id")
	cmd.Flags().StringVar(&bizID, "biz-id", "", "match metadata biz_id (the tool call id)")
	cmd.Flags().StringArrayVar(&meta, "meta", nil, "match any metadata key: KEY=VALUE (repeatable)")
	cmd.Flags().IntVar(&limit, "limit", 0, "most artifacts listed; 0 lists all")
	markNoEnv(cmd, "limit", "session") // filters here
	return cmd
}

// asSentText returns the text of the tool result artifact id was stored
// from, as the agent sent it (workspace.OriginalContent).
func asSentText(ctx context.Context, ws *workspace.Workspace, id string) (string, error) {
	a, err := ws.Get(ctx, id)
	if err != nil {
		return "", err
	}
	if tok, ok := workspace.SentJSON(a); ok {
		// A string no text can hold (a lone surrogate): its JSON as sent.
		return string(tok), nil
	}
	c, err := workspace.OriginalContent(a)
	if err != nil {
		return "", err
	}
	return c.AsText(), nil
}
