package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/offload"
	"github.com/agentctx/agentctx/prune"
	"github.com/agentctx/agentctx/tokens"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/dirstore"
)

// OffloadMode selects what the offload step does.
type OffloadMode string

// Offload modes.
const (
	// OffloadWorkspace stores every tool result whole as a workspace
	// artifact and replaces the content of those of 40,000 characters or
	// more by a <knowledge_list> reference (SPEC §5). The default.
	OffloadWorkspace OffloadMode = "workspace"
	// OffloadFiles writes every tool result of 100 characters or more to
	// <dir>/tool-result-<id>.md and replaces its content by
	// "[Content offloaded to: ./tool-result-<id>.md]" (SPEC §3.1).
	OffloadFiles OffloadMode = "files"
	// OffloadNone turns the step off.
	OffloadNone OffloadMode = "none"
)

// DefaultWorkspaceDir is the directory of the default workspace store.
const DefaultWorkspaceDir = ".agentctx"

// ErrInvalidOption is matched (errors.Is) by the error New returns for an
// option out of its range.
var ErrInvalidOption = errors.New("pipeline: invalid option")

// Options configure a Pipeline. The zero value means the embedded defaults,
// with no API key and no server: repair on; prune with the rules of seed
// 004 (placeholder "此命令返回内容已过时", older than 15 minutes, the 5 most recent
// kept); every tool result stored in a directory workspace under .agentctx
// and those of 40,000 characters or more replaced by a reference; o200k_base
// token counts; compaction at 92% of a 200,000-token window with the offline
// extractive summarizer and archives under .offload/default.
//
// The options of the steps (Prune, Workspace, Files, Compact) are those of
// their packages, with the same defaults; their clock, logger, token counter
// and session id are taken from the fields below when left unset.
type Options struct {
	// Counter counts text; nil means tokens.O200kBase(). MessageCounter,
	// when set, is used instead: share one between Pipelines (one per
	// session) so its cache spares re-tokenizing. Nil means one built by
	// New over Counter, kept for the Pipeline's life.
	Counter        tokens.Counter
	MessageCounter *tokens.MessageCounter
	// ReservedTokens are tokens sent with every request besides the
	// messages (a top-level system prompt, tool definitions); they count
	// toward the compaction trigger. PrepareDocument adds the document's
	// top-level system prompt to them.
	ReservedTokens int

	// NoRepair turns the repair step off. The validate step still runs.
	NoRepair bool

	// NoPrune turns the prune step off. Prune configures it (zero: seed
	// 004).
	NoPrune bool
	Prune   prune.Options

	// Offload selects the offload step's mode; "" means OffloadWorkspace.
	Offload OffloadMode
	// Store keeps the artifacts in mode OffloadWorkspace. Nil means a
	// directory store (dirstore) at WorkspaceDir, opened by New and closed
	// by Close. A Store given here is not closed by the Pipeline.
	Store workspace.Store
	// WorkspaceDir is the directory of the default store; "" means
	// DefaultWorkspaceDir.
	WorkspaceDir string
	// Workspace configures the workspace (namespace, agent, task, inline
	// limit, ...). Its SessionID defaults to SessionID.
	Workspace workspace.Options
	// Files configures mode OffloadFiles (directory, threshold).
	Files offload.BatchOptions

	// NoCompact turns the compact step off. Compact configures it (zero:
	// seed 002); its SessionID defaults to SessionID, and ReservedTokens
	// are added to its own.
	NoCompact bool
	Compact   compact.Options

	// SessionID names the conversation: the session_id of workspace
	// artifacts and the subdirectory of archives.
	SessionID string

	// Verify reads back everything the offload and compact steps wrote
	// and compares it with the original, byte for byte; the report says
	// what matched.
	Verify bool

	// Stateless makes every call independent of the ones before. By
	// default a Pipeline remembers its last compaction: when a later call
	// is given the same history grown by new messages, the messages that
	// were summarized are replaced by the same summary, so the list sent
	// keeps a stable beginning (provider prompt caches stay valid) and a
	// compaction is done, and archived, once rather than before every
	// request. The summary is only reused when the summarized messages are
	// byte for byte those given.
	Stateless bool

	// Now is the clock of prune ages, archive names and artifact times;
	// nil means time.Now. Durations in the report use the monotonic clock.
	Now func() time.Time
	// Logger receives the steps' logs; nil discards them.
	Logger *slog.Logger
}

