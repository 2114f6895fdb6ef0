package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/app/projectws"
	"github.com/agentctx/agentctx/internal/base/fsutil"
	"github.com/agentctx/agentctx/internal/base/textfmt"
	"github.com/agentctx/agentctx/offload"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/prune"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/tokens"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/dirstore"
	"github.com/agentctx/agentctx/workspace/pgstore"
	"github.com/agentctx/agentctx/workspace/sqlitestore"
)

// prepareFlags are the flags of every step, shared by prepare and eval.
type prepareFlags struct {
	encoding string

	noRepair bool

	noPrune     bool
	nowFlag     string
	maxAge      time.Duration
	keepRecent  int
	placeholder string
	countErrors bool
	tools       []string
	byShape     bool

	offloadMode string
	workspace   string
	store       string
	namespace   string
	session     string
	task, agent string
	inlineLimit int
	dir         string
	minChars    int

	noCompact bool
	summaryFlags

	verify    bool
	onReplace bool
	readBack  string

	clearAtLeast int
	clearTrigger float64
	clearing     string
	trigger      string
	estimate     string
}

// register adds the flags; eval leaves out those that name where output
// goes (it writes to a scratch directory) and the session.
func (f *prepareFlags) register(fs *pflag.FlagSet, eval bool) {
	fs.StringVar(&f.encoding, "encoding", tokens.O200kBaseName, "tokenizer: o200k_base or cl100k_base")
	fs.BoolVar(&f.noRepair, "no-repair", false, "do not repair tool pairing (the output is still validated)")

	fs.BoolVar(&f.noPrune, "no-prune", false, "do not prune stale terminal output")
	fs.StringVar(&f.nowFlag, "now", "", "the current time for prune, RFC 3339 or epoch milliseconds (default the system clock)")
	fs.DurationVar(&f.maxAge, "max-age", prune.DefaultMaxAge, "prune results strictly older than this")
	fs.IntVar(&f.keepRecent, "keep-recent", prune.DefaultKeepRecent, "always keep this many most recent non-error results")
	fs.StringVar(&f.placeholder, "placeholder", prune.DefaultPlaceholder, "the content that replaces a pruned result")
	fs.BoolVar(&f.countErrors, "count-errors", false, "let error results take places among the --keep-recent most recent")
	fs.StringSliceVar(&f.tools, "tool", prune.DefaultToolNames(), "a tool whose results are terminal output (repeatable; --tool= for none)")
	fs.BoolVar(&f.byShape, "by-shape", false, byShapeHelp)
	fs.StringVar(&f.estimate, "estimate", "count", "how to estimate the provider's count before usage is known: count (our count as it is) or claude (scaled by Claude's measured ratio)")
	fs.StringVar(&f.clearing, "clearing", string(pipeline.ClearPriced), "when stale results already sent are cleared: priced (when the reads saved until the next compaction cost more than rewriting the prompt cache from the edit on) or batched (--clear-at-least tokens at once, from --clear-trigger)")
	fs.StringVar(&f.trigger, "trigger", "", "when a session is compacted: priced (at the size whose requests cost least, from a quarter of --limit up to --threshold; the default with --clearing priced) or threshold (at --threshold only; the default with --clearing batched)")
	fs.IntVar(&f.clearAtLeast, "clear-at-least", pipeline.DefaultClearAtLeast, "apply newly stale results of a session in batches freeing at least this many tokens (-1: every one at once)")
	fs.Float64Var(&f.clearTrigger, "clear-trigger", pipeline.DefaultClearTrigger, "and only once the request reaches this ratio of the compaction trigger (-1: at any size)")

	fs.StringVar(&f.offloadMode, "offload", string(pipeline.OffloadWorkspace), "offload mode: workspace (store every result, index the large ones), files (--dir, --min-chars) or none")
	fs.IntVar(&f.inlineLimit, "inline-limit", workspace.DefaultInlineLimit, "with --offload workspace: replace results of at least this many characters by a reference")
	fs.IntVar(&f.minChars, "min-chars", offload.DefaultMinChars, "with --offload files: offload results of at least this many characters")
	fs.StringVar(&f.task, "task", "", "task_id written on every artifact")
	fs.StringVar(&f.agent, "agent", "", "agent_id written on every artifact")

	fs.BoolVar(&f.noCompact, "no-compact", false, "do not compact")
	f.summaryFlags.register(fs)

	if eval {
		return
	}
	fs.StringVar(&f.workspace, "workspace", pipeline.DefaultWorkspaceDir, "workspace directory, or a SQLite file (.db, .sqlite, .sqlite3)")
	fs.StringVar(&f.store, "store", "", storeFlagHelp)
	fs.StringVar(&f.namespace, "namespace", workspace.DefaultNamespace, "namespace inside the workspace")
	fs.StringVar(&f.session, "session", compact.DefaultSessionID, "the conversation's session: repeated calls with one session re-apply its earlier decisions (state in <workspace>/.sessions); its artifacts are read back with --session")
	fs.StringVar(&f.dir, "dir", offload.DefaultDir, dirHelp)
	fs.BoolVar(&f.verify, "verify", false, "read back every artifact, file and archive written and compare it with the original")
	fs.BoolVar(&f.onReplace, "store-on-replace", false, "store a tool result under 4,000 characters (and under --inline-limit) only when it is pruned, not every one when first seen (as agentctx proxy does)")
	fs.StringVar(&f.readBack, "read-back", string(pipeline.ReadBackTools), "how the printed request lets the model read back what a reference stands for: tools (declare get_knowledge_by_id and the other read tools in the body's tools when a reference names them), paths (add each artifact's content file path to its reference, for agents with a file tool) or none")
}

