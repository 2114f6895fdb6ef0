package session

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Driver is what a session backend implements: the I/O, and nothing the
// Store contract asks of every backend alike. New wraps a Driver in the
// portable Store that programs hold, which does that part once:
//
//   - It checks ctx, the namespace and the id before a call reaches the
//     driver: a driver is called with a live ctx and non-empty valid
//     UTF-8 keys (List's namespace may be "", meaning every namespace).
//   - It refuses every call after Close (ErrClosed) and calls the
//     driver's Close once.
//   - It bounds each call with Options.Timeout unless ctx ends sooner.
//   - It wraps every error in an *Error naming the operation and the key
//     (an *Error the driver returns is kept as it is).
//   - It sorts List's result by namespace, then id.
//
// The driver keeps the rest of the contract (versions, compare-and-swap,
// byte-for-byte data, concurrency; processes too for a shared backend):
// Load, Stat, Delete and DeleteVersion of a missing session return an
// error matching ErrNotFound, a Save or DeleteVersion of another version
// one matching ErrConflict. A driver stops long work when ctx ends.
// Every backend passes sessiontest (RunDriver) through New.
type Driver interface {
	Load(ctx context.Context, namespace, id string) (data []byte, version int64, err error)
	Save(ctx context.Context, namespace, id string, data []byte, version int64) (int64, error)
	Delete(ctx context.Context, namespace, id string) error
	DeleteVersion(ctx context.Context, namespace, id string, version int64) error
	Stat(ctx context.Context, namespace, id string) (Info, error)
	List(ctx context.Context, namespace string) ([]Info, error)
	Close() error
}

// DefaultTimeout bounds each call of a Store made by New whose Options
// set no Timeout.
const DefaultTimeout = 30 * time.Second

// Options configure the Store New returns. The zero value is the default.
type Options struct {
	// Timeout bounds each call (unless ctx ends sooner); past it the call
	// fails with an error matching context.DeadlineExceeded. 0 means
	// DefaultTimeout; a negative value means no bound but ctx's.
	Timeout time.Duration
}

// New returns the portable Store over a driver (see Driver). The zero
// Options means the documented defaults.
func New(d Driver, opts Options) Store {
	s := &portable{d: d, timeout: DefaultTimeout}
	if opts.Timeout != 0 {
		s.timeout = opts.Timeout
	}
	return s
}

type portable struct {
	d       Driver
	timeout time.Duration
	closed  atomic.Bool
}

// begin checks a call and returns its bounded ctx.
func (s *portable) begin(ctx context.Context, op, ns, id string, list bool) (context.Context, context.CancelFunc, error) {
	fail := func(err error) (context.Context, context.CancelFunc, error) {
		return nil, nil, &Error{Op: op, Namespace: ns, ID: id, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	if !utf8.ValidString(ns) || !utf8.ValidString(id) || (!list && (ns == "" || id == "")) {
		return fail(ErrInvalidKey)
	}
	if s.closed.Load() {
		return fail(ErrClosed)
	}
	if dl, ok := ctx.Deadline(); s.timeout < 0 || ok && time.Until(dl) <= s.timeout {
		return ctx, nop, nil // ctx ends first anyway (a pipeline's StoreTimeout)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	return ctx, cancel, nil
}

// wrap makes a driver's error the Store's: an *Error naming the call, and
// the context's error when ctx ended (a driver's "interrupted" is that).
func nop() {}

func wrap(ctx context.Context, err error, op, ns, id string) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		err = cerr
	}
	if _, ok := errors.AsType[*Error](err); ok {
		return err
	}
	return &Error{Op: op, Namespace: ns, ID: id, Err: err}
}

func (s *portable) Load(ctx context.Context, ns, id string) ([]byte, int64, error) {
	ctx, cancel, err := s.begin(ctx, "load", ns, id, false)
	if err != nil {
		return nil, 0, err
	}
	defer cancel()
	data, v, err := s.d.Load(ctx, ns, id)
	if err != nil {
		return nil, 0, wrap(ctx, err, "load", ns, id)
	}
	return data, v, nil
}

func (s *portable) Save(ctx context.Context, ns, id string, data []byte, version int64) (int64, error) {
	ctx, cancel, err := s.begin(ctx, "save", ns, id, false)
	if err != nil {
		return 0, err
	}
	defer cancel()
	v, err := s.d.Save(ctx, ns, id, data, version)
	if err != nil {
		return 0, wrap(ctx, err, "save", ns, id)
	}
	return v, nil
}

func (s *portable) Delete(ctx context.Context, ns, id string) error {
	ctx, cancel, err := s.begin(ctx, "delete", ns, id, false)
	if err != nil {
		return err
	}
	defer cancel()
	return wrap(ctx, s.d.Delete(ctx, ns, id), "delete", ns, id)
}

func (s *portable) DeleteVersion(ctx context.Context, ns, id string, version int64) error {
	ctx, cancel, err := s.begin(ctx, "delete", ns, id, false)
	if err != nil {
		return err
	}
	defer cancel()
	return wrap(ctx, s.d.DeleteVersion(ctx, ns, id, version), "delete", ns, id)
}

func (s *portable) Stat(ctx context.Context, ns, id string) (Info, error) {
	ctx, cancel, err := s.begin(ctx, "stat", ns, id, false)
	if err != nil {
		return Info{}, err
	}
	defer cancel()
	in, err := s.d.Stat(ctx, ns, id)
	if err != nil {
		return Info{}, wrap(ctx, err, "stat", ns, id)
	}
	return in, nil
}

func (s *portable) List(ctx context.Context, ns string) ([]Info, error) {
	ctx, cancel, err := s.begin(ctx, "list", ns, "", true)
	if err != nil {
		return nil, err
	}
	defer cancel()
	list, err := s.d.List(ctx, ns)
	if err != nil {
		return nil, wrap(ctx, err, "list", ns, "")
	}
	slices.SortFunc(list, func(a, b Info) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.ID, b.ID))
	})
	return list, nil
}

func (s *portable) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.d.Close()
}
