package pipeline

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/workspace"
)

// Sessions looks after the sessions stored by pipelines: it lists them
// with what they hold, shows one, deletes one, and prunes by a Retention.
// A session is its state in Sessions (package session) and the workspace
// artifacts it owns: those whose metadata session_id names it (offloaded
// tool results, compaction archives), in the same namespace.
//
// Both stores are needed; the fields are not changed by the methods, which
// are safe for concurrent use when the stores are.
type Sessions struct {
	Workspace workspace.Store
	Sessions  session.Store
	// Now is the clock that ages are measured with; nil means time.Now.
	Now func() time.Time
	// Logger receives one line per deletion; nil means none.
	Logger *slog.Logger
}

// SessionInfo describes one stored session.
type SessionInfo struct {
	Namespace string `json:"namespace"` // the workspace namespace the session is kept in
	ID        string `json:"id"`        // the session id (a client's own, or the proxy's h-<hash>)
	// Requests is the number of requests the pipeline prepared, and
	// Compactions the compactions it made.
	Requests    int `json:"requests"`
	Compactions int `json:"compactions"`
	// Tokens is the count of the last prepared request.
	Tokens int `json:"tokens"`
	// LastActivity is the last prepared request, or the state's last save
	// when later (a usage report).
	LastActivity time.Time `json:"last_activity"`
	// StateBytes is the size of the stored state; Artifacts and
	// ArtifactBytes count the artifacts the session owns (Archives of
	// them are compaction archives); Size is the sum of the bytes.
	StateBytes    int64 `json:"state_bytes"`
	Artifacts     int   `json:"artifacts"`
	Archives      int   `json:"archives"`
	ArtifactBytes int64 `json:"artifact_bytes"`
	Size          int64 `json:"size"`
	// Version is the state's version: a deletion is of this version only.
	Version int64 `json:"version"`
	// Unreadable says why the state could not be read (a newer schema);
	// its counts are then zero.
	Unreadable string `json:"unreadable,omitempty"`

	refs    map[string]bool // artifacts the state names, and those its summaries name
	summary string          // the compaction summary, whose pointers name artifacts
}

// SessionDetail is one session with its artifacts.
type SessionDetail struct {
	SessionInfo
	// Offloaded and Pruned count the tool results the state replaced.
	Offloaded int `json:"offloaded"`
	Pruned    int `json:"pruned"`
	// Summary is the compaction summary standing for the start of the
	// history, "" when none.
	Summary string `json:"summary,omitempty"`
	// ArtifactList describes the artifacts the session owns or names,
	// oldest first.
	ArtifactList []workspace.Info `json:"artifact_list"`
}

// Retention says what Prune deletes. The zero value deletes nothing.
type Retention struct {
	// MaxAge deletes a session whose last activity is older than MaxAge,
	// with the artifacts it owns, and an artifact of no stored session
	// created longer than MaxAge ago. 0 means no limit by age.
	MaxAge time.Duration
	// MaxBytes then deletes, while a namespace's sessions and artifacts
	// together hold more bytes, the idlest sessions whole and then the
	// oldest artifacts of no session, never what Live protects. 0 means no
	// limit by size.
	MaxBytes int64
	// Live protects from size pruning a session active within Live and an
	// artifact created within it. 0 means DefaultLive; a negative Live
	// protects nothing.
	Live time.Duration
	// DryRun reports what would be deleted and deletes nothing.
	DryRun bool
}

// DefaultLive is Retention.Live's default: a session active in the last
// hour is in use (a prompt cache lives 5 minutes to an hour).
const DefaultLive = time.Hour

// PruneReport is what Delete and Prune removed (or, with DryRun, would).
type PruneReport struct {
	Sessions  []string `json:"sessions"`  // "namespace/id" of each session deleted
	Artifacts int      `json:"artifacts"` // artifacts deleted
	Bytes     int64    `json:"bytes"`     // bytes freed (states and artifacts)
	// Skipped lists the sessions found active while they were deleted
	// (saved since they were judged), left whole.
	Skipped []string `json:"skipped,omitempty"`
	// Remaining is the namespaces' bytes after pruning.
	Remaining int64 `json:"remaining_bytes"`
	// DryRun says that nothing was deleted: the report says what would
	// have been.
	DryRun bool `json:"dry_run,omitempty"`
}