// options checks the flags and returns the pipeline options they make
// (without store, directories and session, which depend on the input).
func (f *prepareFlags) options(e *env, changed func(string) bool) (pipeline.Options, error) {
	var o pipeline.Options
	if err := f.checkRanges(); err != nil {
		return o, err
	}
	switch pipeline.OffloadMode(f.offloadMode) {
	case pipeline.OffloadWorkspace, pipeline.OffloadFiles, pipeline.OffloadNone:
		o.Offload = pipeline.OffloadMode(f.offloadMode)
	default:
		return o, usagef("invalid --offload %q: want workspace, files or none", f.offloadMode)
	}
	if err := f.contradictions(changed); err != nil {
		return o, err
	}
	now := time.Now
	if changed("now") {
		t, ok := agentctx.ParseTime(f.nowFlag)
		if !ok {
			return o, usagef("invalid --now %q: want an RFC 3339 time or epoch milliseconds", f.nowFlag)
		}
		now = func() time.Time { return t }
	}
	enc, err := tokens.Get(f.encoding)
	if err != nil {
		return o, usagef("--encoding: %v", err)
	}
	o.Counter = enc
	o.Now = now
	o.Logger = e.logger
	o.NoRepair = f.noRepair
	o.Verify = f.verify
	o.StoreOnReplace = f.onReplace

	o.NoPrune = f.noPrune
	o.Prune = f.pruneOptions(changed)
	if err := f.clearingOptions(&o); err != nil {
		return o, err
	}

	o.Workspace = workspace.Options{TaskID: f.task, AgentID: f.agent, InlineLimit: f.inlineLimit}
	o.Files = offload.BatchOptions{MinChars: f.minChars}

	o.NoCompact = f.noCompact
	if o.Compact, err = f.compactOptions(e, !f.noCompact); err != nil {
		return o, err
	}
	o.MessageCounter = tokens.NewMessageCounter(tokens.MessageOptions{Counter: enc, Logger: e.logger, Parallelism: -1})
	if err := o.Validate(); err != nil {
		return o, err // pipeline.ErrInvalidOption: bad usage (ExitCode)
	}
	return o, nil
}

// checkRanges checks the flags that have a range of their own.
func (f *prepareFlags) checkRanges() error {
	switch {
	case f.encoding != tokens.O200kBaseName && f.encoding != tokens.Cl100kBaseName:
		_, err := tokens.Get(f.encoding)
		return usagef("--encoding: %v", err)
	case f.maxAge < 0:
		return usagef("invalid --max-age %s: must not be negative", f.maxAge)
	case f.keepRecent < 0:
		return usagef("invalid --keep-recent %d: must not be negative", f.keepRecent)
	case f.placeholder == "":
		return usagef("invalid --placeholder: must not be empty")
	case f.inlineLimit < 1:
		return usagef("invalid --inline-limit %d: must be at least 1", f.inlineLimit)
	case f.minChars < 1:
		return usagef("invalid --min-chars %d: must be at least 1", f.minChars)
	}
	if err := f.summaryFlags.checkRanges(); err != nil {
		return err
	}
	return checkRatios(f.threshold, f.tailRatio)
}

// byShapeHelp is the help of --by-shape (prune, prepare, eval, and the
// live commands, where it is on by default).
const byShapeHelp = "also treat as terminal output, whatever its tool, a result shaped like a shell transcript: an exit status line with a Command:/Output: header or a stdout/stderr marker (Gemini CLI, Qwen Code), or Cline's \"Command executed.\" then \"Output:\""