// Validate reports an option out of range, wrapping ErrInvalidOption.
func (o *Options) Validate() error {
	switch o.Offload {
	case "", OffloadWorkspace, OffloadFiles, OffloadNone:
	default:
		return fmt.Errorf("%w: unknown Offload mode %q (want workspace, files or none)", ErrInvalidOption, o.Offload)
	}
	switch {
	case o.ReservedTokens < 0:
		return fmt.Errorf("%w: ReservedTokens %d is negative", ErrInvalidOption, o.ReservedTokens)
	case o.Files.MinChars < 0:
		return fmt.Errorf("%w: Files.MinChars %d is negative", ErrInvalidOption, o.Files.MinChars)
	case o.Workspace.InlineLimit < 0:
		return fmt.Errorf("%w: Workspace.InlineLimit %d is negative", ErrInvalidOption, o.Workspace.InlineLimit)
	}
	if err := o.Compact.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	return nil
}

// Pipeline prepares a conversation for a model request: repair pairing →
// prune → offload → count → compact when over the trigger → validate
// pairing (SPEC §7). Build one with New, per conversation, and call Prepare
// before every request.
//
// A Pipeline is safe for concurrent use; it remembers the last compaction of
// the conversation it serves (see Options.Stateless).
type Pipeline struct {
	opts       Options // resolved
	mc         *tokens.MessageCounter
	log        *slog.Logger
	ws         *workspace.Workspace
	closeStore bool
	wsRoot     string

	mu   sync.Mutex
	memo *memo
}

