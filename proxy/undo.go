package proxy

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/workspace"
)

// A request the upstream refuses leaves nothing stored (issue 49.4: 20
// POSTs refused 401 left 180 MB in 400 artifacts). The engine's stores
// are wrapped (undoStores, in NewPipelineEngine) so that what one
// request's preparation writes is recorded in its undo log (the log rides
// on the context the Engine is given): the artifacts it created (ids that
// were free) and the session states it saved, with the state each save
// replaced. When the upstream answers 4xx or 5xx, the proxy rolls the
// request back before the client has the answer: each session state goes
// back to what it was (a compare-and-swap on the version the request
// saved: a session another request saved since is left alone, and so are
// the artifacts), then the artifacts it created are deleted. Artifacts
// already stored by earlier requests are never touched, nor one another
// request of this process found in the meantime (it may name it). The
// rollback restores what the next request finds: its results are seen as
// new and stored again. A request the upstream never answered (its
// connection failed, no answer headers in time, the client gone first)
// was not accepted either, and is rolled back the same way.

// undoTimeout bounds a rollback's store calls.
const undoTimeout = 10 * time.Second

type undoKey struct{}

// withUndo returns ctx carrying u.
func withUndo(ctx context.Context, u *undoLog) context.Context {
	if u == nil {
		return ctx
	}
	return context.WithValue(ctx, undoKey{}, u)
}

func undoOf(ctx context.Context) *undoLog {
	u, _ := ctx.Value(undoKey{}).(*undoLog)
	return u
}

type nsID struct{ ns, id string }

// undoLog is what one request's preparation stored.
type undoLog struct {
	mu      sync.Mutex
	created []createdArtifact
	loads   map[nsID][]loadedState // the states it loaded, by session
	saved   map[nsID]*savedState
	// unsafe: a write the log cannot take back (a session saved over a
	// version it did not load, or deleted): the request is not rolled
	// back.
	unsafe bool
	done   bool // rolled back or released: records no more
}

type createdArtifact struct {
	w   *undoWorkspace
	key nsID
	ref *pendingRef
}

type loadedState struct {
	data    []byte // nil when not found
	version int64
	found   bool
}

type savedState struct {
	s      session.Store // the unwrapped store
	prior  loadedState   // what the first save replaced
	latest int64         // the version the request's last save made
}

func (u *undoLog) loaded(k nsID, l loadedState) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.loads == nil {
		u.loads = map[nsID][]loadedState{}
	}
	u.loads[k] = append(u.loads[k], l)
}

func (u *undoLog) savedAt(s session.Store, k nsID, from, to int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if sv := u.saved[k]; sv != nil {
		if sv.latest != from {
			u.unsafe = true // another writer saved in between
		}
		sv.latest = to
		return
	}
	for _, l := range u.loads[k] {
		if l.version == from && (l.found || from == 0) {
			if u.saved == nil {
				u.saved = map[nsID]*savedState{}
			}
			u.saved[k] = &savedState{s: s, prior: l, latest: to}
			return
		}
	}
	u.unsafe = true // saved over a state it did not load
}

func (u *undoLog) markUnsafe() {
	u.mu.Lock()
	u.unsafe = true
	u.mu.Unlock()
}

func (u *undoLog) addCreated(c createdArtifact) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.created = append(u.created, c)
}

// empty reports whether the log holds nothing to take back.
func (u *undoLog) empty() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.created) == 0 && len(u.saved) == 0
}

// rollback takes back what the request stored: the session states first,
// then, only if they all went back, the artifacts it created. It returns
// the artifacts deleted.
func (u *undoLog) rollback(ctx context.Context) (int, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.done {
		return 0, nil
	}
	u.done = true
	defer u.releaseLocked()
	if u.unsafe {
		return 0, errUndoUnsafe
	}
	for k, sv := range u.saved {
		var err error
		if sv.prior.found {
			_, err = sv.s.Save(ctx, k.ns, k.id, sv.prior.data, sv.latest)
		} else {
			err = sv.s.DeleteVersion(ctx, k.ns, k.id, sv.latest)
		}
		if err != nil {
			return 0, err // another request saved the session since: its state may name the artifacts
		}
	}
	n := 0
	for _, c := range u.created {
		if c.w.shared(c) {
			continue // another request found it: it may name it
		}
		if err := c.w.s.Delete(ctx, c.key.ns, c.key.id); err != nil && !errors.Is(err, workspace.ErrNotFound) {
			return n, err
		}
		n++
	}
	return n, nil
}