// pruneOptions returns the prune step's options.
func (f *prepareFlags) pruneOptions(changed func(string) bool) prune.Options {
	o := prune.Options{MaxAge: f.maxAge, KeepRecent: f.keepRecent, CountErrors: f.countErrors, Placeholder: f.placeholder, ByShape: f.byShape}
	// On the command line 0 is literal; in Options it means the default.
	if f.maxAge == 0 {
		o.MaxAge = -1
	}
	if f.keepRecent == 0 {
		o.KeepRecent = -1
	}
	if changed("tool") {
		o.ToolNames = append([]string{}, f.tools...)
	}
	return o
}

// clearingOptions checks --clear-at-least, --clear-trigger, --estimate and
// --clearing and sets them in o.
func (f *prepareFlags) clearingOptions(o *pipeline.Options) error {
	switch {
	case f.clearAtLeast < -1:
		return usagef("invalid --clear-at-least %d: want -1 (every stale result at once) or a number of tokens", f.clearAtLeast)
	case f.clearTrigger > 1 || f.clearTrigger < 0 && f.clearTrigger != -1:
		return usagef("invalid --clear-trigger %v: want a ratio from 0 to 1, or -1", f.clearTrigger)
	}
	switch f.estimate {
	case "count":
	case "claude":
		o.EstimateRatio = pipeline.ClaudeRatio
	default:
		return usagef("invalid --estimate %q: want count or claude", f.estimate)
	}
	clearing, err := pipeline.ParseClearing(f.clearing)
	if err != nil {
		return usagef("invalid --clearing %q: want priced or batched", f.clearing)
	}
	o.Clearing = clearing
	if o.Trigger, err = pipeline.ParseTrigger(f.trigger); err != nil {
		return usagef("invalid --trigger %q: want priced or threshold", f.trigger)
	}
	o.ClearAtLeast, o.ClearTrigger = f.clearAtLeast, f.clearTrigger
	if f.clearAtLeast == 0 {
		o.ClearAtLeast = -1 // 0 tokens: every stale result at once
	}
	if f.clearTrigger == 0 {
		o.ClearTrigger = -1
	}
	return nil
}

// contradictions rejects flags given together when one turns off the step
// the other sets up, or asks for the opposite.
func (f *prepareFlags) contradictions(changed func(string) bool) error {
	both := func(flag string, others ...string) error {
		for _, o := range others {
			if changed(o) {
				return usagef("--%s and --%s cannot be used together", flag, o)
			}
		}
		return nil
	}
	if f.noPrune {
		if err := both("no-prune", "now", "max-age", "keep-recent", "placeholder", "count-errors", "tool"); err != nil {
			return err
		}
	}
	if f.noCompact {
		if err := both("no-compact", "force", "threshold", "tail-ratio", "max-retries", "summarizer", "model", "api-key", "base-url",
			"timeout", "backoff", "input-tokens", "no-archive"); err != nil {
			return err
		}
	}
	mode := pipeline.OffloadMode(f.offloadMode)
	for _, flag := range []struct {
		name string
		mode pipeline.OffloadMode
	}{{"inline-limit", pipeline.OffloadWorkspace}, {"task", pipeline.OffloadWorkspace}, {"agent", pipeline.OffloadWorkspace}, {"min-chars", pipeline.OffloadFiles}} {
		if changed(flag.name) && mode != flag.mode {
			return usagef("--%s goes with --offload %s, not --offload %s", flag.name, flag.mode, mode)
		}
	}
	return nil
}