// New returns a Pipeline with the options. It opens the default workspace
// store when the offload mode needs one and Options.Store is nil (nothing is
// written before the first Prepare); Close releases it.
func New(opts Options) (*Pipeline, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	p := &Pipeline{opts: opts}
	o := &p.opts
	if o.Offload == "" {
		o.Offload = OffloadWorkspace
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	p.log = o.Logger
	p.mc = o.MessageCounter
	if p.mc == nil {
		p.mc = tokens.NewMessageCounter(tokens.MessageOptions{Counter: o.Counter, Logger: o.Logger, Parallelism: -1})
	}

	if o.Prune.Now == nil {
		o.Prune.Now = o.Now
	}
	if o.Prune.Counter == nil {
		o.Prune.Counter = textCounter{p.mc}
	}
	if o.Prune.Logger == nil {
		o.Prune.Logger = o.Logger
	}

	if o.Compact.MessageCounter == nil && o.Compact.Counter == nil {
		o.Compact.MessageCounter = p.mc
	}
	if o.Compact.SessionID == "" {
		o.Compact.SessionID = o.SessionID
	}
	if o.Compact.Now == nil {
		o.Compact.Now = o.Now
	}
	if o.Compact.Logger == nil {
		o.Compact.Logger = o.Logger
	}

	if o.Files.Logger == nil {
		o.Files.Logger = o.Logger
	}
	if o.Files.Dir == "" {
		o.Files.Dir = offload.DefaultDir
	}

	if o.Offload == OffloadWorkspace {
		store := o.Store
		if store == nil {
			if o.WorkspaceDir == "" {
				o.WorkspaceDir = DefaultWorkspaceDir
			}
			s, err := dirstore.Open(o.WorkspaceDir, nil)
			if err != nil {
				return nil, fmt.Errorf("pipeline: open workspace: %w", err)
			}
			store, p.closeStore = s, true
		}
		if r, ok := store.(interface{ Root() string }); ok {
			p.wsRoot = r.Root()
		} else if r, ok := store.(interface{ Path() string }); ok {
			p.wsRoot = r.Path()
		}
		if p.wsRoot != "" {
			if abs, err := filepath.Abs(p.wsRoot); err == nil {
				p.wsRoot = abs
			}
		}
		wo := o.Workspace
		if wo.SessionID == "" {
			wo.SessionID = o.SessionID
		}
		if wo.Now == nil {
			wo.Now = o.Now
		}
		if wo.Logger == nil {
			wo.Logger = o.Logger
		}
		o.Store = store
		p.ws = workspace.New(store, &wo)
	}
	return p, nil
}

// Close releases the workspace store New opened. A Store given in Options
// is left open. Prepare must not be called after Close.
func (p *Pipeline) Close() error {
	if p.closeStore && p.opts.Store != nil {
		return p.opts.Store.Close()
	}
	return nil
}

// Workspace returns the workspace the offload step stores tool results in
// (nil unless the mode is OffloadWorkspace). Its Tools and Execute give an
// agent the tools that read offloaded results back.
func (p *Pipeline) Workspace() *workspace.Workspace { return p.ws }

// MessageCounter returns the counter the Pipeline counts with.
func (p *Pipeline) MessageCounter() *tokens.MessageCounter { return p.mc }

// Reset forgets the remembered compaction (see Options.Stateless).
func (p *Pipeline) Reset() {
	p.mu.Lock()
	p.memo = nil
	p.mu.Unlock()
}

// Result is what Prepare returns: the messages to send and what was done.
type Result struct {
	// Messages is the list to send: a new list sharing unchanged messages
	// with the input, which is never modified.
	Messages []agentctx.Message `json:"messages"`
	Report   Report             `json:"report"`
}

// Prepare runs the pipeline on msgs, the stored history of the conversation,
// and returns the list to send to the model with a report. msgs is never
// modified: changed messages are copies, unchanged ones are shared.
//
// The steps, in order:
//
//  1. repair: an unanswered tool call gets a synthetic error result, an
//     orphan result is dropped (agentctx.RepairPairing). A history that
//     cannot be repaired (a call without id, two calls with one id) is an
//     error matching agentctx.ErrInvalidInput, before anything is written.
//  2. prune: stale successful terminal output is replaced by a placeholder
//     (package prune).
//  3. offload: every tool result is stored whole in the workspace and the
//     large ones are replaced by a reference (package workspace), or large
//     results are written to files (package offload). Pruned results are
//     stored whole too, so the workspace always holds the originals.
//  4. count: the tokens of the list, plus ReservedTokens, against the
//     trigger (compact.Check).
//  5. compact: at or over the trigger, the middle of the list is archived
//     and summarized (package compact), once: a list that stays over the
//     trigger is reported (Report.BelowThreshold, Report.Warnings), not
//     compacted again.
//  6. validate: the list to send is checked (agentctx.ValidatePairing).
//     An unpaired result (possible only with NoRepair) is returned along
//     with an error matching agentctx.ErrUnpaired.
//
// Prepare returns an error for input that cannot be repaired, when a step
// fails to write (the workspace store, offload files, an archive or summary
// made required by Options.Compact), and when ctx is done.
func (p *Pipeline) Prepare(ctx context.Context, msgs []agentctx.Message) (*Result, error) {
	return p.prepare(ctx, msgs, 0)
}

// PrepareDocument prepares the messages of a document read with
// agentctx.ReadFile or ParseDocument, counting its top-level system prompt
// (a request body's "system") toward the trigger. Write the result back in
// the document's shape with doc.WithMessages(res.Messages).Encode(w). A
// document holding several conversations (see
// agentctx.Document.Conversations) is prepared as one: prepare each
// conversation with its own Pipeline instead.
func (p *Pipeline) PrepareDocument(ctx context.Context, doc *agentctx.Document) (*Result, error) {
	extra := 0
	if sys, ok := doc.System(); ok {
		extra = p.mc.CountContent(sys)
	}
	return p.prepare(ctx, doc.Messages, extra)
}

func (p *Pipeline) prepare(ctx context.Context, in []agentctx.Message, extraReserved int) (*Result, error) {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o := &p.opts
	reserved := o.ReservedTokens + extraReserved
	copts := o.Compact
	copts.ReservedTokens += reserved

	rep := &Report{
		MessagesBefore: len(in),
		ReservedTokens: copts.ReservedTokens,
		Steps:          make([]StepReport, 0, 6),
		Warnings:       []string{},
	}
	cur := in[:len(in):len(in)]
	tokensNow := p.mc.Count(cur) + copts.ReservedTokens
	rep.TokensBefore = tokensNow

	// step finishes a step report: tokens after it and what it saved.
	step := func(s StepReport, t0 time.Time, list []agentctx.Message) {
		if !s.Skipped {
			after := p.mc.Count(list) + copts.ReservedTokens
			s.TokensSaved = tokensNow - after
			tokensNow = after
		}
		s.Tokens = tokensNow
		s.Duration = time.Since(t0)
		rep.Steps = append(rep.Steps, s)
	}

	// 1. repair
	t0 := time.Now()
	if o.NoRepair {
		step(StepReport{Step: StepRepair, Skipped: true}, t0, cur)
	} else {
		fixed, repairs := agentctx.RepairPairing(cur)
		if v := agentctx.ValidatePairing(fixed); !v.Valid {
			is := v.Issues[0]
			return nil, fmt.Errorf("%w: the history cannot be repaired: message %d: %s (%d issue(s))",
				agentctx.ErrInvalidInput, is.Message, is.Kind, len(v.Issues))
		}
		s := StepReport{Step: StepRepair, Changed: len(repairs), Repairs: repairs}
		if len(repairs) > 0 {
			s.CharsSaved = charsOf(cur) - charsOf(fixed)
			p.log.InfoContext(ctx, "pipeline: repaired tool pairing", "repairs", len(repairs))
		}
		cur = fixed
		step(s, t0, cur)
	}

	// A remembered compaction of this history replaces the messages it
	// summarized before anything else looks at them.
	t0 = time.Now()
	hist := cur // the repaired history: what a remembered compaction is keyed on
	reuse := p.reuse(hist)
	reuseTokens, reuseChars, reuseTime := 0, 0, time.Duration(0)
	if reuse != nil {
		before := tokensNow
		next := reuse.apply(cur)
		reuseChars = charsOf(cur[reuse.h:reuse.n]) - charsOf(next[reuse.h:reuse.h+1])
		cur = next
		tokensNow = p.mc.Count(cur) + copts.ReservedTokens
		reuseTokens = before - tokensNow
	}
	reuseTime = time.Since(t0)
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// 2. prune
	t0 = time.Now()
	stored := cur // the list whose results the workspace keeps whole
	var pruned prune.Result
	if o.NoPrune {
		step(StepReport{Step: StepPrune, Skipped: true}, t0, cur)
	} else {
		pruned = prune.Prune(cur, o.Prune)
		cur = pruned.Messages
		step(StepReport{Step: StepPrune, Changed: pruned.PrunedCount, CharsSaved: pruned.FreedChars, Pruned: pruned.Pruned}, t0, cur)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// 3. offload
	t0 = time.Now()
	switch o.Offload {
	case OffloadNone:
		step(StepReport{Step: StepOffload, Skipped: true}, t0, cur)
	case OffloadFiles:
		s, next, err := p.offloadFiles(ctx, cur)
		if err != nil {
			return nil, err
		}
		cur = next
		step(s, t0, cur)
	default:
		s, next, err := p.offloadWorkspace(ctx, stored, cur, pruned.Pruned)
		if err != nil {
			return nil, err
		}
		cur = next
		step(s, t0, cur)
	}

	// 4. count
	t0 = time.Now()
	check, err := compact.Check(cur, copts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	rep.ThresholdTokens = check.ThresholdTokens
	rep.Limit = copts.Limit
	if rep.Limit <= 0 {
		rep.Limit = compact.DefaultLimit
	}
	step(StepReport{Step: StepCount, Count: &check}, t0, cur)

	// 5. compact
	t0 = time.Now()
	if o.NoCompact {
		s := StepReport{Step: StepCompact, Skipped: reuse == nil}
		if reuse != nil {
			s.Changed, s.TokensSaved, s.CharsSaved = reuse.covered(), reuseTokens, reuseChars
			s.Compact = &CompactReport{Reused: reuse.covered(), ReusedArchive: reuse.archive}
		}
		s.Tokens, s.Duration = tokensNow, time.Since(t0)+reuseTime
		rep.Steps = append(rep.Steps, s)
		rep.BelowThreshold = tokensNow < rep.ThresholdTokens
		if !rep.BelowThreshold {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s tokens reach the trigger of %s and compaction is off", num(tokensNow), num(rep.ThresholdTokens)))
		}
	} else {
		s, next, after, err := p.compact(ctx, hist, cur, copts, reuse, rep)
		if err != nil {
			return nil, err
		}
		cur = next
		s.Changed += reuseCovered(reuse)
		s.TokensSaved = tokensNow - after + reuseTokens
		s.CharsSaved += reuseChars
		tokensNow = after
		s.Tokens = tokensNow
		s.Duration = time.Since(t0) + reuseTime
		rep.Steps = append(rep.Steps, s)
	}

	// 6. validate
	t0 = time.Now()
	v := agentctx.ValidatePairing(cur)
	rep.Valid = v.Valid
	rep.Steps = append(rep.Steps, StepReport{Step: StepValidate, Pairing: &v, Tokens: tokensNow, Duration: time.Since(t0)})

	rep.MessagesAfter = len(cur)
	rep.TokensAfter = tokensNow
	for i := range rep.Steps {
		rep.CharsSaved += rep.Steps[i].CharsSaved
		rep.TokensSaved += rep.Steps[i].TokensSaved
	}
	rep.Duration = time.Since(start)
	if cur == nil {
		cur = []agentctx.Message{}
	}
	res := &Result{Messages: cur, Report: *rep}
	if !v.Valid {
		err := v.Err()
		p.log.ErrorContext(ctx, "pipeline: the prepared list is unpaired", "issues", len(v.Issues), "first", v.Issues[0].String())
		return res, fmt.Errorf("pipeline: %w", err)
	}
	p.log.DebugContext(ctx, "pipeline: prepared", "tokens_before", rep.TokensBefore, "tokens_after", rep.TokensAfter,
		"messages_before", rep.MessagesBefore, "messages_after", rep.MessagesAfter, "duration", rep.Duration)
	return res, nil
}

func reuseCovered(r *memo) int {
	if r == nil {
		return 0
	}
	return r.covered()
}

// offloadWorkspace stores the results of stored (the list before pruning,
// so the workspace keeps the originals of pruned results too) and replaces,
// in view (the pruned list), the large results that were not pruned.
func (p *Pipeline) offloadWorkspace(ctx context.Context, stored, view []agentctx.Message, pruned []prune.Pruned) (StepReport, []agentctx.Message, error) {
	s := StepReport{Step: StepOffload}
	rep := &OffloadReport{Mode: OffloadWorkspace, Workspace: p.wsRoot, Namespace: p.ws.Namespace()}
	s.Offload = rep
	res, err := p.ws.Offload(ctx, stored)
	if err != nil {
		if errors.Is(err, workspace.ErrInvalidID) {
			return s, nil, fmt.Errorf("%w: %w", agentctx.ErrInvalidInput, err)
		}
		return s, nil, fmt.Errorf("pipeline: offload: %w", err)
	}
	isPruned := make(map[[2]int]bool, len(pruned))
	for _, pr := range pruned {
		isPruned[[2]int{pr.MessageIndex, pr.BlockIndex}] = true
	}
	pather, _ := p.opts.Store.(interface {
		Path(namespace, id string) (string, error)
	})
	replace := make(map[[2]int]agentctx.Content)
	for _, a := range res.Artifacts {
		rep.Stored++
		if !a.Unchanged {
			rep.Written++
			rep.StoredBytes += a.Bytes
			s.Artifacts = append(s.Artifacts, a.ID)
			if pather != nil {
				if path, err := pather.Path(rep.Namespace, a.ID); err == nil {
					s.Files = append(s.Files, path)
				}
			}
		}
		pos := [2]int{a.Message, a.Block}
		if a.Indexed && !isPruned[pos] {
			replace[pos] = resultContent(res.Messages, a.Message, a.Block)
		}
	}
	out := view
	if len(replace) > 0 {
		out = agentctx.MapToolResults(view, func(r agentctx.ToolResult) (agentctx.Content, bool) {
			c, ok := replace[[2]int{r.Message, r.Block}]
			if ok {
				rep.Replaced++
				rep.ReplacedBytes += len(r.Content.AsText())
				s.CharsSaved += r.Content.Chars() - c.Chars()
			}
			return c, ok
		})
	}
	s.Changed = rep.Replaced
	if p.opts.Verify {
		v := &Verification{}
		for _, a := range res.Artifacts {
			want := resultContent(stored, a.Message, a.Block).AsText()
			got, err := p.ws.Get(ctx, a.ID)
			switch {
			case err != nil:
				v.check(a.ID, false, err.Error())
			default:
				v.check(a.ID, got.Content == want, fmt.Sprintf("read back %d bytes, want %d", len(got.Content), len(want)))
			}
		}
		rep.Verified = v
	}
	return s, out, nil
}

// offloadFiles writes the large results of view to files (seed 000).
func (p *Pipeline) offloadFiles(ctx context.Context, view []agentctx.Message) (StepReport, []agentctx.Message, error) {
	s := StepReport{Step: StepOffload}
	dir, _ := filepath.Abs(p.opts.Files.Dir)
	rep := &OffloadReport{Mode: OffloadFiles, Dir: dir}
	s.Offload = rep
	res, err := offload.Batch(ctx, view, p.opts.Files)
	if err != nil {
		return s, nil, fmt.Errorf("pipeline: offload: %w", err)
	}
	s.Files = res.Files
	var originals []string
	i := 0
	next := slicesOf(agentctx.ToolResults(res.Messages))
	for r := range agentctx.ToolResults(view) {
		if i >= len(next) {
			break
		}
		n := next[i]
		i++
		if !n.Content.IsText() || !offload.IsReference(n.Content.Text()) {
			continue
		}
		if r.Content.IsText() && r.Content.Text() == n.Content.Text() {
			continue // already a reference before
		}
		orig := r.Content.AsText()
		originals = append(originals, orig)
		rep.Replaced++
		rep.ReplacedBytes += len(orig)
		s.CharsSaved += r.Content.Chars() - n.Content.Chars()
	}
	rep.Stored, rep.Written, rep.StoredBytes = len(res.Files), len(res.Files), rep.ReplacedBytes
	s.Changed = rep.Replaced
	if p.opts.Verify {
		v := &Verification{}
		for k, f := range res.Files {
			data, err := os.ReadFile(f)
			switch {
			case err != nil:
				v.check(f, false, err.Error())
			case k >= len(originals):
				v.check(f, false, "no original to compare with")
			default:
				v.check(f, string(data) == originals[k], fmt.Sprintf("read back %d bytes, want %d", len(data), len(originals[k])))
			}
		}
		rep.Verified = v
	}
	return s, res.Messages, nil
}

// compact runs the compact step on list and returns its report, the list
// after it and that list's tokens (ReservedTokens included).
func (p *Pipeline) compact(ctx context.Context, hist, list []agentctx.Message, copts compact.Options, reuse *memo, rep *Report) (StepReport, []agentctx.Message, int, error) {
	res, err := compact.Compact(ctx, list, copts)
	if err != nil {
		return StepReport{}, nil, 0, fmt.Errorf("pipeline: compact: %w", err)
	}
	cr := &CompactReport{
		Compacted: res.Compacted,
		Stats:     res.Stats,
		Archive:   res.Archive,
		Reason:    res.Reason,
		Attempts:  res.Attempts,
	}
	if reuse != nil {
		cr.Reused, cr.ReusedArchive = reuse.covered(), reuse.archive
	}
	s := StepReport{Step: StepCompact, Compact: cr}
	if res.Compacted {
		s.Changed = res.Stats.CompactedMessageCount
	}
	if res.Archive != "" {
		s.Files = []string{res.Archive}
		if fi, err := os.Stat(res.Archive); err == nil {
			cr.ArchivedBytes = int(fi.Size())
		}
	}
	rep.BelowThreshold = res.BelowThreshold
	switch res.Reason {
	case "", compact.ReasonBelowThreshold, compact.ReasonEmpty:
	case compact.ReasonSummarizerFailed:
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("the summary failed after %d attempt(s); the messages are sent uncompacted", res.Attempts))
	case compact.ReasonNothingToCompact:
		if res.BelowThreshold {
			break // forced, and nothing to summarize
		}
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s tokens reach the trigger of %s, but there is nothing left to summarize: the most recent messages alone are too large", num(res.Tokens), num(res.ThresholdTokens)))
	default:
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("compacted to %s tokens, still at or over the trigger of %s (%s); not compacting again", num(res.Tokens), num(res.ThresholdTokens), res.Reason))
	}
	if res.Compacted && !copts.NoArchive && res.Archive == "" {
		rep.Warnings = append(rep.Warnings, "the summarized messages could not be archived (see the log)")
	}

	var h, t int // the summarized part is list[h:t]
	if res.Compacted {
		h = leadingSystem(list)
		t = len(list) - (len(res.Messages) - h - 1)
		if h >= len(res.Messages) || res.Messages[h].Content.Text() != res.Summary || t <= h || t > len(list) {
			h, t = -1, -1 // not the shape compact documents; do not rely on it
		}
	}
	if res.Compacted {
		if h >= 0 {
			s.CharsSaved = charsOf(list[h:t]) - charsOf(res.Messages[h:h+1])
			p.remember(hist, reuse, h, t, res.Messages[h], res.Archive)
		} else {
			s.CharsSaved = charsOf(list) - charsOf(res.Messages)
		}
	}
	if p.opts.Verify && res.Archive != "" {
		v := &Verification{}
		if h < 0 {
			v.check(res.Archive, false, "cannot locate the summarized messages")
		} else {
			ok, detail := verifyArchive(res.Archive, list[h:t])
			v.check(res.Archive, ok, detail)
		}
		cr.Verified = v
	}
	s.Compact = cr
	return s, res.Messages, res.Tokens, nil
}

func verifyArchive(path string, want []agentctx.Message) (bool, string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return false, err.Error()
	}
	got, err := agentctx.UnmarshalMessages(data)
	if err != nil {
		return false, err.Error()
	}
	a, err1 := agentctx.MarshalMessages(got)
	b, err2 := agentctx.MarshalMessages(want)
	if err := errors.Join(err1, err2); err != nil {
		return false, err.Error()
	}
	if string(a) != string(b) {
		return false, fmt.Sprintf("archive holds %d messages (%d bytes), want %d messages (%d bytes)", len(got), len(a), len(want), len(b))
	}
	return true, ""
}

