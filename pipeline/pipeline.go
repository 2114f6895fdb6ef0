package pipeline

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/base/runes"
	"github.com/agentctx/agentctx/offload"
	"github.com/agentctx/agentctx/pricing"
	"github.com/agentctx/agentctx/prune"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/stores"
	"github.com/agentctx/agentctx/tokens"
	"github.com/agentctx/agentctx/workspace"
)

// OffloadMode selects what the offload step does.
type OffloadMode string

// Offload modes.
const (
	// OffloadWorkspace stores every tool result whole as a workspace
	// artifact and replaces the content of those of 40,000 characters or
	// more (of the text the model reads: workspace.InlineChars) by a
	// <knowledge_list> reference (SPEC §5); a read of stored content back
	// is never replaced (workspace.Workspace.ReadsBack). The default.
	OffloadWorkspace OffloadMode = "workspace"
	// OffloadFiles writes every tool result of 100 characters or more to
	// <dir>/tool-result-<id>.md and replaces its content by
	// "[Content offloaded to: ./tool-result-<id>.md]" (SPEC §3.1). The
	// workspace store keeps every result whole too (never replaced by a
	// reference), so a pruned result names its stored original.
	OffloadFiles OffloadMode = "files"
	// OffloadNone replaces nothing by a reference; the workspace store
	// still keeps every result whole, so a pruned result names its stored
	// original (nothing removed is lost in any mode).
	OffloadNone OffloadMode = "none"
)

// DefaultWorkspaceDir is the directory of the default workspace store.
const DefaultWorkspaceDir = stores.DefaultDir

// SessionsDir is the directory, inside a directory workspace, of the
// session states the Pipeline keeps by default.
const SessionsDir = stores.SessionsDir

// DefaultSessionID is the session of a Pipeline whose Options name none.
const DefaultSessionID = "default"

// DefaultClearAtLeast is the default of Options.ClearAtLeast: a new batch
// of pruned results is applied once it frees 20,000 tokens. Measured with
// agentctx replay on real Claude Code sessions (BENCHMARKS.md): it keeps
// cache breaks under 5% of requests while still clearing most stale output
// long before the trigger.
const DefaultClearAtLeast = 20_000

// DefaultClearTrigger is the default of Options.ClearTrigger.
const DefaultClearTrigger = 0.8

// ClaudeRatio is the measured ratio of Claude's input tokens to our
// o200k_base count of the same content, for Options.EstimateRatio before
// any usage is reported: the growth of the usage Claude Code recorded over
// 116 consecutive requests of two real sessions, divided by the growth of
// our count of the same histories (1.32 and 1.31; see BENCHMARKS.md).
const ClaudeRatio = 1.31

// DefaultStoreTimeout is the default of Options.StoreTimeout.
const DefaultStoreTimeout = 5 * time.Second

