package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"strings"
	"time"

	"github.com/agentctx/agentctx"
)

// Defaults (SPEC §5, seed 003).
const (
	// DefaultNamespace is the namespace of a Workspace whose Options name
	// none.
	DefaultNamespace = "default"
	// DefaultInlineLimit: a tool result with fewer characters stays in the
	// context whole; one with this many or more is replaced by a
	// <knowledge_list> entry.
	DefaultInlineLimit = 40_000
	// DefaultMaxChars caps every read, so reading an artifact back cannot
	// flood the context again.
	DefaultMaxChars = 40_000
	// DefaultPreviewChars bounds the head and tail preview of a
	// <knowledge_list> entry.
	DefaultPreviewChars = 1_200
	// DefaultPreviewHeadLines and DefaultPreviewTailLines are the lines
	// the preview shows from the start and from the end.
	DefaultPreviewHeadLines = 5
	DefaultPreviewTailLines = 3
)

// NoLimit, as Options.MaxChars, lifts the read cap.
const NoLimit = -1

// Options configure a Workspace. The zero value means every default.
type Options struct {
	// Namespace keeps this workspace apart from others in the same store;
	// "" means DefaultNamespace.
	Namespace string

	// AgentID, TaskID and SessionID are written in the metadata of every
	// offloaded tool result.
	//
	// Every session's artifacts live in the namespace itself (SPEC §10):
	// an id is never overwritten with other content (see
	// OffloadToolResult), so the id a model was given names one artifact
	// of the namespace, whichever session stored it, and any Workspace of
	// the namespace reads it by that id, with or without a SessionID. The
	// one exception is a plain tool result id that several sessions hold
	// (see Resolve): with a SessionID, the reads by id of the agent tools
	// (GetKnowledgeByID, GetKnowledgeByLines, GrepKnowledge) read this
	// session's result by it. Get reads the id as it is.
	//
	// A non-empty SessionID is the default session of the listings written
	// for a model (GrepSession, QueryArtifacts, ToolResultOffloadInfo): a
	// call that names no session lists this one's; without a SessionID
	// they cover every session. A read by id that misses in the namespace
	// also looks in SessionNamespace(Namespace, SessionID), where
	// versions before this layout kept a session's artifacts.
	AgentID, TaskID, SessionID string
	// Metadata is added to every offloaded tool result (the keys above and
	// context_type, biz_id, tool_name and action_name take precedence).
	Metadata Metadata

	// InlineLimit is the size, in characters, from which a tool result is
	// replaced by a <knowledge_list> entry; 0 means DefaultInlineLimit.
	InlineLimit int
	// MaxChars caps the text of every read; 0 means DefaultMaxChars and
	// NoLimit (any negative value) lifts the cap.
	MaxChars int
	// MaxResults is the default cap on matching lines of a grep; 0 means
	// DefaultMaxResults.
	MaxResults int
	// PreviewChars, PreviewHeadLines and PreviewTailLines shape the
	// preview in a <knowledge_list> entry; 0 means the Default values.
	PreviewChars, PreviewHeadLines, PreviewTailLines int

	// ActionName names the action of a tool call for the action_name
	// metadata; nil means DefaultActionName.
	ActionName func(call agentctx.ToolUse) string
	// Now is the clock for the created time of artifacts; nil means
	// time.Now.
	Now func() time.Time
	// Logger receives a record for every stored tool result, with
	// context_type and biz_id; nil discards them.
	Logger *slog.Logger

	// Budget bounds the bytes of tool results stored, per session and in
	// total (see Budget): a result that would pass it is not stored and
	// stays in the context as it is. Share one Budget between the
	// Workspaces over one store, so that the total is theirs together.
	// Nil means a Budget of this Workspace's own over its store, bounded
	// by SessionBytes and TotalBytes.
	Budget *Budget
	// SessionBytes and TotalBytes are the bounds of the Budget New makes
	// when Budget is nil (BudgetOptions): 0 means DefaultSessionBytes
	// (1 GiB) and DefaultTotalBytes (10 GiB), a negative value no bound.
	SessionBytes, TotalBytes int64
}

// Workspace is a view of one namespace of a Store: it offloads tool
// results into it and reads them back, as Go calls and as agent tools.
// It is safe for concurrent use when its Store is.
//
// What a read may reach is the namespace: every artifact of it, whichever
// session, task or agent stored it, and nothing of another namespace (but
// SessionNamespace(Namespace, SessionID), where earlier versions kept this
// session's artifacts). A store shared by tenants that must not read each
// other's results gives each tenant a namespace of its own.
type Workspace struct {
	store  Store
	opts   Options
	legacy string // SessionNamespace(Namespace, SessionID) for a SessionID, else ""
	log    *slog.Logger
	budget *Budget
}

