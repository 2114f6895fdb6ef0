package driver

import "context"

// Store is what a workspace backend implements: the I/O, and nothing the
// workspace.Store contract asks of every backend alike. workspace.NewStore
// wraps a Store in the portable workspace.Store that programs hold, which
// does that part once, before a call reaches the driver:
//
//   - ctx is live, the namespace is valid (Check), and so is the id where
//     the method takes one; Put and Create get an artifact that passed
//     ValidateArtifact, measured by Measure (sizes, SHA-256, UTC time,
//     metadata copied).
//   - No call comes after Close, and Close comes once.
//   - Each call is bounded by a deadline (workspace.StoreOptions.Timeout)
//     unless ctx ends sooner.
//   - Errors are wrapped in an *Error naming the operation and the key; a
//     driver returns the sentinels (ErrNotFound, ErrExists, ...) bare, or
//     an *Error of its own (kept, with the operation set).
//
// The driver keeps the rest of the contract: Put replaces, Create never
// does (atomically, across processes for a shared backend), Get and Stat
// return copies, Query returns SortInfos order through Page, Namespaces
// lists the non-empty namespaces in byte order. Optional abilities are
// the same interfaces as a workspace.Store's, implemented by the driver:
// LineReader, Searcher, Locator, Pather (see package workspace), and
// session.Keeper; the portable store checks their arguments too.
type Store interface {
	Put(ctx context.Context, namespace string, a Artifact) (Info, error)
	Create(ctx context.Context, namespace string, a Artifact) (Info, error)
	Get(ctx context.Context, namespace, id string) (*Artifact, error)
	Stat(ctx context.Context, namespace, id string) (Info, error)
	Query(ctx context.Context, namespace string, f Filter) ([]Info, error)
	Delete(ctx context.Context, namespace, id string) error
	Namespaces(ctx context.Context) ([]string, error)
	Close() error
}