// openStore opens the workspace store at a location (see location): a
// PostgreSQL URL, a directory, or a SQLite file for a path ending in .db,
// .sqlite or .sqlite3.
func openStore(ctx context.Context, path string) (workspace.Store, error) {
	if isPostgresURL(path) {
		return pgstore.Open(ctx, path, pgstore.Options{})
	}
	if err := checkWorkspacePath(path); err != nil {
		return nil, err
	}
	if !isSQLitePath(path) {
		s, err := dirstore.Open(path, dirstore.Options{})
		if err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
		return s, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	return sqlitestore.Open(ctx, path, sqlitestore.Options{})
}

// dirHelp is --dir's help in prepare and the live commands, which share
// their pipeline flags (issue 48: each said something else).
const dirHelp = "directory of the files --offload files writes, and of the archives unless --offload workspace (the default), which keeps them as workspace artifacts compact_<hash> (created if missing)"

// conversation is one conversation to prepare and where it came from.
type conversation struct {
	file string             // the input file ("" for stdin)
	name string             // the conversation's name in a document that holds several
	key  string             // what keeps its workspace namespace and session apart; "" for the only one
	doc  *agentctx.Document // the conversation itself
}

// conversationsOf splits a document into its conversations. key names each
// when there are several, or when prefix says the input is one of several.
func conversationsOf(file, prefix string, doc *agentctx.Document) []conversation {
	docs := doc.Conversations()
	out := make([]conversation, len(docs))
	for i, d := range docs {
		c := conversation{file: file, doc: d, key: prefix}
		if len(docs) > 1 {
			c.name = d.Name
			if c.name == "" {
				c.name = fmt.Sprintf("conversation-%d", i+1)
			}
			c.key = strings.TrimPrefix(prefix+"/"+c.name, "/")
		}
		out[i] = c
	}
	return out
}

// prepareRun holds what the conversations of one prepare run share.
type prepareRun struct {
	e        *env
	f        *prepareFlags
	base     pipeline.Options
	store    workspace.Store
	budget   *workspace.Budget // the store's byte budget, one for every conversation (one count of the store)
	sessions session.Store
	keepMeta bool // keep timestamp and messageStatus in what is sent
	readBack pipeline.ReadBack
	created  []func() error // projectws.Creating of the directories the run may make
}

// toSend returns the prepared messages as they are sent: without the
// metadata members no model API accepts, unless --keep-metadata.
func (r *prepareRun) toSend(msgs []agentctx.Message) []agentctx.Message {
	if r.keepMeta {
		return msgs
	}
	return agentctx.StripMetadata(msgs)
}

// pipelineFor builds the pipeline of one conversation: its own namespace,
// session, files directory and archive directory when it is one of several.
func (r *prepareRun) pipelineFor(c conversation) (*pipeline.Pipeline, error) {
	o := r.base
	o.Store = r.store
	o.Workspace.Budget = r.budget
	o.Sessions = r.sessions
	o.SessionID = r.f.session
	o.Workspace.Namespace = r.f.namespace
	o.Files.Dir = r.f.dir
	o.Compact.Dir = r.f.dir
	if c.key != "" {
		// Each conversation is a session of its own: its state and its
		// artifacts are kept apart from the others'.
		o.SessionID = strings.TrimPrefix(r.f.session+"/"+c.key, compact.DefaultSessionID+"/")
		if safe, err := fsutil.SafeName(c.key); err == nil {
			o.Files.Dir = filepath.Join(r.f.dir, safe)
		}
	}
	return pipeline.New(o)
}

// prepareOutput is what prepare prints for one conversation.
type prepareOutput struct {
	Conversation string             `json:"conversation,omitempty"` // in a document holding several
	Messages     []agentctx.Message `json:"messages"`               // the messages to send
	Report       pipeline.Report    `json:"report"`                 // what each step did
}

// prepareFileOutput is what prepare --out prints for one conversation: the
// messages are in the output file.
type prepareFileOutput struct {
	File         string          `json:"file"`                   // the input file
	Conversation string          `json:"conversation,omitempty"` // in a document holding several
	Output       string          `json:"output"`                 // the file written
	Report       pipeline.Report `json:"report"`                 // what each step did
}

// prepareOutFlags are the flags of prepare that say what it prints and
// where (eval, which shares prepareFlags, has none of them).
type prepareOutFlags struct {
	out, summary           string
	messagesOnly, keepMeta bool
	jsonReports            bool
	allowOverLimit         bool
}

func (o *prepareOutFlags) register(fs *pflag.FlagSet) {
	fs.StringVarP(&o.out, "out", "o", "", "write each FILE's prepared messages to this directory, in the input's shape")
	fs.StringVar(&o.summary, "summary", "auto", "human summary on stderr: auto (when it is a terminal), always or never")
	fs.BoolVar(&o.messagesOnly, "messages-only", false, "print the messages without the other members of a request body (model, system, tools, ...)")
	fs.BoolVar(&o.keepMeta, "keep-metadata", false, "keep timestamp and messageStatus on the messages (removed from what is sent by default)")
	fs.BoolVar(&o.jsonReports, "json", false, "with --out: print the JSON reports on stdout even when it is a terminal")
	fs.BoolVar(&o.allowOverLimit, "allow-over-limit", false, "exit 0 when a prepared request is still over --limit (by default its JSON is printed and prepare exits 1)")
}

const prepareLong = `prepare is the one call an agent loop makes before every model request,
run on a saved transcript. In order:

  repair    answer unanswered tool calls with a synthetic error result and
            drop results that answer no call;
  prune     replace stale successful terminal output with a placeholder
            (older than --max-age, not among the --keep-recent most recent);
  offload   store every tool result whole in the workspace (--workspace,
            artifact tool_result_<id>) and replace those of --inline-limit
            characters or more by a reference the agent reads back;
            --offload files writes results of --min-chars or more to
            <dir>/tool-result-<id>.md instead, and --offload none
            replaces nothing; in every mode the workspace keeps every
            result whole, so a pruned result names its stored original;
  count     count the tokens (plus a request body's top-level system and
            tool definitions, these in canonical JSON);
  compact   at --limit × --threshold tokens or more, archive the middle of
            the conversation in the workspace (artifact compact_<hash>, read
            back like any other) and replace it with a summary (once: a result still over the trigger is reported,
            not compacted again);
  validate  check that every tool call and result pair up.

A printed request that holds references can be sent as it is: with
--read-back tools (the default) the read tools they name
(get_knowledge_by_id, get_knowledge_by_lines, grep_knowledge, ...) are
declared in the body's "tools", in its API's shape, for an agent loop that
answers them from the workspace; --read-back paths adds each artifact's
content file path to its reference instead, for an agent with a file tool.

It prints {"messages", "report"}: the messages to send and, per step, what
changed, characters and tokens saved, artifacts and files written, and time.
A request body keeps its other members (model, system, tools, max_tokens,
...) around "messages", so what is printed is the request to send plus
"report"; --messages-only leaves them out. The metadata agents keep on
messages (timestamp, messageStatus) is not part of any API and is removed
from the messages to send unless --keep-metadata. The input file is never
modified. When stderr is a terminal a short summary is printed there too
(--summary always|never to choose).

With --out DIR it prepares each FILE and writes the messages to DIR under
the file's name, in the input's shape, printing one JSON report per line
(on a terminal only with --json: the progress bar and the summary are shown
there instead). A file holding several conversations (an OpenHands
output.jsonl) is prepared one conversation at a time; several conversations
keep apart in the workspace under <namespace>/<name>, and their sessions are
named after them.

When a prepared request is still over --limit (in the provider's estimated
tokens: compaction is off, failed, or found nothing to summarize), its JSON
is printed all the same and prepare exits 1 with the reason on stderr;
--allow-over-limit exits 0 instead.`

func newPrepareCmd(e *env) *cobra.Command {
	f := &prepareFlags{}
	of := &prepareOutFlags{}
	cmd := &cobra.Command{
		Use:   "prepare [FILE] | prepare --out DIR FILE...",
		Short: "Prepare a conversation for the next model request: repair, prune, offload, count, compact, validate",
		Long:  prepareLong,
		Example: `  agentctx prepare --limit 100000 session.jsonl > prepared.json
  agentctx prepare --limit 14000 examples/session.json | jq .report
  agentctx prepare --messages-only --no-compact < request.json
  agentctx prepare --out prepared/ --limit 100000 transcripts/*.jsonl
  agentctx prepare --summarizer openai --base-url http://localhost:11434/v1 --model qwen3:8b session.jsonl`,
		Args: func(cmd *cobra.Command, args []string) error {
			if of.out == "" {
				return cobra.MaximumNArgs(1)(cmd, args)
			}
			return cobra.MinimumNArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPrepare(cmd, e, f, of, args)
		},
	}
	f.register(cmd.Flags(), false)
	of.register(cmd.Flags())
	return cmd
}

// check checks the flags of where prepare writes, alone and with the
// pipeline's.
func (of *prepareOutFlags) check(f *prepareFlags) error {
	switch {
	case f.session == "":
		return usagef("invalid --session: must not be empty")
	case f.namespace == "":
		return usagef("invalid --namespace: must not be empty")
	case f.workspace == "" && f.offloadMode == string(pipeline.OffloadWorkspace):
		return usagef("invalid --workspace: must not be empty")
	case f.dir == "":
		return usagef("invalid --dir: must not be empty")
	case of.out == "" && of.jsonReports:
		return usagef("--json goes with --out (without --out the JSON is always printed)")
	case of.out != "" && of.messagesOnly:
		return usagef("--messages-only and --out cannot be used together: --out writes each file in its own shape")
	}
	return nil
}

// runPrepare runs prepare: the flags checked before any input is read,
// then every FILE into --out, or the one input to stdout.
func runPrepare(cmd *cobra.Command, e *env, f *prepareFlags, of *prepareOutFlags, args []string) error {
	ctx := cmd.Context()
	showSummary, err := summaryMode(of.summary, e.s.ErrIsTerminal)
	if err != nil {
		return err
	}
	if err := of.check(f); err != nil {
		return err
	}
	base, err := f.options(e, cmd.Flags().Changed)
	if err != nil {
		return err
	}
	rb, err := pipeline.ParseReadBack(f.readBack)
	if err != nil {
		return usagef("invalid --read-back: %q (want tools, paths or none)", f.readBack)
	}
	run := &prepareRun{e: e, f: f, base: base, keepMeta: of.keepMeta, readBack: rb}
	if of.out != "" {
		printJSON := of.jsonReports || !e.s.OutIsTerminal
		reps, err := run.prepareFiles(ctx, of.out, args, showSummary, printJSON)
		if err != nil || of.allowOverLimit {
			return err
		}
		return overLimit(reps)
	}
	reps, err := run.prepareInput(ctx, args, of.messagesOnly, showSummary)
	if err != nil || of.allowOverLimit {
		return err
	}
	return overLimit(reps)
}

// prepareInput prepares the one input (FILE or stdin), each of its
// conversations, prints their JSON (and summaries) and returns their
// reports.
func (r *prepareRun) prepareInput(ctx context.Context, args []string, messagesOnly, showSummary bool) ([]namedReport, error) {
	e := r.e
	doc, err := e.readInput(ctx, args)
	if err != nil {
		return nil, err
	}
	file := ""
	if len(args) > 0 && args[0] != "-" {
		file = args[0]
	}
	if err := r.openStore(ctx); err != nil {
		return nil, err
	}
	defer r.closeStore()
	convs := conversationsOf(file, "", doc)
	var outs []prepareOutput
	docs := make([]*agentctx.Document, len(convs))
	for i, c := range convs {
		res, err := r.prepareOne(ctx, c)
		if err != nil {
			return nil, err
		}
		if docs[i], err = r.withReadTools(c.doc, res.Messages); err != nil {
			return nil, err
		}
		res.Report.AddReadTools(r.extraTokens(docs[i]) - r.extraTokens(c.doc))
		outs = append(outs, prepareOutput{Conversation: c.name, Messages: r.toSend(res.Messages), Report: res.Report})
	}
	for i, o := range outs {
		if err := e.writeDocResult(ctx, docs[i], o.Messages, o, messagesOnly); err != nil {
			return nil, err
		}
	}
	if showSummary {
		for _, o := range outs {
			e.printSummary(file, o.Conversation, "", o.Report)
		}
	}
	reps := make([]namedReport, len(outs))
	for i, o := range outs {
		reps[i] = namedReport{file: file, name: o.Conversation, rep: o.Report}
	}
	return reps, nil
}

// namedReport is the report of one prepared conversation and where it
// came from.
type namedReport struct {
	file, name string
	rep        pipeline.Report
}

// errOverLimit is the error of a prepare run that printed a request still
// over the limit: the provider would reject it.
var errOverLimit = errors.New("over the limit")

// overLimit returns an error naming the first prepared request whose
// estimated tokens are over its limit, and why compaction did not bring
// it under.
func overLimit(reps []namedReport) error {
	for _, r := range reps {
		rep := r.rep
		if rep.Limit <= 0 || rep.EstimatedTokens <= rep.Limit {
			continue
		}
		where := strings.TrimPrefix(r.file+": "+r.name, ": ")
		where = strings.TrimSuffix(where, ": ")
		if where != "" {
			where += ": "
		}
		// One count (the request's, as the provider estimates it) and
		// one number style (issue 48: 6047 and 4,834 in one line).
		return fmt.Errorf("%sthe prepared request is %s tokens, %w of %s: %s (its JSON is printed; --allow-over-limit to exit 0)",
			where, textfmt.Thousands(rep.EstimatedTokens), errOverLimit, textfmt.Thousands(rep.Limit), overLimitReason(rep))
	}
	return nil
}

// overLimitReason says why a request over the limit was not brought under
// it.
func overLimitReason(rep pipeline.Report) string {
	s := rep.Step(pipeline.StepCompact)
	switch {
	case s == nil:
		return "not compacted"
	case s.Skipped:
		return "compaction is off"
	case rep.ReadToolsTokens > 0 && rep.EstimatedTokens-rep.ReadToolsTokens <= rep.Limit:
		return "the read tools declared for the references add " + textfmt.Thousands(rep.ReadToolsTokens) + " tokens (--read-back paths or none declares none)"
	case s.Compact.Why() != "" && !strings.HasPrefix(s.Compact.Why(), "not needed"):
		return s.Compact.Why()
	}
	return "compaction could not bring it under"
}

func summaryMode(s string, terminal bool) (bool, error) {
	switch s {
	case "auto":
		return terminal, nil
	case "always":
		return true, nil
	case "never":
		return false, nil
	}
	return false, usagef("invalid --summary %q: want auto, always or never", s)
}

func (r *prepareRun) openStore(ctx context.Context) error {
	removeStaleTemp(r.f.dir, r.f.session)
	loc, err := location(r.f.store, r.f.workspace)
	if err != nil {
		return err
	}
	// The directories this run makes (nothing for bad input) get, inside
	// a git work tree, the ignore file that keeps them out of it, when the
	// run ends (closeStore).
	r.created = []func() error{projectws.Creating(r.f.dir)}
	if !isPostgresURL(loc) {
		r.created = append(r.created, projectws.Creating(loc))
	}
	if !r.base.Stateless {
		s, err := openSessions(ctx, loc)
		if err != nil {
			return err
		}
		r.sessions = s
	}
	if r.base.Offload != pipeline.OffloadWorkspace {
		return nil
	}
	s, err := openStore(ctx, loc)
	if err != nil {
		return err
	}
	r.store = s
	log := r.base.Workspace.Logger
	if log == nil {
		log = r.base.Logger
	}
	r.budget = workspace.NewBudget(s, workspace.BudgetOptions{SessionBytes: r.base.Workspace.SessionBytes,
		TotalBytes: r.base.Workspace.TotalBytes, Now: r.base.Now, Logger: log})
	return nil
}

func (r *prepareRun) closeStore() {
	if r.store != nil {
		r.store.Close()
	}
	if r.sessions != nil {
		r.sessions.Close()
	}
	for _, done := range r.created {
		if err := done(); err != nil {
			r.e.logger.Warn("prepare: the ignore file of a directory made in a git work tree", "error", err)
		}
	}
	r.created = nil
}

// prepareOne prepares one conversation with its own pipeline.
func (r *prepareRun) prepareOne(ctx context.Context, c conversation) (*pipeline.Result, error) {
	p, err := r.pipelineFor(c)
	if err != nil {
		// A bad option or store location is bad usage, a store that
		// cannot be opened a runtime failure (ExitCode).
		return nil, err
	}
	defer p.Close()
	res, err := p.PrepareDocument(ctx, c.doc)
	if err != nil {
		where := c.file
		if c.name != "" {
			where = strings.TrimPrefix(where+": "+c.name, ": ")
		}
		if where != "" {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		return nil, err
	}
	if r.readBack == pipeline.ReadBackPaths {
		res.Messages = p.WithPaths(res.Messages)
	}
	return res, nil
}

// extraTokens counts what doc sends besides its messages (system prompt,
// tool definitions), as the pipeline does.
func (r *prepareRun) extraTokens(doc *agentctx.Document) int {
	return tokens.NewMessageCounter(tokens.MessageOptions{Counter: r.base.Counter, CacheSize: -1}).CountRequestExtras(doc)
}

// withReadTools returns the document to print around the prepared
// messages: with the read tools declared when --read-back tools and the
// messages name one.
func (r *prepareRun) withReadTools(doc *agentctx.Document, msgs []agentctx.Message) (*agentctx.Document, error) {
	if r.readBack != pipeline.ReadBackTools {
		return doc, nil
	}
	out, _, err := pipeline.WithReadTools(doc, msgs)
	if err != nil {
		return nil, fmt.Errorf("declare the read tools: %w", err)
	}
	return out, nil
}

// fileReport is the report of one conversation prepare --out wrote.
type fileReport struct {
	file, name, out string
	rep             pipeline.Report
}

// prepareFiles is prepare --out DIR FILE...: every input is read and checked
// first, so that bad input writes nothing; then each is prepared and written
// to DIR under its own name.
func (r *prepareRun) prepareFiles(ctx context.Context, outDir string, files []string, showSummary, printJSON bool) ([]namedReport, error) {
	e := r.e
	if fi, err := os.Stat(outDir); err == nil && !fi.IsDir() {
		// A usage error, before anything is read or written (issue 48:
		// exit 1 after the inputs were checked).
		return nil, usagef("--out %s: not a directory (--out names the directory the prepared files are written to)", outDir)
	}
	outputs, err := r.checkFiles(ctx, outDir, files)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		if errors.Is(err, syscall.ENOTDIR) {
			return nil, usagef("--out: %v", err)
		}
		return nil, fmt.Errorf("--out: %w", err)
	}
	removeStaleTemp(outDir)
	if err := r.openStore(ctx); err != nil {
		return nil, err
	}
	defer r.closeStore()

	bar := newProgress(e.s.Err, e.s.ErrIsTerminal && len(files) > 1, len(files))
	var summaries []fileReport
	for i, file := range files {
		if err := ctx.Err(); err != nil {
			bar.finish()
			return nil, err
		}
		bar.update(i, filepath.Base(file))
		prefix := ""
		if len(files) > 1 {
			prefix = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
		}
		done, err := r.prepareFile(ctx, file, outputs[i], prefix, printJSON)
		if err != nil {
			bar.finish()
			return nil, err
		}
		summaries = append(summaries, done...)
	}
	bar.update(len(files), "")
	bar.finish()
	if showSummary {
		for _, d := range summaries {
			e.printSummary(d.file, d.name, d.out, d.rep)
		}
	}
	reps := make([]namedReport, len(summaries))
	for i, d := range summaries {
		reps[i] = namedReport{file: d.file, name: d.name, rep: d.rep}
	}
	return reps, nil
}

// checkFiles returns the output path of each input file in outDir, after
// checking that no two inputs share one, that none is overwritten by its
// own output, and that each input reads.
func (r *prepareRun) checkFiles(ctx context.Context, outDir string, files []string) ([]string, error) {
	outputs := make([]string, len(files))
	seen := make(map[string]string)
	for i, file := range files {
		if file == "-" {
			return nil, usagef("--out takes files, not stdin")
		}
		out := filepath.Join(outDir, filepath.Base(file))
		if prev, dup := seen[out]; dup {
			return nil, usagef("%s and %s would both be written to %s", prev, file, out)
		}
		seen[out] = file
		if same(out, file) {
			return nil, usagef("%s would be overwritten by its own output: choose another --out", file)
		}
		outputs[i] = out
		if _, err := r.e.readInput(ctx, []string{file}); err != nil {
			return nil, err
		}
	}
	return outputs, nil
}

// prepareFile prepares each conversation of one input file, prints their
// JSON reports when printJSON, and writes the file to out in its own shape.
// prefix keeps its sessions apart from other files' ("" for the only one).
func (r *prepareRun) prepareFile(ctx context.Context, file, out, prefix string, printJSON bool) ([]fileReport, error) {
	e := r.e
	doc, err := e.readInput(ctx, []string{file})
	if err != nil {
		return nil, err
	}
	var msgs []agentctx.Message
	var perConv [][]agentctx.Message
	var reps []fileReport
	for _, c := range conversationsOf(file, prefix, doc) {
		res, err := r.prepareOne(ctx, c)
		if err != nil {
			return nil, err
		}
		// A request body is written ready to send (toSend); a
		// transcript is written back with what it read, timestamps
		// included.
		keep := res.Messages
		if doc.Format == agentctx.FormatObject {
			keep = r.toSend(res.Messages)
		}
		msgs = append(msgs, keep...)
		perConv = append(perConv, keep)
		reps = append(reps, fileReport{file, c.name, out, res.Report})
	}
	before := doc
	if doc, err = r.withReadTools(doc, msgs); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if doc != before {
		// The file's last conversation is sent with the read tools.
		reps[len(reps)-1].rep.AddReadTools(r.extraTokens(doc) - r.extraTokens(before))
	}
	if printJSON {
		for _, d := range reps {
			if err := e.writeJSON(ctx, prepareFileOutput{File: d.file, Conversation: d.name, Output: d.out, Report: d.rep}); err != nil {
				return nil, err
			}
		}
	}
	// Each conversation goes back to its own place (an OpenHands record
	// per conversation).
	prepared, err := doc.WithConversations(perConv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var buf bytes.Buffer
	if err := prepared.Encode(&buf); err != nil {
		return nil, fmt.Errorf("%s: encode: %w", file, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := fsutil.WriteFile(out, buf.Bytes(), fsutil.Options{}); err != nil {
		return nil, fmt.Errorf("write %s: %w", out, err)
	}
	return reps, nil
}

// same reports whether two paths name one file.
func same(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	if err1 == nil && err2 == nil {
		return os.SameFile(fa, fb)
	}
	aa, _ := filepath.Abs(a)
	ab, _ := filepath.Abs(b)
	return aa == ab
}

// printSummary writes the human summary of one prepared conversation.
func (e *env) printSummary(file, name, out string, rep pipeline.Report) {
	title := file
	if title == "" {
		title = "stdin"
	}
	if name != "" {
		title += " · " + name
	}
	if out != "" {
		title += " → " + out
	}
	fmt.Fprintf(e.s.Err, "agentctx prepare: %s\n", title)
	for _, line := range strings.SplitAfter(strings.TrimRight(rep.String(), "\n"), "\n") {
		fmt.Fprintf(e.s.Err, "  %s", line)
	}
	fmt.Fprintln(e.s.Err)
}

// progress draws a progress bar on a terminal, rewriting one line.
type progress struct {
	w       io.Writer
	on      bool
	total   int
	started time.Time
}

func newProgress(w io.Writer, on bool, total int) *progress {
	return &progress{w: w, on: on, total: total, started: time.Now()}
}

const progressWidth = 30

func (p *progress) update(done int, label string) {
	if !p.on || p.total == 0 {
		return
	}
	filled := done * progressWidth / p.total
	if len(label) > 40 {
		label = label[:37] + "..."
	}
	fmt.Fprintf(p.w, "\r\x1b[K[%s%s] %d/%d %s %s", strings.Repeat("#", filled), strings.Repeat(".", progressWidth-filled),
		done, p.total, time.Since(p.started).Round(100*time.Millisecond), label)
}

func (p *progress) finish() {
	if p.on && p.total > 0 {
		fmt.Fprintln(p.w)
		p.on = false
	}
}