// New returns a Workspace over store. The zero Options means the
// documented defaults; New works on a copy of opts (Metadata included),
// so the caller may reuse or change it afterwards.
func New(store Store, opts Options) *Workspace {
	w := &Workspace{store: store, opts: opts}
	w.opts.Metadata = cloneMetadata(opts.Metadata)
	o := &w.opts
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.SessionID != "" {
		w.legacy = SessionNamespace(o.Namespace, o.SessionID)
	}
	if o.InlineLimit <= 0 {
		o.InlineLimit = DefaultInlineLimit
	}
	if o.MaxChars == 0 {
		o.MaxChars = DefaultMaxChars
	}
	if o.MaxResults <= 0 {
		o.MaxResults = DefaultMaxResults
	}
	if o.PreviewChars <= 0 {
		o.PreviewChars = DefaultPreviewChars
	}
	if o.PreviewHeadLines <= 0 {
		o.PreviewHeadLines = DefaultPreviewHeadLines
	}
	if o.PreviewTailLines <= 0 {
		o.PreviewTailLines = DefaultPreviewTailLines
	}
	if o.ActionName == nil {
		o.ActionName = DefaultActionName
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	w.log = o.Logger
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	w.budget = o.Budget
	if w.budget == nil && store != nil {
		w.budget = NewBudget(store, BudgetOptions{SessionBytes: o.SessionBytes, TotalBytes: o.TotalBytes, Now: o.Now, Logger: w.log})
	}
	return w
}

// Store returns the workspace's store.
func (w *Workspace) Store() Store { return w.store }

// Namespace returns the store namespace the workspace's artifacts live in:
// the namespace its Options named (DefaultNamespace when they named none),
// whatever its SessionID.
func (w *Workspace) Namespace() string { return w.opts.Namespace }

// BaseNamespace returns the namespace the workspace's Options named. It
// equals Namespace since artifacts no longer live apart per session, and
// is kept for the callers written before.
func (w *Workspace) BaseNamespace() string { return w.opts.Namespace }

// SessionID returns the session the workspace writes in its artifacts'
// metadata and lists by default, "" for none.
func (w *Workspace) SessionID() string { return w.opts.SessionID }

// SessionNamespace returns the store namespace where versions before the
// flat layout kept a session's artifacts: namespace + "/sessions/" + the
// session id, with "%" and "/" of the id written as %25 and %2F so that
// different (namespace, session) pairs never share a namespace.
//
// Deprecated: artifacts live in the namespace itself, with session_id in
// their metadata. A Workspace with a SessionID still reads an id it does
// not find in its namespace from here, so workspaces written by earlier
// versions stay readable.
func SessionNamespace(namespace, sessionID string) string {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	return namespace + "/sessions/" + strings.NewReplacer("%", "%25", "/", "%2F").Replace(sessionID)
}

// Get returns an artifact of the workspace whole, without the read cap.
func (w *Workspace) Get(ctx context.Context, id string) (*Artifact, error) {
	var a *Artifact
	err := w.byID(func(ns string) (err error) {
		a, err = w.store.Get(ctx, ns, id)
		return err
	})
	return a, err
}

// byID runs a read of one artifact in the workspace's namespace and, when
// it reports ErrNotFound and the workspace has a SessionID, once more in
// the legacy namespace of the session (see SessionNamespace). A miss in
// both returns the first error, which names the namespace.
func (w *Workspace) byID(read func(namespace string) error) error {
	err := read(w.opts.Namespace)
	if err == nil || w.legacy == "" || !errors.Is(err, ErrNotFound) {
		return err
	}
	if err2 := read(w.legacy); !errors.Is(err2, ErrNotFound) {
		return err2
	}
	return err
}

// Query lists the artifacts of the workspace's namespace whose metadata
// matches f, of every session (f may name one with session_id).
func (w *Workspace) Query(ctx context.Context, f Filter) ([]Info, error) {
	return w.store.Query(ctx, w.opts.Namespace, f)
}

// sessionFilter returns f narrowed to the workspace's session when f names
// no session_id and the workspace has one.
func (w *Workspace) sessionFilter(f Filter) Filter {
	if w.opts.SessionID == "" {
		return f
	}
	if _, ok := f.Metadata[KeySessionID]; ok {
		return f
	}
	md := cloneMetadata(f.Metadata)
	md[KeySessionID] = w.opts.SessionID
	f.Metadata = md
	return f
}

// DefaultActionName returns the action of a tool call: the string member
// "action" of its input (computer-use and browser tools), else the member
// "command" when it is one word (str_replace_based_edit_tool's "view",
// "create", ...), else "".
func DefaultActionName(call agentctx.ToolUse) string {
	var in struct {
		Action  any `json:"action"`
		Command any `json:"command"`
	}
	if json.Unmarshal(call.Input, &in) != nil {
		return ""
	}
	if s, ok := in.Action.(string); ok && s != "" {
		return s
	}
	if s, ok := in.Command.(string); ok && isWord(s) {
		return s
	}
	return ""
}

func isWord(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// cloneMetadata returns a copy of m, never nil.
func cloneMetadata(m Metadata) Metadata {
	if m == nil {
		return Metadata{}
	}
	return maps.Clone(m)
}