// ErrStoreTimeout is matched (errors.Is) by the error of a store call that
// took longer than Options.StoreTimeout.
var ErrStoreTimeout = errors.New("pipeline: the store did not answer in time")

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
	// Store keeps the artifacts (in every mode: the originals of pruned
	// results too). Nil means a
	// directory store (dirstore) at WorkspaceDir, opened by New (through
	// package stores) and closed by Close. A Store given here is not
	// closed by the Pipeline.
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

	// SessionID names the conversation: the key of its session state, the
	// session_id of its artifacts (which live in the workspace's namespace
	// with every session's, under ids unique there), the subdirectory of
	// file archives. "" means DefaultSessionID.
	SessionID string

	// Sessions keeps the session state (SPEC §9): every decision made for
	// the conversation, re-applied byte for byte by later calls, in this
	// process or another. Nil means the session store of the workspace
	// store, chosen by package stores: the state follows the artifacts
	// (<WorkspaceDir>/.sessions of the default directory store, the same
	// file of a sqlitestore, the same database of a pgstore, the same
	// memory of a memstore), and a Store that keeps no session state
	// makes New fail with an error matching stores.ErrNoSessions. Without
	// a workspace store (mode none or files with NoPrune) it is memory,
	// as long as the Pipeline lives. A Sessions given here is not closed
	// by the Pipeline.
	Sessions session.Store

	// ClearAtLeast is the fewest tokens a new batch of pruned results must
	// free before it is applied (like Anthropic's clear_at_least): each
	// batch changes what earlier requests sent, which costs the provider's
	// prompt cache, so stale results are cleared rarely and in bulk. 0
	// means DefaultClearAtLeast; a negative value applies every stale
	// result at once.
	ClearAtLeast int
	// ClearTrigger is how near the compaction trigger a request must be,
	// as a ratio of it, before a new batch of pruned results is applied
	// (like the trigger of Anthropic's context editing): far from the
	// window, clearing saves little and costs the cache. 0 means
	// DefaultClearTrigger; a negative value clears at any size.
	ClearTrigger float64

	// Clearing decides when stale results already sent are cleared;
	// "" means ClearPriced. ClearAtLeast and ClearTrigger apply to
	// ClearBatched only.
	Clearing Clearing
	// Trigger decides when a session is compacted: "" means
	// TriggerPriced under ClearPriced (compaction at the size whose
	// cycle costs least, never later than Compact's threshold) and
	// TriggerThreshold under ClearBatched; a Stateless Pipeline compacts
	// at the threshold.
	Trigger Trigger
	// Prices weigh an edit under ClearPriced (only the ratios of cache
	// read and write to input prices matter for the decision; the amounts
	// are reported). The zero value means Claude Sonnet's
	// (pricing.Fallback(pricing.Anthropic)).
	Prices pricing.Prices
	// ColdInlineLimit is, under ClearPriced in mode workspace, the size in
	// characters from which a result kept whole is replaced by a reference
	// once the provider's cache has gone cold (an edit then costs nothing
	// more; the most recent results and reads of stored content back stay
	// whole). 0 means DefaultColdInlineLimit; a negative value turns it
	// off.
	ColdInlineLimit int

	// StoreOnReplace stores a tool result too small to be offloaded or to
	// get a pointer in a summary (under the inline limit, the cold-cache
	// limit and 4,000 characters) only when a decision first replaces it
	// (a prune; its placeholder names the artifact), not when first seen:
	// a request of many small results then writes no artifact for them,
	// and what leaves the context is still readable (a compaction's
	// archive holds the messages its summary replaces; with
	// Compact.NoArchive every result is stored when first seen). The
	// report's Stored counts only what is stored. The zero value stores
	// every result when first seen (SPEC §5).
	StoreOnReplace bool

	// StoreTimeout bounds each call to the workspace and session stores
	// (a hung database, a lock a stuck process holds): past it the call
	// fails with an error matching ErrStoreTimeout, and Prepare with it (a
	// proxy then forwards the request unedited). 0 means
	// DefaultStoreTimeout; a negative value means no bound but ctx's.
	StoreTimeout time.Duration

	// Horizon bounds the number of requests an edit is expected to serve
	// under ClearPriced; 0 means DefaultHorizon.
	Horizon int

	// EstimateRatio converts our count into the provider's before any
	// usage has been reported (see Observe): 0 means 1 (o200k_base counts
	// as they are); ClaudeRatio estimates Claude's count.
	EstimateRatio float64

	// Verify reads back everything the offload and compact steps wrote
	// and compares it with the original, byte for byte; the report says
	// what matched.
	Verify bool

	// Stateless makes every call independent of the ones before: no
	// session state is read or written, every stale result is pruned at
	// once and a list over the trigger is compacted on every call. By
	// default a Pipeline is a session engine (SPEC §9).
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
	if _, err := ParseClearing(string(o.Clearing)); err != nil {
		return err
	}
	if o.Horizon < 0 {
		return fmt.Errorf("%w: Horizon %d is negative", ErrInvalidOption, o.Horizon)
	}
	switch {
	case o.ReservedTokens < 0:
		return fmt.Errorf("%w: ReservedTokens %d is negative", ErrInvalidOption, o.ReservedTokens)
	case o.Files.MinChars < 0:
		return fmt.Errorf("%w: Files.MinChars %d is negative", ErrInvalidOption, o.Files.MinChars)
	case o.Workspace.InlineLimit < 0:
		return fmt.Errorf("%w: Workspace.InlineLimit %d is negative", ErrInvalidOption, o.Workspace.InlineLimit)
	case math.IsNaN(o.ClearTrigger) || o.ClearTrigger > 1:
		return fmt.Errorf("%w: ClearTrigger %v must be a ratio of at most 1", ErrInvalidOption, o.ClearTrigger)
	case o.EstimateRatio < 0 || math.IsNaN(o.EstimateRatio) || math.IsInf(o.EstimateRatio, 0):
		return fmt.Errorf("%w: EstimateRatio %v must be a positive number", ErrInvalidOption, o.EstimateRatio)
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
	openStores *stores.Stores // what New opened, closed by Close
	wsRoot     string

	sessions  session.Store
	namespace string // of the session state
	sessionID string
	archiver  compact.Archiver

	mu        sync.Mutex
	summaries map[string]string // see remembered
	digests   *digestMemo
	stateMemo stateMemo
	prefix    prefixMemo
	counted   countMemo
	paths     pathMemo   // see WithPaths
	pathed    pathedMemo // see AddPaths

	terminalLogged atomic.Bool // the terminal tools were logged (logTerminal)
}

