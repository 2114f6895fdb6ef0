package workspace

import (
	"context"
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
//     does not compile ErrInvalidPattern, use after Close ErrClosed,
//     inside an *Error naming the operation and key (the portable store
//     of NewStore does this for every backend).
//   - Ids and namespaces are any non-empty valid UTF-8 ("/", "..", NUL and
//     very long ids included); two different ids are two artifacts.
//   - Put replaces an artifact with the same id whole (content, type,
//     metadata, created time). Create never replaces: it stores an
//     artifact only when its id is free, atomically, so that of any number
//     of writers creating one id at once (goroutines, processes, machines
//     sharing the store) exactly one succeeds and every other gets
//     ErrExists, and the id holds the winner's artifact. Writes that must
//     not replace use Create. Sizes and SHA256 are computed by the store
//     (see driver.Measure); the values in the argument are ignored. The store
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
// loading the whole content (see Lines). Its Lines follows driver.LinesOf's rules
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
