package workspace

import (
	"errors"

	"github.com/agentctx/agentctx/workspace/driver"
)

// The types a Store takes and returns, and its errors, are defined in
// package workspace/driver, beside what backends use to implement a Store;
// they are the same types here (as os.FileInfo is fs.FileInfo).

// ArtifactType tells how an artifact's content was produced.
type ArtifactType = driver.ArtifactType

// Artifact types (seed 003: ArtifactType.TEXT, ArtifactType.JSON).
const (
	// TypeText is content that was a string.
	TypeText = driver.TypeText
	// TypeJSON is content that was not a string (a block array, an object)
	// and is stored as its compact JSON.
	TypeJSON = driver.TypeJSON
)

// DefaultMaxResults is the number of matching lines a grep returns when
// GrepQuery.MaxResults is 0 (SPEC §5).
const DefaultMaxResults = driver.DefaultMaxResults

type (
	// Metadata is an artifact's string metadata. A missing key reads as "".
	Metadata = driver.Metadata
	// Info describes an artifact without its content: what Query lists.
	Info = driver.Info
	// Artifact is one stored item: its description and its whole content.
	Artifact = driver.Artifact
	// Filter selects artifacts by metadata.
	Filter = driver.Filter
	// LineRange is a part of an artifact, by lines.
	LineRange = driver.LineRange
	// GrepQuery is a line search (see Grep).
	GrepQuery = driver.GrepQuery
	// GrepResult is what a grep found.
	GrepResult = driver.GrepResult
	// GrepHit is the matches in one artifact, with their context lines.
	GrepHit = driver.GrepHit
	// GrepLine is one line shown by a grep.
	GrepLine = driver.GrepLine
	// Error is the error a Store returns: the operation, the key, and the
	// cause (a sentinel, a context error, or an I/O error).
	Error = driver.Error
)

// Sentinel errors for callers to branch on with errors.Is.
var (
	ErrNotFound         = driver.ErrNotFound
	ErrExists           = driver.ErrExists
	ErrInvalidID        = driver.ErrInvalidID
	ErrInvalidNamespace = driver.ErrInvalidNamespace
	ErrInvalidMetadata  = driver.ErrInvalidMetadata
	ErrInvalidRange     = driver.ErrInvalidRange
	ErrInvalidPattern   = driver.ErrInvalidPattern
	ErrClosed           = driver.ErrClosed
	// ErrInvalidLocation is returned by a backend's Open for a location it
	// cannot be (a directory store's root that is a file).
	ErrInvalidLocation = driver.ErrInvalidLocation
)

// Errors of the agent tools.
var (
	// ErrUnknownTool is returned by Execute for a tool name that is not
	// one of Tools, so an agent loop can hand the call to its other tools.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrInvalidArguments is returned by Execute for arguments that do not
	// fit the tool's schema.
	ErrInvalidArguments = errors.New("invalid tool arguments")
)
