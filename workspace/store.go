package workspace

import (
	"context"
	"errors"
	"strconv"
)

// Store keeps artifacts, grouped in namespaces that never see each other.
//
// Contract, checked for every backend by the storetest conformance suite:
//
//   - Safe for concurrent use by many goroutines. A reader sees an artifact
//     as a whole: the content and description of one Put, never a mix of
//     two, and never part of a content.
//   - Every method checks ctx first: with a cancelled or expired ctx it
//     returns an error matching ctx.Err() and changes nothing. Long
//     listings and searches stop when ctx ends.
//   - Errors wrap sentinels for errors.Is: a missing artifact is
//     ErrNotFound (Get, Stat, Delete, and Lines and Grep with an ID); an id
//     already taken is ErrExists (Create); a bad
//     id is ErrInvalidID, a bad namespace ErrInvalidNamespace, bad metadata
//     ErrInvalidMetadata, a bad line range ErrInvalidRange, a pattern that
//     does not compile ErrInvalidPattern, use after Close ErrClosed.
//     Backends return them inside an *Error naming the operation and key.
//   - Ids and namespaces are any non-empty valid UTF-8 ("/", "..", NUL and
//     very long ids included); two different ids are two artifacts.
//   - Put replaces an artifact with the same id whole (content, type,
//     metadata, created time). Create never replaces: it stores an
//     artifact only when its id is free, atomically, so that of any number
//     of writers creating one id at once (goroutines, processes, machines
//     sharing the store) exactly one succeeds and every other gets
//     ErrExists, and the id holds the winner's artifact. Writes that must
//     not replace use Create. Sizes and SHA256 are computed by the store
//     (see Measure); the values in the argument are ignored. The store
//     keeps no reference to the argument's map, and callers may modify
//     what a method returns.
//   - Content is kept byte for byte, whatever its size.
//   - Query returns artifacts ordered by Created, then by ID.
//   - Namespaces lists the namespaces that hold at least one artifact, in
//     byte order: one emptied by Delete is not listed. With Query, Stat
//     and Delete it is what retention needs (pipeline.Sessions.Prune).
//
// Reading lines and searching are not methods: the functions Lines and
// Grep do them for every Store over Get and Query, and use a backend's
// own LineReader or Searcher when it has one (as io.Copy uses an
// io.WriterTo). Other optional abilities are named too: Locator and
// Pather.
//
// Backends: dirstore (a directory, the embedded default), sqlitestore (an
// embedded SQLite file, indexed), pgstore (a PostgreSQL database shared by
// a fleet), memstore (memory, for tests).
type Store interface {
	// Put stores a, replacing any artifact with the same id in namespace,
	// and returns its description as stored.
	Put(ctx context.Context, namespace string, a Artifact) (Info, error)
	// Create stores a only when no artifact has its id in namespace, and
	// returns its description as stored; when the id is taken it changes
	// nothing and returns an error matching ErrExists. The check and the
	// write are one atomic step, across processes too.
	Create(ctx context.Context, namespace string, a Artifact) (Info, error)
	// Get returns an artifact with its whole content.
	Get(ctx context.Context, namespace, id string) (*Artifact, error)
	// Stat returns an artifact's description (sizes and SHA256 included)
	// without reading its content: the cheap way to learn whether an
	// artifact exists or changed. It equals the Info of Get.
	Stat(ctx context.Context, namespace, id string) (Info, error)
	// Query lists the artifacts whose metadata matches f, without content.
	Query(ctx context.Context, namespace string, f Filter) ([]Info, error)
	// Delete removes an artifact.
	Delete(ctx context.Context, namespace, id string) error
	// Namespaces lists the namespaces that hold artifacts, in byte order.
	Namespaces(ctx context.Context) ([]string, error)
	// Close releases the store's resources. Other methods fail with
	// ErrClosed afterwards; Close itself may be called again.
	Close() error
}

// LineReader is a Store that reads a range of lines itself, without
// loading the whole content (see Lines). Its Lines follows LinesOf's rules
// and the Store contract, with errors for the operation "lines".
type LineReader interface {
	Store
	Lines(ctx context.Context, namespace, id string, start, end int) (*LineRange, error)
}