// release ends the log of a request that is not rolled back.
func (u *undoLog) release() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.done = true
	u.releaseLocked()
}

func (u *undoLog) releaseLocked() {
	for _, c := range u.created {
		c.w.unpend(c)
	}
}

var errUndoUnsafe = errors.New("a session state it cannot take back was written")

// undoStores wraps the engine's stores so that each request's writes are
// recorded in its undo log. A workspace store without the abilities a
// backend's store has (workspace.NewStore's: lines, search, location,
// session state) is left as it is: its requests are not rolled back.
func undoStores(ws workspace.Store, ss session.Store) (workspace.Store, session.Store) {
	inner, ok := ws.(tracedAbilities)
	if ws == nil || ss == nil || !ok {
		return ws, ss
	}
	w := &undoWorkspace{s: inner, pending: map[nsID]*pendingRef{}}
	var out workspace.Store = w
	if p, ok := ws.(workspace.Pather); ok {
		out = &undoPather{undoWorkspace: w, p: p}
	}
	return out, &undoSessions{Store: ss}
}

var (
	_ tracedAbilities        = (*undoWorkspace)(nil)
	_ workspace.Pather       = (*undoPather)(nil)
	_ workspace.StreamWriter = (*undoWorkspace)(nil)
)

// undoWorkspace records the artifacts a request creates. pending holds
// those of requests in flight; one another request finds (Stat, Get) is
// marked shared, never deleted by a rollback.
type undoWorkspace struct {
	s tracedAbilities

	mu      sync.Mutex
	pending map[nsID]*pendingRef
}

type pendingRef struct {
	owner  *undoLog
	shared bool
}

type undoPather struct {
	*undoWorkspace
	p workspace.Pather
}

func (p *undoPather) Path(ns, id string) (string, error) { return p.p.Path(ns, id) }

func (w *undoWorkspace) created(ctx context.Context, ns, id string) {
	u := undoOf(ctx)
	if u == nil {
		return
	}
	k := nsID{ns, id}
	ref := &pendingRef{owner: u}
	w.mu.Lock()
	w.pending[k] = ref
	w.mu.Unlock()
	u.addCreated(createdArtifact{w: w, key: k, ref: ref})
}

// found marks an artifact another request created, still in flight, as
// shared.
func (w *undoWorkspace) found(ctx context.Context, ns, id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ref := w.pending[nsID{ns, id}]; ref != nil && ref.owner != undoOf(ctx) {
		ref.shared = true
	}
}

func (w *undoWorkspace) shared(c createdArtifact) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return c.ref.shared
}

func (w *undoWorkspace) unpend(c createdArtifact) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending[c.key] == c.ref {
		delete(w.pending, c.key)
	}
}

// absent reports whether id is free in ns, when ctx carries an undo log
// (a Put there creates it).
func (w *undoWorkspace) absent(ctx context.Context, ns, id string) bool {
	if undoOf(ctx) == nil {
		return false
	}
	_, err := w.s.Stat(ctx, ns, id)
	return errors.Is(err, workspace.ErrNotFound)
}

func (w *undoWorkspace) Put(ctx context.Context, ns string, a workspace.Artifact) (workspace.Info, error) {
	fresh := w.absent(ctx, ns, a.ID)
	in, err := w.s.Put(ctx, ns, a)
	if err == nil && fresh {
		w.created(ctx, ns, a.ID)
	}
	return in, err
}

// PutStream implements workspace.StreamWriter, as the store would
// (workspace.PutStream).
func (w *undoWorkspace) PutStream(ctx context.Context, ns string, s workspace.Stream) (workspace.Info, error) {
	fresh := w.absent(ctx, ns, s.ID)
	in, err := workspace.PutStream(ctx, w.s, ns, s)
	if err == nil && fresh {
		w.created(ctx, ns, s.ID)
	}
	return in, err
}

