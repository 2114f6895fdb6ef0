package workspace

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/workspace/driver"
)

// DefaultStoreTimeout bounds each call of a Store made by NewStore whose
// options set no Timeout.
const DefaultStoreTimeout = 30 * time.Second

// StoreOptions configure the Store NewStore returns. The zero value is the
// default.
type StoreOptions struct {
	// Timeout bounds each call (unless ctx ends sooner): past it the call
	// fails with an error matching context.DeadlineExceeded. 0 means
	// DefaultStoreTimeout; a negative value means no bound but ctx's.
	Timeout time.Duration
}

// NewStore returns the portable Store over a backend's driver: it checks
// every call's ctx, namespace, id and artifact, measures what is stored,
// refuses calls after Close, bounds each call and wraps the driver's
// errors, so that a driver does only its I/O (see driver.Store). The
// driver's optional abilities are the Store's: its own line reader and
// search (else the generic ones over Get and Query), its Location, its
// Path (a Pather only when the driver is one) and the session state it
// keeps (session.Keeper: OpenSessions fails with an error matching
// errors.ErrUnsupported when the driver keeps none). Every backend's Open
// returns one. The zero StoreOptions means the documented defaults.
func NewStore(d driver.Store, opts StoreOptions) Store {
	p := &portable{d: d, timeout: DefaultStoreTimeout}
	if opts.Timeout != 0 {
		p.timeout = opts.Timeout
	}
	if pd, ok := d.(interface {
		Path(namespace, id string) (string, error)
	}); ok {
		return &portablePather{portable: p, pd: pd}
	}
	return p
}

var (
	_ LineReader     = (*portable)(nil)
	_ StreamWriter   = (*portable)(nil)
	_ Searcher       = (*portable)(nil)
	_ Locator        = (*portable)(nil)
	_ session.Keeper = (*portable)(nil)
	_ Pather         = (*portablePather)(nil)
)

type portable struct {
	d       driver.Store
	timeout time.Duration
	closed  atomic.Bool
}

func nop() {}

// begin checks a call and returns its bounded ctx.
func (p *portable) begin(ctx context.Context, op, ns, id string, needID bool) (context.Context, context.CancelFunc, error) {
	if err := driver.Check(ctx, op, ns, id, needID); err != nil {
		return nil, nil, err
	}
	if p.closed.Load() {
		return nil, nil, &Error{Op: op, Namespace: ns, ID: id, Err: ErrClosed}
	}
	if dl, ok := ctx.Deadline(); p.timeout < 0 || ok && time.Until(dl) <= p.timeout {
		return ctx, nop, nil // ctx ends first anyway (a pipeline's StoreTimeout)
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	return ctx, cancel, nil
}

// wrap makes a driver's error the Store's: an *Error for the call (a
// driver's own *Error keeps its key, with the call's operation), and the
// context's error when ctx ended (a driver's "interrupted" is that).
func wrap(ctx context.Context, err error, op, ns, id string) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		err = cerr
	}
	if e, ok := errors.AsType[*Error](err); ok {
		if e.Op == op {
			return e
		}
		c := *e
		c.Op = op
		return &c
	}
	return &Error{Op: op, Namespace: ns, ID: id, Err: err}
}

func (p *portable) write(ctx context.Context, op, ns string, a Artifact, call func(context.Context, string, Artifact) (Info, error)) (Info, error) {
	ctx, cancel, err := p.begin(ctx, op, ns, a.ID, true)
	if err != nil {
		return Info{}, err
	}
	defer cancel()
	if err := driver.ValidateArtifact(&a); err != nil {
		return Info{}, &Error{Op: op, Namespace: ns, ID: a.ID, Err: err}
	}
	info, err := call(ctx, ns, driver.Measure(a))
	if err != nil {
		return Info{}, wrap(ctx, err, op, ns, a.ID)
	}
	return info, nil
}

func (p *portable) Put(ctx context.Context, ns string, a Artifact) (Info, error) {
	return p.write(ctx, "put", ns, a, p.d.Put)
}

func (p *portable) Create(ctx context.Context, ns string, a Artifact) (Info, error) {
	return p.write(ctx, "create", ns, a, p.d.Create)
}

func (p *portable) Get(ctx context.Context, ns, id string) (*Artifact, error) {
	ctx, cancel, err := p.begin(ctx, "get", ns, id, true)
	if err != nil {
		return nil, err
	}
	defer cancel()
	a, err := p.d.Get(ctx, ns, id)
	if err != nil {
		return nil, wrap(ctx, err, "get", ns, id)
	}
	return a, nil
}