func leadingSystem(msgs []agentctx.Message) int {
	h := 0
	for h < len(msgs) && msgs[h].Role == agentctx.RoleSystem {
		h++
	}
	return h
}

// resultContent returns the content of the tool result at message m, block
// b (-1: the message is a role "tool" message).
func resultContent(msgs []agentctx.Message, m, b int) agentctx.Content {
	if m < 0 || m >= len(msgs) {
		return agentctx.Content{}
	}
	if b < 0 {
		return msgs[m].Content
	}
	blocks := msgs[m].Content.Blocks()
	if b >= len(blocks) {
		return agentctx.Content{}
	}
	return blocks[b].Content
}

// charsOf returns the characters of a list (SPEC §1): its contents, and the
// names and arguments of OpenAI tool calls.
func charsOf(msgs []agentctx.Message) int {
	n := 0
	for i := range msgs {
		n += msgs[i].Content.Chars()
		for _, tc := range msgs[i].ToolCalls {
			n += utf8.RuneCountInString(tc.Function.Name) + utf8.RuneCountInString(tc.Function.Arguments)
		}
	}
	return n
}

func slicesOf[T any](seq func(func(T) bool)) []T {
	var out []T
	for v := range seq {
		out = append(out, v)
	}
	return out
}

// textCounter counts text through a MessageCounter's cache.
type textCounter struct{ mc *tokens.MessageCounter }

func (c textCounter) Count(s string) int { return c.mc.CountText(s) }