// New returns a Pipeline with the options. It opens the default workspace
// store when the offload mode needs one and Options.Store is nil (nothing is
// written before the first Prepare); Close releases it.
func New(opts Options) (*Pipeline, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	p := &Pipeline{opts: opts, summaries: map[string]string{}, digests: newDigestMemo()}
	o := &p.opts
	o.setDefaults()
	p.log = o.Logger
	p.mc = o.MessageCounter
	if p.mc == nil {
		p.mc = tokens.NewMessageCounter(tokens.MessageOptions{Counter: o.Counter, Logger: o.Logger, Parallelism: -1})
	}
	o.setStepDefaults(p.mc)

	// Every mode keeps the originals of what it removes: the workspace
	// store keeps every result whole, so a pruned result's placeholder
	// names where its original is. Only mode workspace replaces large
	// results by references to it; the other modes need the store only
	// when they prune.
	st, err := OpenStores(context.Background(), *o)
	if err != nil {
		return nil, err
	}
	p.openStores = st
	if o.Offload == OffloadWorkspace || !o.NoPrune {
		p.useWorkspace(st.Workspace)
	}
	p.sessionID = o.SessionID
	p.namespace = o.Workspace.Namespace
	if p.namespace == "" {
		p.namespace = workspace.DefaultNamespace
	}
	p.sessions = st.Sessions
	return p, nil
}