// ErrSessionNotFound is returned by Show and Delete for a session with no
// stored state.
var ErrSessionNotFound = errors.New("session not found")

func (s *Sessions) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Sessions) log() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// nsView is what one namespace holds: its sessions and its artifacts.
type nsView struct {
	ns        string
	sessions  []*SessionInfo
	artifacts []workspace.Info
	owner     map[string]int  // artifact id → index in sessions (-1: none)
	unknown   bool            // a state is unreadable: its references are unknown
	gone      map[int]bool    // sessions deleted
	goneArts  map[string]bool // artifacts deleted
}

// view reads a namespace: every session state (decoded) and every
// artifact's description.
func (s *Sessions) view(ctx context.Context, ns string, infos []session.Info) (*nsView, error) {
	v := &nsView{ns: ns, owner: map[string]int{}, gone: map[int]bool{}, goneArts: map[string]bool{}}
	byID := map[string]int{}
	for _, in := range infos {
		si, err := s.describe(ctx, in)
		if errors.Is(err, session.ErrNotFound) {
			continue // deleted since it was listed
		}
		if err != nil {
			return nil, err
		}
		if si.Unreadable != "" {
			v.unknown = true
		}
		byID[si.ID] = len(v.sessions)
		v.sessions = append(v.sessions, si)
	}
	arts, err := s.Workspace.Query(ctx, ns, workspace.Filter{})
	if err != nil {
		return nil, fmt.Errorf("sessions: list artifacts of %q: %w", ns, err)
	}
	v.artifacts = arts
	if err := s.summaryRefs(ctx, v); err != nil {
		return nil, err
	}
	for _, a := range arts {
		i, ok := byID[a.Metadata[workspace.KeySessionID]]
		if !ok {
			i = -1
		}
		v.owner[a.ID] = i
		if i >= 0 {
			si := v.sessions[i]
			si.Artifacts++
			si.ArtifactBytes += int64(a.Bytes)
			si.Size += int64(a.Bytes)
			if a.Metadata[workspace.KeyContextType] == ContextCompactionArchive {
				si.Archives++
			}
		}
	}
	return v, nil
}

// describe loads a session's state and reads what it holds.
func (s *Sessions) describe(ctx context.Context, in session.Info) (*SessionInfo, error) {
	data, version, err := s.Sessions.Load(ctx, in.Namespace, in.ID)
	if err != nil {
		return nil, fmt.Errorf("sessions: %w", err)
	}
	si := &SessionInfo{Namespace: in.Namespace, ID: in.ID, Version: version, StateBytes: int64(len(data)),
		Size: int64(len(data)), LastActivity: in.Updated.UTC(), refs: map[string]bool{}}
	st := newState()
	switch err := json.Unmarshal(data, st); {
	case err != nil:
		si.Unreadable = "unreadable state: " + err.Error()
		return si, nil
	case st.Schema > stateSchema:
		si.Unreadable = fmt.Sprintf("state schema %d is newer than this program's %d", st.Schema, stateSchema)
		return si, nil
	}
	si.Requests, si.Compactions, si.Tokens = st.Requests, st.Compactions, st.Counted
	if st.LastAt.After(si.LastActivity) {
		si.LastActivity = st.LastAt.UTC()
	}
	for _, r := range st.Results {
		if r.Artifact != "" {
			si.refs[r.Artifact] = true
		}
	}
	if st.Compaction != nil {
		if st.Compaction.Archive != "" {
			si.refs[st.Compaction.Archive] = true
		}
		si.summary = st.Compaction.Summary
	}
	return si, nil
}

// summaryRefs adds to each session's references the artifacts its
// compaction summary names (its "Stored originals" pointers, which the
// model reads back) and, through the archives it names, those that the
// summaries of earlier compactions inside them name: what a later
// compaction carried out of its own summary stays listed there. An
// archive is read once per namespace.
func (s *Sessions) summaryRefs(ctx context.Context, v *nsView) error {
	ids := map[string]bool{}
	for _, a := range v.artifacts {
		ids[a.ID] = true
	}
	archives := map[string][]string{} // archive id → artifacts its content names
	for _, si := range v.sessions {
		queue := mentions(si.summary, ids)
		for id := range si.refs {
			queue = append(queue, id)
		}
		seen := map[string]bool{}
		for len(queue) > 0 {
			id := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			if seen[id] || !ids[id] {
				continue
			}
			seen[id] = true
			si.refs[id] = true
			if !strings.HasPrefix(id, ArchiveIDPrefix) {
				continue
			}
			named, read := archives[id]
			if !read {
				a, err := s.Workspace.Get(ctx, v.ns, id)
				if errors.Is(err, workspace.ErrNotFound) {
					continue
				}
				if err != nil {
					return fmt.Errorf("sessions: read archive: %w", err)
				}
				named = mentions(a.Content, ids)
				archives[id] = named
			}
			queue = append(queue, named...)
		}
	}
	return nil
}