func (p *portable) Stat(ctx context.Context, ns, id string) (Info, error) {
	ctx, cancel, err := p.begin(ctx, "stat", ns, id, true)
	if err != nil {
		return Info{}, err
	}
	defer cancel()
	info, err := p.d.Stat(ctx, ns, id)
	if err != nil {
		return Info{}, wrap(ctx, err, "stat", ns, id)
	}
	return info, nil
}

func (p *portable) Query(ctx context.Context, ns string, f Filter) ([]Info, error) {
	ctx, cancel, err := p.begin(ctx, "query", ns, "", false)
	if err != nil {
		return nil, err
	}
	defer cancel()
	list, err := p.d.Query(ctx, ns, f)
	if err != nil {
		return nil, wrap(ctx, err, "query", ns, "")
	}
	return list, nil
}

func (p *portable) Delete(ctx context.Context, ns, id string) error {
	ctx, cancel, err := p.begin(ctx, "delete", ns, id, true)
	if err != nil {
		return err
	}
	defer cancel()
	return wrap(ctx, p.d.Delete(ctx, ns, id), "delete", ns, id)
}

func (p *portable) Namespaces(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, &Error{Op: "namespaces", Err: err}
	}
	if p.closed.Load() {
		return nil, &Error{Op: "namespaces", Err: ErrClosed}
	}
	ctx, cancel := ctx, nop
	if dl, ok := ctx.Deadline(); p.timeout >= 0 && (!ok || time.Until(dl) > p.timeout) {
		ctx, cancel = context.WithTimeout(ctx, p.timeout)
	}
	defer cancel()
	list, err := p.d.Namespaces(ctx)
	if err != nil {
		return nil, wrap(ctx, err, "namespaces", "", "")
	}
	return list, nil
}

func (p *portable) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	return p.d.Close()
}

// Lines implements LineReader with the driver's own when it has one, else
// over Get (see Lines).
func (p *portable) Lines(ctx context.Context, ns, id string, start, end int) (*LineRange, error) {
	lr, ok := p.d.(interface {
		Lines(ctx context.Context, namespace, id string, start, end int) (*LineRange, error)
	})
	if !ok {
		return genericLines(ctx, p, ns, id, start, end)
	}
	ctx, cancel, err := p.begin(ctx, "lines", ns, id, true)
	if err != nil {
		return nil, err
	}
	defer cancel()
	r, err := lr.Lines(ctx, ns, id, start, end)
	if err != nil {
		return nil, wrap(ctx, err, "lines", ns, id)
	}
	return r, nil
}

// Grep implements Searcher with the driver's own when it has one, else
// over Query and Get (see Grep).
func (p *portable) Grep(ctx context.Context, ns string, q GrepQuery) (*GrepResult, error) {
	sr, ok := p.d.(interface {
		Grep(ctx context.Context, namespace string, q GrepQuery) (*GrepResult, error)
	})
	if !ok {
		return genericGrep(ctx, p, ns, q)
	}
	ctx, cancel, err := p.begin(ctx, "grep", ns, q.ID, q.ID != "")
	if err != nil {
		return nil, err
	}
	defer cancel()
	r, err := sr.Grep(ctx, ns, q)
	if err != nil {
		return nil, wrap(ctx, err, "grep", ns, q.ID)
	}
	return r, nil
}

// Location implements Locator: the driver's, or "" when it says none.
func (p *portable) Location() string {
	if l, ok := p.d.(interface{ Location() string }); ok {
		return l.Location()
	}
	return ""
}

// OpenSessions implements session.Keeper: the driver's, or an error
// matching errors.ErrUnsupported when it keeps no session state.
func (p *portable) OpenSessions(ctx context.Context) (session.Store, error) {
	k, ok := p.d.(session.Keeper)
	if !ok {
		return nil, fmt.Errorf("workspace: %T keeps no session state: %w", p.d, errors.ErrUnsupported)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if p.closed.Load() {
		return nil, fmt.Errorf("workspace: open sessions: %w", ErrClosed)
	}
	return k.OpenSessions(ctx)
}

// portablePather is the portable store over a driver that keeps each
// artifact's content in a file.
type portablePather struct {
	*portable
	pd interface {
		Path(namespace, id string) (string, error)
	}
}

// Path implements Pather.
func (p *portablePather) Path(ns, id string) (string, error) {
	if err := driver.Check(context.Background(), "path", ns, id, true); err != nil {
		return "", err
	}
	return p.pd.Path(ns, id)
}