// setDefaults fills the zero top-level options with their documented
// defaults (New, after Validate).
func (o *Options) setDefaults() {
	if o.Offload == "" {
		o.Offload = OffloadWorkspace
	}
	if o.SessionID == "" {
		o.SessionID = DefaultSessionID
	}
	if o.ClearAtLeast == 0 {
		o.ClearAtLeast = DefaultClearAtLeast
	}
	if o.Clearing == "" {
		o.Clearing = ClearPriced
	}
	if o.StoreTimeout == 0 {
		o.StoreTimeout = DefaultStoreTimeout
	}
	switch {
	case o.ClearTrigger == 0:
		o.ClearTrigger = DefaultClearTrigger
	case o.ClearTrigger < 0:
		o.ClearTrigger = 0
	}
	if o.EstimateRatio == 0 {
		o.EstimateRatio = 1
	}
	if o.Compact.TailRatio == 0 && o.pricedTrigger() && !localSummarizer(o.Compact.Summarizer) {
		o.Compact.TailRatio = PricedTailRatio
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// setStepDefaults gives the options of the prune, compact and files steps
// what they leave zero from the pipeline's: its clock, logger, session and
// message counter mc (after setDefaults).
func (o *Options) setStepDefaults(mc *tokens.MessageCounter) {
	if o.Prune.Now == nil {
		o.Prune.Now = o.Now
	}
	if o.Prune.Counter == nil {
		o.Prune.Counter = textCounter{mc}
	}
	if o.Prune.Logger == nil {
		o.Prune.Logger = o.Logger
	}

	if o.Compact.MessageCounter == nil && o.Compact.Counter == nil {
		o.Compact.MessageCounter = mc
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
}

// useWorkspace sets the pipeline on the workspace store New opened: its
// root (absolute when a directory), the workspace over it with the
// pipeline's session, clock and logger (storing every result whole unless
// the mode is OffloadWorkspace), and the archiver of mode workspace.
func (p *Pipeline) useWorkspace(store workspace.Store) {
	o := &p.opts
	if l, ok := store.(workspace.Locator); ok {
		p.wsRoot = l.Location()
	}
	if p.wsRoot != "" && !strings.Contains(p.wsRoot, "://") {
		if abs, err := filepath.Abs(p.wsRoot); err == nil {
			p.wsRoot = abs
		}
	}
	wo := o.Workspace
	if o.Offload != OffloadWorkspace {
		wo.InlineLimit = math.MaxInt // stored, never replaced by a reference
	}
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
	p.ws = workspace.New(store, wo)
	if o.Offload == OffloadWorkspace {
		p.archiver = workspaceArchiver{ws: p.ws, now: o.Now, bound: p.storeCtx}
	}
}

// OpenStores opens the stores New opens for o, through package stores
// (where every program chooses them): a directory store at WorkspaceDir
// when o.Store is nil and a mode needs one (OffloadWorkspace, or pruning),
// and the session store that follows the workspace store when o.Sessions
// is nil and o is not Stateless. A program that runs many Pipelines over
// shared stores (proxy.PipelineEngine) opens them once with OpenStores and
// gives them to every Pipeline in Options; Stores.Close releases them.
// Opening is bounded by o.StoreTimeout, as every store call.
func OpenStores(ctx context.Context, o Options) (*stores.Stores, error) {
	offload := o.Offload
	if offload == "" {
		offload = OffloadWorkspace
	}
	dir := o.WorkspaceDir
	if dir == "" {
		dir = DefaultWorkspaceDir
	}
	if o.StoreTimeout >= 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, cmp.Or(o.StoreTimeout, DefaultStoreTimeout), ErrStoreTimeout)
		defer cancel()
	}
	st, err := stores.Open(ctx, stores.Spec{Workspace: o.Store, Dir: dir, NoWorkspace: offload != OffloadWorkspace && o.NoPrune,
		Sessions: o.Sessions, NoSessions: o.Stateless})
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	return st, nil
}

// Close releases the stores New opened. A Store or Sessions given in
// Options is left open. Prepare must not be called after Close.
func (p *Pipeline) Close() error {
	return p.openStores.Close()
}

// Workspace returns the workspace the offload step stores tool results in
// (nil unless the mode is OffloadWorkspace). Its Tools and Execute give an
// agent the tools that read offloaded results back.
func (p *Pipeline) Workspace() *workspace.Workspace { return p.ws }

// MessageCounter returns the counter the Pipeline counts with.
func (p *Pipeline) MessageCounter() *tokens.MessageCounter { return p.mc }

// Reset forgets the session's state: the next call starts afresh, as for a
// new conversation (artifacts and archives stay in the workspace).
func (p *Pipeline) Reset(ctx context.Context) error {
	p.mu.Lock()
	clear(p.summaries)
	p.mu.Unlock()
	if p.opts.Stateless {
		return nil
	}
	err := p.sessions.Delete(ctx, p.namespace, p.sessionID)
	if errors.Is(err, session.ErrNotFound) {
		return nil
	}
	return err
}

// SessionID returns the session the Pipeline serves.
func (p *Pipeline) SessionID() string { return p.sessionID }

// Result is what Prepare returns: the messages to send and what was done.
type Result struct {
	// Messages is the list to send: a new list sharing unchanged messages
	// with the input, which is never modified.
	Messages []agentctx.Message `json:"messages"`
	Report   Report             `json:"report"`
	// Sources says which messages changed: Sources[i] is, for
	// Messages[i], the index of the input message it is, unchanged (it
	// encodes as that message does), or -1 for a message a step changed
	// or added (a replaced tool result, a summary, a repair's result). It
	// is as long as Messages. A caller that changes Messages afterwards
	// must update it (AddPaths does).
	Sources []int `json:"-"`
	// Facts holds what is known of each of Messages (index for index,
	// see agentctx.Conversation): its hash and its token count by the
	// Pipeline's counter, and its encoding for the messages a step made
	// (an unchanged message keeps the encoding the caller gave, if any).
	Facts []agentctx.Facts `json:"-"`
}

// Prepare runs the pipeline on msgs, the stored history of the conversation,
// and returns the list to send to the model with a report. msgs is never
// modified: changed messages are copies, unchanged ones are shared.
//
// The steps, in order:
//
//  1. repair: an unanswered tool call gets a synthetic error result, an
//     orphan result is dropped, or kept as text when it was all its
//     message held (agentctx.RepairPairing). A history that
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
	return p.prepare(ctx, agentctx.Conversation{Messages: msgs}, 0, CallOptions{})
}