// mentions returns the artifact ids of ids that text names: the words
// starting with a prefix of the ids agentctx writes (tool_result_,
// compact_), up to a character that ends a word in a pointer line or in
// JSON (space, quote, bracket, comma, backquote), trailing dots and colons
// aside.
func mentions(text string, ids map[string]bool) []string {
	var out []string
	for _, prefix := range []string{workspace.ArtifactIDPrefix, ArchiveIDPrefix} {
		rest := text
		for {
			i := strings.Index(rest, prefix)
			if i < 0 {
				break
			}
			rest = rest[i:]
			end := strings.IndexAny(rest, " \t\n\r\"'`()[]{}<>,;\\")
			if end < 0 {
				end = len(rest)
			}
			word := strings.TrimRight(rest[:end], ".:")
			if ids[word] {
				out = append(out, word)
			}
			rest = rest[len(prefix):]
		}
	}
	return out
}

// namespaces lists the sessions of ns ("" for every namespace), grouped by
// namespace in order.
func (s *Sessions) namespaces(ctx context.Context, ns string) ([]string, map[string][]session.Info, error) {
	infos, err := s.Sessions.List(ctx, ns)
	if err != nil {
		return nil, nil, fmt.Errorf("sessions: %w", err)
	}
	groups := map[string][]session.Info{}
	var order []string
	if ns != "" {
		order = []string{ns}
	}
	for _, in := range infos {
		if _, seen := groups[in.Namespace]; !seen && ns == "" {
			order = append(order, in.Namespace)
		}
		groups[in.Namespace] = append(groups[in.Namespace], in)
	}
	return order, groups, nil
}

// List describes the sessions of namespace ns, or of every namespace of
// the session store when ns is "", ordered by namespace then id.
func (s *Sessions) List(ctx context.Context, ns string) ([]SessionInfo, error) {
	order, groups, err := s.namespaces(ctx, ns)
	if err != nil {
		return nil, err
	}
	out := []SessionInfo{}
	for _, n := range order {
		v, err := s.view(ctx, n, groups[n])
		if err != nil {
			return nil, err
		}
		for _, si := range v.sessions {
			out = append(out, *si)
		}
	}
	return out, nil
}

