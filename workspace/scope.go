package workspace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ErrAmbiguousID is matched (errors.Is) by an *AmbiguousIDError: a read
// by id that names no session, of an id that names the results of several
// sessions.
var ErrAmbiguousID = errors.New("the id names the results of several sessions")

// Candidate is one artifact an ambiguous id may name: its id and the
// session that stored it ("" for none).
type Candidate struct {
	ID        string `json:"id"`
	SessionID string `json:"session_id"`
}

// AmbiguousIDError is Resolve's error for an id whose results several
// sessions hold (two sessions whose agents both number their calls call_0
// store tool_result_call_0 and tool_result_call_0-2): it lists them, so
// that the caller names the session or one of the ids.
type AmbiguousIDError struct {
	Namespace  string
	ID         string
	Candidates []Candidate // oldest first
}

func (e *AmbiguousIDError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "workspace: %s names the results of %d sessions in namespace %s: ", quote(e.ID), e.sessions(), quote(e.Namespace))
	for i, c := range e.Candidates {
		if i > 0 {
			b.WriteString(", ")
		}
		session := quote(c.SessionID)
		if c.SessionID == "" {
			session = "none"
		}
		fmt.Fprintf(&b, "%s (session %s)", quote(c.ID), session)
	}
	return b.String()
}

// Unwrap returns ErrAmbiguousID.
func (e *AmbiguousIDError) Unwrap() error { return ErrAmbiguousID }

func (e *AmbiguousIDError) sessions() int {
	seen := map[string]bool{}
	for _, c := range e.Candidates {
		seen[c.SessionID] = true
	}
	return len(seen)
}

// Resolve returns the id a read by id of the workspace reads for id, as
// GetKnowledgeByID, GetKnowledgeByLines and GrepKnowledge do, and reports
// an id that names no one artifact.
//
// The artifact id of a tool result (tool_result_<tool call id>) is a name
// that several sessions may hold: an id is never overwritten with other
// content, so when two sessions' agents both call a tool call_0, the first
// result is stored as tool_result_call_0 and the second as
// tool_result_call_0-2. With a SessionID, the plain id names that
// session's result: the id itself when the session stored it, else the
// session's own suffixed id (the lowest), else the id as given (the only
// result by that name is another session's, readable as before). Without
// a SessionID, an id whose results several sessions hold is an
// *AmbiguousIDError (ErrAmbiguousID) listing them; any other id is itself.
// Any other id (a suffixed id, a compaction's archive) is always itself.
func (w *Workspace) Resolve(ctx context.Context, id string) (string, error) {
	if w.opts.SessionID != "" {
		return w.scopedID(ctx, id)
	}
	names, err := w.sameName(ctx, id)
	if err != nil {
		return "", err
	}
	amb := &AmbiguousIDError{Namespace: w.opts.Namespace, ID: id}
	for _, n := range names {
		amb.Candidates = append(amb.Candidates, Candidate{ID: n.ID, SessionID: n.Metadata[KeySessionID]})
	}
	if amb.sessions() > 1 {
		return "", amb
	}
	return id, nil
}

// scopedID returns the id that id names within the workspace's session
// (see Resolve); id itself without a SessionID.
func (w *Workspace) scopedID(ctx context.Context, id string) (string, error) {
	if w.opts.SessionID == "" {
		return id, nil
	}
	info, err := w.store.Stat(ctx, w.opts.Namespace, id)
	switch {
	case err == nil && info.Metadata[KeySessionID] == w.opts.SessionID:
		return id, nil // the session's own
	case err != nil && !errors.Is(err, ErrNotFound):
		return "", err
	}
	names, err := w.sameName(ctx, id)
	if err != nil {
		return "", err
	}
	for _, n := range names {
		if n.Metadata[KeySessionID] == w.opts.SessionID {
			return n.ID, nil
		}
	}
	return id, nil
}

// sameName returns the stored results that the artifact id of a tool call
// names across sessions: the id itself and its suffixed ids (id-2, id-3,
// ...) that hold a result of the same tool call, in the order of their
// suffix (the id itself first). It returns nil for an id that is not a
// tool result's artifact id.
func (w *Workspace) sameName(ctx context.Context, id string) ([]Info, error) {
	call, ok := strings.CutPrefix(id, ArtifactIDPrefix)
	if !ok || call == "" {
		return nil, nil
	}
	list, err := w.store.Query(ctx, w.opts.Namespace, Filter{Metadata: Metadata{KeyContextType: ContextToolResult, KeyBizID: call}})
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, info := range list {
		if suffixOf(info.ID, id) >= 0 {
			out = append(out, info)
		}
	}
	slices.SortStableFunc(out, func(a, b Info) int { return suffixOf(a.ID, id) - suffixOf(b.ID, id) })
	return out, nil
}

// suffixOf returns k when id is base + "-k" (k of 2 or more, as
// OffloadToolResult writes it), 0 when id is base, -1 otherwise.
func suffixOf(id, base string) int {
	if id == base {
		return 0
	}
	rest, ok := strings.CutPrefix(id, base+"-")
	if !ok || rest == "" || rest[0] == '0' {
		return -1
	}
	k, err := strconv.Atoi(rest)
	if err != nil || k < 2 || k > maxSuffix {
		return -1
	}
	return k
}