// PrepareConversation is Prepare on a conversation whose facts the caller
// knows (the hashes and encodings of the messages it decoded: see
// agentctx.Conversation), so that the Pipeline does not encode them again,
// with extraTokens counted besides the messages (RequestTokens of a
// request body's document) and what the caller knows of the request (see
// CallOptions). Facts the caller left out are derived; token counts in
// them are ignored (the Pipeline counts with its own counter, and counts
// again only the messages whose content it has not counted before).
func (p *Pipeline) PrepareConversation(ctx context.Context, conv agentctx.Conversation, extraTokens int, co CallOptions) (*Result, error) {
	if conv.Facts != nil && len(conv.Facts) != len(conv.Messages) {
		return nil, fmt.Errorf("%w: %d facts for %d messages", agentctx.ErrInvalidInput, len(conv.Facts), len(conv.Messages))
	}
	return p.prepare(ctx, conv, extraTokens, co)
}

// CallOptions are what a caller knows of one request besides its
// messages. The zero value means nothing is known.
type CallOptions struct {
	// Bound is the number of leading input messages that a signed
	// thinking block the provider will check is bound to: Anthropic's
	// preserved thinking accepts the last assistant message of an open
	// tool loop (which must start with its thinking) only after exactly
	// the messages it was produced after, and judges it invalid after any
	// change to them (a 400, or the block dropped with drop_block). Zero
	// means no message is bound (no thinking, or the turn has ended: the
	// thinking of ended turns may be removed instead).
	//
	// The Pipeline changes no bound message. A new prune or offload
	// decision on an already-sent result there is deferred: not applied
	// and not recorded (StepReport.Deferred), it is made again once the
	// turn has ended. Decisions made before are applied as before, so the
	// bound messages go as they were last sent. A compaction, which must
	// change them, summarizes the whole list (compact.Options.SummarizeAll):
	// the request ends with the summary, and no thinking block is sent
	// after a changed prefix.
	Bound int
	// EditBound makes the decisions on bound results be made and applied
	// as usual: the caller does not send them in the messages but
	// delegates them to the provider (Anthropic context editing, which
	// applies after the prefix check). Compaction still keeps to Bound.
	EditBound bool
	// OwnFacts hands the conversation's Facts to the call: it fills them
	// in place (hashes, counts) instead of copying them first, so the
	// caller must have made them for this call alone and read them no more
	// but through the Result. It spares a copy of 48 bytes a message (the
	// proxy's, for a request of 100,000 messages: 4.8 MB). Without it the
	// Facts given are never modified.
	OwnFacts bool
	// ClientSummary marks the request as the client's own compaction
	// request: the conversation with an instruction to summarize it, whose
	// answer replaces the history in the client (Codex's "CONTEXT
	// CHECKPOINT COMPACTION"; the proxy sets it where it recognises one).
	// The tool results new in it, which no earlier request of the session
	// sent and the model has therefore never read, are forwarded whole
	// rather than by reference, so that the summary can keep what they
	// say: a reference in their place is all the summary would see, and
	// the client's compacted history keeps neither. They are still stored
	// in the workspace. This holds while the request, counted with them
	// whole, stays within the compaction limit (compact.Options.Limit);
	// past it the largest are offloaded as without it, with a warning
	// (Report.Warnings). The decision is recorded like any other: a
	// result sent whole here was sent, and later requests keep it whole
	// until a clearing or the cold-cache sweep replaces it as it would
	// any result already sent. A new result prune finds stale (superseded
	// by a later one) is pruned all the same; mode OffloadFiles ignores
	// it.
	ClientSummary bool
	// Tools is the request's tool declarations, the raw JSON of its
	// "tools" member (nil when unknown; PrepareCall and PrepareDocument
	// read the document's). The session's first request names, in the
	// Info line that tells which tools it treats as terminal output,
	// those of them that are terminal by name. Nothing else reads it.
	Tools json.RawMessage
}