func (w *undoWorkspace) Create(ctx context.Context, ns string, a workspace.Artifact) (workspace.Info, error) {
	in, err := w.s.Create(ctx, ns, a)
	if err == nil {
		w.created(ctx, ns, a.ID)
	}
	return in, err
}

func (w *undoWorkspace) Get(ctx context.Context, ns, id string) (*workspace.Artifact, error) {
	a, err := w.s.Get(ctx, ns, id)
	if err == nil {
		w.found(ctx, ns, id)
	}
	return a, err
}

func (w *undoWorkspace) Stat(ctx context.Context, ns, id string) (workspace.Info, error) {
	in, err := w.s.Stat(ctx, ns, id)
	if err == nil {
		w.found(ctx, ns, id)
	}
	return in, err
}

func (w *undoWorkspace) Query(ctx context.Context, ns string, f workspace.Filter) ([]workspace.Info, error) {
	return w.s.Query(ctx, ns, f)
}

func (w *undoWorkspace) Delete(ctx context.Context, ns, id string) error {
	return w.s.Delete(ctx, ns, id)
}

func (w *undoWorkspace) Namespaces(ctx context.Context) ([]string, error) {
	return w.s.Namespaces(ctx)
}

func (w *undoWorkspace) Lines(ctx context.Context, ns, id string, start, end int) (*workspace.LineRange, error) {
	return w.s.Lines(ctx, ns, id, start, end)
}

func (w *undoWorkspace) Grep(ctx context.Context, ns string, q workspace.GrepQuery) (*workspace.GrepResult, error) {
	return w.s.Grep(ctx, ns, q)
}

func (w *undoWorkspace) Close() error     { return w.s.Close() }
func (w *undoWorkspace) Location() string { return w.s.Location() }

func (w *undoWorkspace) OpenSessions(ctx context.Context) (session.Store, error) {
	return w.s.OpenSessions(ctx)
}

// undoSessions records the session states a request loads and saves.
type undoSessions struct {
	session.Store
}

func (s *undoSessions) Load(ctx context.Context, ns, id string) ([]byte, int64, error) {
	data, v, err := s.Store.Load(ctx, ns, id)
	if u := undoOf(ctx); u != nil {
		switch {
		case err == nil:
			u.loaded(nsID{ns, id}, loadedState{data: data, version: v, found: true})
		case errors.Is(err, session.ErrNotFound):
			u.loaded(nsID{ns, id}, loadedState{})
		}
	}
	return data, v, err
}

func (s *undoSessions) Save(ctx context.Context, ns, id string, data []byte, version int64) (int64, error) {
	nv, err := s.Store.Save(ctx, ns, id, data, version)
	if u := undoOf(ctx); u != nil && err == nil {
		u.savedAt(s.Store, nsID{ns, id}, version, nv)
	}
	return nv, err
}

func (s *undoSessions) Delete(ctx context.Context, ns, id string) error {
	if u := undoOf(ctx); u != nil {
		u.markUnsafe()
	}
	return s.Store.Delete(ctx, ns, id)
}

func (s *undoSessions) DeleteVersion(ctx context.Context, ns, id string, version int64) error {
	if u := undoOf(ctx); u != nil {
		u.markUnsafe()
	}
	return s.Store.DeleteVersion(ctx, ns, id, version)
}

// undoRefused rolls back what x's preparation stored, the upstream having
// refused the request (status 4xx or 5xx) or given no answer (why says
// which), and logs it.
func (s *Server) undoRefused(ctx context.Context, x *exchange, why string) {
	u := x.undo
	if u == nil || u.empty() {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
	defer cancel()
	n, err := u.rollback(ctx)
	if err != nil {
		s.log.Warn("proxy: "+why+"; what the request stored is kept", "session", x.session, "status", x.status, "error", err.Error())
		return
	}
	s.log.Info("proxy: "+why+"; what the request stored was removed", "session", x.session, "status", x.status, "artifacts_removed", n)
}