// Show describes one session with its artifacts: those it owns and those
// its state names. A session without a stored state is ErrSessionNotFound.
func (s *Sessions) Show(ctx context.Context, ns, id string) (*SessionDetail, error) {
	in, err := s.Sessions.Stat(ctx, ns, id)
	if errors.Is(err, session.ErrNotFound) {
		return nil, fmt.Errorf("sessions: %q in namespace %q: %w", id, ns, ErrSessionNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sessions: %w", err)
	}
	v, err := s.view(ctx, ns, []session.Info{in})
	if err != nil {
		return nil, err
	}
	if len(v.sessions) == 0 {
		return nil, fmt.Errorf("sessions: %q in namespace %q: %w", id, ns, ErrSessionNotFound)
	}
	si := v.sessions[0]
	d := &SessionDetail{SessionInfo: *si, ArtifactList: []workspace.Info{}}
	for _, a := range v.artifacts {
		if v.owner[a.ID] == 0 || si.refs[a.ID] {
			d.ArtifactList = append(d.ArtifactList, a)
		}
	}
	if data, _, err := s.Sessions.Load(ctx, ns, id); err == nil {
		st := newState()
		if json.Unmarshal(data, st) == nil {
			for _, r := range st.Results {
				switch r.Action {
				case actionOffloaded:
					d.Offloaded++
				case actionPruned:
					d.Pruned++
				}
			}
			if st.Compaction != nil {
				d.Summary = st.Compaction.Summary
			}
		}
	}
	return d, nil
}

// Delete deletes one session: its state, then the artifacts it owns that
// no other session of the namespace names. A session without a stored
// state is ErrSessionNotFound. A session saved while it is deleted is
// left whole and reported in Skipped.
func (s *Sessions) Delete(ctx context.Context, ns, id string, dryRun bool) (*PruneReport, error) {
	_, groups, err := s.namespaces(ctx, ns)
	if err != nil {
		return nil, err
	}
	v, err := s.view(ctx, ns, groups[ns])
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(v.sessions, func(si *SessionInfo) bool { return si.ID == id })
	if i < 0 {
		return nil, fmt.Errorf("sessions: %q in namespace %q: %w", id, ns, ErrSessionNotFound)
	}
	rep := &PruneReport{Sessions: []string{}, DryRun: dryRun}
	if err := s.deleteSession(ctx, v, i, rep, dryRun); err != nil {
		return rep, err
	}
	rep.Remaining = v.total()
	return rep, nil
}

// Prune applies r to namespace ns, or when ns is "" to every namespace
// that holds sessions or artifacts.
//
// What Prune guarantees, whatever r says:
//   - a session's state is deleted only at the version that was judged
//     (session.Store.DeleteVersion): a session saved since is left whole
//     and reported in Skipped;
//   - an artifact is deleted only when no remaining session owns it or
//     names it: in its state (a result's original, its compaction
//     archive), in its compaction summary's pointers, or in the summaries
//     inside the archives it names, however deep;
//     when a state cannot be read, no artifact of no session is deleted in
//     its namespace;
//   - size pruning never deletes a session active within r.Live, nor an
//     artifact created within it.
//
// A session's state goes before its artifacts: a crash in between leaves
// artifacts of no session, which the next Prune deletes by age or size.
func (s *Sessions) Prune(ctx context.Context, ns string, r Retention) (*PruneReport, error) {
	if ns != "" {
		return s.prune(ctx, r, func(n string) bool { return n == ns }, ns)
	}
	return s.prune(ctx, r, func(string) bool { return true }, "")
}

// PruneEvery prunes by r every interval until ctx ends (first at once),
// the namespaces for which match is true (nil: every one), and logs each
// pruning that deleted something. It returns ctx's error; a failed
// pruning is logged and tried again at the next interval. An interval of
// 0 or less means an hour.
func (s *Sessions) PruneEvery(ctx context.Context, interval time.Duration, r Retention, match func(namespace string) bool) error {
	if interval <= 0 {
		interval = time.Hour
	}
	if match == nil {
		match = func(string) bool { return true }
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		rep, err := s.prune(ctx, r, match, "")
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			s.log().ErrorContext(ctx, "sessions: retention failed", "error", err)
		case len(rep.Sessions) > 0 || rep.Artifacts > 0 || len(rep.Skipped) > 0:
			s.log().InfoContext(ctx, "sessions: retention", "sessions", len(rep.Sessions), "artifacts", rep.Artifacts,
				"bytes", rep.Bytes, "skipped", len(rep.Skipped), "remaining_bytes", rep.Remaining)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// prune applies r to the namespaces match accepts: ns alone when it is
// not "", else every namespace holding sessions or artifacts.
func (s *Sessions) prune(ctx context.Context, r Retention, match func(string) bool, ns string) (*PruneReport, error) {
	rep := &PruneReport{Sessions: []string{}, DryRun: r.DryRun}
	order, groups, err := s.namespaces(ctx, ns)
	if err != nil {
		return nil, err
	}
	if ns == "" {
		spaces, err := s.Workspace.Namespaces(ctx)
		if err != nil {
			return nil, fmt.Errorf("sessions: %w", err)
		}
		for _, n := range spaces {
			if _, ok := groups[n]; !ok {
				order = append(order, n)
			}
		}
		slices.Sort(order)
		order = slices.DeleteFunc(order, func(n string) bool { return !match(n) })
	}
	live := cmp.Or(r.Live, DefaultLive)
	if live < 0 {
		live = 0
	}
	now := s.now()
	for _, n := range order {
		v, err := s.view(ctx, n, groups[n])
		if err != nil {
			return rep, err
		}
		// By age: idle sessions, then old artifacts of no session.
		if r.MaxAge > 0 {
			for i, si := range v.sessions {
				if now.Sub(si.LastActivity) > r.MaxAge {
					if err := s.deleteSession(ctx, v, i, rep, r.DryRun); err != nil {
						return rep, err
					}
				}
			}
			for _, a := range v.unowned() {
				if now.Sub(a.Created) > r.MaxAge {
					if err := s.deleteArtifact(ctx, v, a, rep, r.DryRun); err != nil {
						return rep, err
					}
				}
			}
		}
		// By size: the idlest sessions, then the oldest artifacts of no
		// session, until the namespace fits.
		if r.MaxBytes > 0 {
			idle := slices.Clone(v.sessions)
			slices.SortStableFunc(idle, func(a, b *SessionInfo) int { return a.LastActivity.Compare(b.LastActivity) })
			for _, si := range idle {
				if v.total() <= r.MaxBytes {
					break
				}
				i := slices.Index(v.sessions, si)
				if v.gone[i] || (live > 0 && now.Sub(si.LastActivity) <= live) {
					continue
				}
				if err := s.deleteSession(ctx, v, i, rep, r.DryRun); err != nil {
					return rep, err
				}
			}
			for _, a := range v.unowned() {
				if v.total() <= r.MaxBytes {
					break
				}
				if v.goneArts[a.ID] || (live > 0 && now.Sub(a.Created) <= live) {
					continue
				}
				if err := s.deleteArtifact(ctx, v, a, rep, r.DryRun); err != nil {
					return rep, err
				}
			}
		}
		rep.Remaining += v.total()
	}
	return rep, nil
}

// total is the namespace's bytes without what was deleted.
func (v *nsView) total() int64 {
	var n int64
	for i, si := range v.sessions {
		if !v.gone[i] {
			n += si.StateBytes
		}
	}
	for _, a := range v.artifacts {
		if !v.goneArts[a.ID] {
			n += int64(a.Bytes)
		}
	}
	return n
}

// named reports whether a remaining session's state names artifact id.
func (v *nsView) named(id string) bool {
	for i, si := range v.sessions {
		if !v.gone[i] && si.refs[id] {
			return true
		}
	}
	return false
}

// unowned lists, oldest first, the artifacts still there that no
// remaining session owns or names: none when a state is unreadable.
func (v *nsView) unowned() []workspace.Info {
	if v.unknown {
		return nil
	}
	var out []workspace.Info
	for _, a := range v.artifacts {
		if i := v.owner[a.ID]; (i < 0 || v.gone[i]) && !v.goneArts[a.ID] && !v.named(a.ID) {
			out = append(out, a)
		}
	}
	return out // Query's order: by Created, then ID
}

// deleteSession deletes session i's state at its judged version, then the
// artifacts it owns that no remaining session names.
func (s *Sessions) deleteSession(ctx context.Context, v *nsView, i int, rep *PruneReport, dryRun bool) error {
	si := v.sessions[i]
	key := si.Namespace + "/" + si.ID
	if !dryRun {
		err := s.Sessions.DeleteVersion(ctx, si.Namespace, si.ID, si.Version)
		switch {
		case errors.Is(err, session.ErrConflict):
			rep.Skipped = append(rep.Skipped, key)
			return nil
		case errors.Is(err, session.ErrNotFound):
			// Deleted by someone else: its artifacts are still ours to go.
		case err != nil:
			return fmt.Errorf("sessions: %w", err)
		}
	}
	v.gone[i] = true
	rep.Sessions = append(rep.Sessions, key)
	rep.Bytes += si.StateBytes
	s.log().InfoContext(ctx, "sessions: deleted session", "namespace", si.Namespace, "session", si.ID, "dry_run", dryRun)
	for _, a := range v.artifacts {
		if v.owner[a.ID] != i || v.named(a.ID) || v.goneArts[a.ID] {
			continue
		}
		if err := s.deleteArtifact(ctx, v, a, rep, dryRun); err != nil {
			return err
		}
	}
	return nil
}

func (s *Sessions) deleteArtifact(ctx context.Context, v *nsView, a workspace.Info, rep *PruneReport, dryRun bool) error {
	if !dryRun {
		err := s.Workspace.Delete(ctx, v.ns, a.ID)
		if err != nil && !errors.Is(err, workspace.ErrNotFound) {
			return fmt.Errorf("sessions: %w", err)
		}
	}
	v.goneArts[a.ID] = true
	rep.Artifacts++
	rep.Bytes += int64(a.Bytes)
	s.log().InfoContext(ctx, "sessions: deleted artifact", "namespace", v.ns, "artifact", a.ID, "dry_run", dryRun)
	return nil
}
