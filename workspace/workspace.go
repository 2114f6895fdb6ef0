package workspace

import (
	"context"
	"encoding/json"
	"log/slog"
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
	// offloaded tool result. SessionID is also the default session of
	// GrepSession.
	//
	// A non-empty SessionID scopes the workspace to that session (SPEC §9):
	// its artifacts live in the store namespace SessionNamespace(Namespace,
	// SessionID), so the same tool call id in another session is another
	// artifact, and every read of this Workspace sees that session only.
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
}

// Workspace is a view of one namespace of a Store: it offloads tool
// results into it and reads them back, as Go calls and as agent tools.
// It is safe for concurrent use when its Store is.
type Workspace struct {
	store Store
	opts  Options // Namespace is the store namespace: scoped to SessionID when set
	base  string  // the namespace the Options named
	log   *slog.Logger
}

// New returns a Workspace over store. opts may be nil.
func New(store Store, opts *Options) *Workspace {
	w := &Workspace{store: store}
	if opts != nil {
		w.opts = *opts
		w.opts.Metadata = cloneMetadata(opts.Metadata)
	}
	o := &w.opts
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	w.base = o.Namespace
	if o.SessionID != "" {
		o.Namespace = SessionNamespace(o.Namespace, o.SessionID)
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
	return w
}

// Store returns the workspace's store.
func (w *Workspace) Store() Store { return w.store }

// Namespace returns the store namespace the workspace's artifacts live in:
// SessionNamespace(namespace, session) for a workspace scoped to a session,
// else the namespace its Options named.
func (w *Workspace) Namespace() string { return w.opts.Namespace }

// BaseNamespace returns the namespace the workspace's Options named (the
// default one when they named none), before scoping to a session.
func (w *Workspace) BaseNamespace() string { return w.base }

// SessionID returns the session the workspace is scoped to, "" for none.
func (w *Workspace) SessionID() string { return w.opts.SessionID }

// SessionNamespace returns the store namespace of a session's artifacts in
// namespace: namespace + "/sessions/" + the session id, with "%" and "/" of
// the id written as %25 and %2F so that different (namespace, session)
// pairs never share a namespace.
func SessionNamespace(namespace, sessionID string) string {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	return namespace + "/sessions/" + strings.NewReplacer("%", "%25", "/", "%2F").Replace(sessionID)
}

// Get returns an artifact of the workspace whole, without the read cap.
func (w *Workspace) Get(ctx context.Context, id string) (*Artifact, error) {
	return w.store.Get(ctx, w.opts.Namespace, id)
}

// Query lists the artifacts of the workspace whose metadata matches f.
func (w *Workspace) Query(ctx context.Context, f Filter) ([]Info, error) {
	return w.store.Query(ctx, w.opts.Namespace, f)
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