// Searcher is a Store that searches itself (see Grep), for instance with
// an index or on a database server. Its Grep must return exactly what the
// generic search returns: the same hits, counts and order, with errors for
// the operation "grep".
type Searcher interface {
	Store
	Grep(ctx context.Context, namespace string, q GrepQuery) (*GrepResult, error)
}

// Locator is a Store that can say where it keeps its data, for people: a
// directory, a file, a database address without its password.
type Locator interface {
	Store
	Location() string
}

// Pather is a Store that keeps each artifact's content in a file of its
// own, which people and tools may read directly.
type Pather interface {
	Store
	// Path returns the path of an artifact's content file. The file may
	// not exist.
	Path(namespace, id string) (string, error)
}

// Filter selects artifacts by metadata.
type Filter struct {
	// Metadata holds the keys to match exactly; all must match. A missing
	// key reads as "", so {"task_id": ""} selects artifacts without a
	// task_id. An empty map matches every artifact.
	Metadata Metadata
	// Offset skips that many artifacts of the ordered result; Limit caps
	// it (0 means no limit).
	Offset, Limit int
}

// Match reports whether an artifact's metadata matches the filter (Offset
// and Limit aside).
func (f Filter) Match(m Metadata) bool {
	for k, v := range f.Metadata {
		if m[k] != v {
			return false
		}
	}
	return true
}

// LineRange is a part of an artifact, by lines.
type LineRange struct {
	ID    string   `json:"id"`
	Start int      `json:"start"` // first line, 1-based
	End   int      `json:"end"`   // last line, inclusive, clamped to Total
	Total int      `json:"total"` // lines in the artifact
	Lines []string `json:"lines"` // lines Start..End, without line endings
}

// Error is the error a Store returns: the operation, the key, and the
// cause (a sentinel, a context error, or an I/O error).
type Error struct {
	Op        string // "put", "create", "get", "stat", "lines", "grep", "query", "delete", "namespaces"
	Namespace string
	ID        string // empty for operations on a whole namespace
	Err       error
}

// Error returns "workspace: OP "ID" in namespace "NS": cause".
func (e *Error) Error() string {
	s := "workspace: " + e.Op
	if e.ID != "" {
		s += " " + strconv.Quote(e.ID)
	}
	if e.Namespace != "" {
		s += " in namespace " + strconv.Quote(e.Namespace)
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Sentinel errors for callers to branch on with errors.Is.
var (
	ErrNotFound         = errors.New("artifact not found")
	ErrExists           = errors.New("artifact already exists")
	ErrInvalidID        = errors.New("invalid artifact id: want non-empty UTF-8")
	ErrInvalidNamespace = errors.New("invalid namespace: want non-empty UTF-8")
	ErrInvalidMetadata  = errors.New("invalid metadata: want non-empty UTF-8 keys and UTF-8 values")
	ErrInvalidRange     = errors.New("invalid line range")
	ErrInvalidPattern   = errors.New("invalid pattern")
	ErrClosed           = errors.New("store is closed")
	// ErrInvalidLocation is returned by a backend's Open for a location it
	// cannot be (a directory store's root that is a file).
	ErrInvalidLocation = errors.New("invalid store location")
	// ErrUnknownTool is returned by Execute for a tool name that is not
	// one of Tools, so an agent loop can hand the call to its other tools.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrInvalidArguments is returned by Execute for arguments that do not
	// fit the tool's schema.
	ErrInvalidArguments = errors.New("invalid tool arguments")
)

// Check validates the namespace (and id, when not empty) of a Store
// operation and the context, and wraps the failure in an *Error. Backends
// call it first in every method.
func Check(ctx context.Context, op, namespace, id string, needID bool) error {
	if err := ctx.Err(); err != nil {
		return &Error{Op: op, Namespace: namespace, ID: id, Err: err}
	}
	if err := ValidateNamespace(namespace); err != nil {
		return &Error{Op: op, Namespace: namespace, ID: id, Err: err}
	}
	if needID {
		if err := ValidateID(id); err != nil {
			return &Error{Op: op, Namespace: namespace, ID: id, Err: err}
		}
	}
	return nil
}

// Page applies f.Offset and f.Limit to an ordered list.
func Page[T any](list []T, f Filter) []T {
	if f.Offset > 0 {
		if f.Offset >= len(list) {
			return list[:0]
		}
		list = list[f.Offset:]
	}
	if f.Limit > 0 && f.Limit < len(list) {
		list = list[:f.Limit]
	}
	return list
}