// PrepareCall is PrepareDocument with what the caller knows of the
// request (see CallOptions).
func (p *Pipeline) PrepareCall(ctx context.Context, doc *agentctx.Document, co CallOptions) (*Result, error) {
	if co.Tools == nil {
		co.Tools, _ = doc.Member("tools")
	}
	return p.prepare(ctx, agentctx.Conversation{Messages: doc.Messages}, p.RequestTokens(doc), co)
}

// PrepareDocument prepares the messages of a document read with
// transcript.ReadFile or agentctx.ParseDocument, counting its top-level system prompt
// (a request body's "system") toward the trigger. Write the result back in
// the document's shape with doc.WithMessages(res.Messages).Encode(w). A
// document holding several conversations (see
// agentctx.Document.Conversations) is prepared as one: prepare each
// conversation with its own Pipeline instead.
func (p *Pipeline) PrepareDocument(ctx context.Context, doc *agentctx.Document) (*Result, error) {
	return p.PrepareCall(ctx, doc, CallOptions{})
}

// RequestTokens counts what a request body sends besides its messages: the
// top-level system prompt and the tool definitions (their JSON).
func (p *Pipeline) RequestTokens(doc *agentctx.Document) int {
	return p.mc.CountRequestExtras(doc)
}

// offloadFiles writes the large results of view to files (seed 000).
func (p *Pipeline) offloadFiles(ctx context.Context, view []agentctx.Message, keep func(agentctx.ToolResult) bool) (StepReport, []agentctx.Message, error) {
	s := StepReport{Step: StepOffload}
	dir, _ := filepath.Abs(p.opts.Files.Dir)
	rep := &OffloadReport{Mode: OffloadFiles, Dir: dir}
	s.Offload = rep
	bo := p.opts.Files
	bo.Keep = keep
	res, err := offload.Batch(ctx, view, bo)
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
	var text []byte // reused: 97,000 summarized messages made 46 MB of garbage
	for i := range msgs {
		if c := msgs[i].Content; c.IsText() {
			n += utf8.RuneCountInString(c.Text())
		} else {
			text = c.AppendText(text[:0])
			n += runes.Count(text) // utf8.RuneCount copies what is not ASCII
		}
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

// storeCtx returns the context of one store call: ctx bounded by
// Options.StoreTimeout.
func (p *Pipeline) storeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if p.opts.StoreTimeout < 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, p.opts.StoreTimeout, ErrStoreTimeout)
}

// ErrStore is matched (errors.Is) by the error of a store call that failed
// (the workspace or session store answered with an error, or did not
// answer in time: ErrStoreTimeout too): Prepare fails with it, and the
// proxy forwards the request unedited and counts it.
var ErrStore = errors.New("pipeline: store call failed")

// storeErr marks an error of a store call as ErrStore, and one that ran
// out of its own time (not ctx's) as ErrStoreTimeout too.
func storeErr(ctx, callCtx context.Context, err error) error {
	if err == nil || ctx.Err() != nil {
		return err
	}
	if errors.Is(context.Cause(callCtx), ErrStoreTimeout) && !errors.Is(err, ErrStoreTimeout) {
		err = fmt.Errorf("%w: %w", ErrStoreTimeout, err)
	}
	if !errors.Is(err, ErrStore) {
		err = fmt.Errorf("%w: %w", ErrStore, err)
	}
	return err
}
