package driver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"maps"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ArtifactType tells how an artifact's content was produced.
type ArtifactType string

// Artifact types (seed 003: ArtifactType.TEXT, ArtifactType.JSON).
const (
	// TypeText is content that was a string.
	TypeText ArtifactType = "text"
	// TypeJSON is content that was not a string (a block array, an object)
	// and is stored as its compact JSON.
	TypeJSON ArtifactType = "json"
)

// Metadata is an artifact's string metadata. A missing key reads as "".
type Metadata map[string]string

// Info describes an artifact without its content: what Query lists.
type Info struct {
	ID       string       `json:"id"`       // unique in the namespace (tool_result_<call id>, compact_<hash>, ...)
	Type     ArtifactType `json:"type"`     // text or json
	Metadata Metadata     `json:"metadata"` // string pairs: context_type, tool name, session, ...
	// Created is when the artifact was stored, as the writer set it (UTC;
	// the zero time when the writer set none).
	Created time.Time `json:"created_at"`
	// Sizes, computed by the store from the content.
	Chars  int    `json:"chars"`  // Unicode code points (SPEC §1)
	Lines  int    `json:"lines"`  // see CountLines
	Bytes  int    `json:"bytes"`  // UTF-8 bytes
	SHA256 string `json:"sha256"` // hex SHA-256 of the content
}

// Artifact is one stored item: its description and its whole content.
type Artifact struct {
	Info
	Content string `json:"content"`
}

// Measure returns a copy of a with Type defaulted to TypeText, Created in
// UTC, Metadata copied (never nil), and Chars, Lines, Bytes and SHA256
// computed from Content. Backends call it in Put so that every backend
// describes content the same way.
func Measure(a Artifact) Artifact {
	if a.Type == "" {
		a.Type = TypeText
	}
	if !a.Created.IsZero() {
		a.Created = a.Created.UTC()
	}
	a.Metadata = cloneMetadata(a.Metadata)
	a.Chars = utf8.RuneCountInString(a.Content)
	a.Lines = CountLines(a.Content)
	a.Bytes = len(a.Content)
	a.SHA256 = sha256Hex(a.Content)
	return a
}

// sha256Hex hashes s through a small buffer, so that a large content is
// not copied whole.
func sha256Hex(s string) string {
	h := sha256.New()
	var buf [32 << 10]byte
	for s != "" {
		n := copy(buf[:], s)
		h.Write(buf[:n])
		s = s[n:]
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Clone returns a copy of the description that shares no map with i.
func (i Info) Clone() Info {
	i.Metadata = cloneMetadata(i.Metadata)
	return i
}

func cloneMetadata(m Metadata) Metadata {
	if m == nil {
		return Metadata{}
	}
	return maps.Clone(m)
}

// CountLines returns the number of lines of s: lines end at "\n", and a
// final "\n" does not start another line. "" has 0 lines, "a" and "a\n"
// have 1, "a\nb" has 2.
func CountLines(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if s[len(s)-1] != '\n' {
		n++
	}
	return n
}

// SplitLines splits s into its lines (see CountLines), without their line
// endings: a "\r" before the "\n" is part of the ending.
func SplitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := make([]string, 0, CountLines(s))
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, strings.TrimSuffix(s[:i], "\r"))
		s = s[i+1:]
	}
	return lines
}

// ValidateID reports whether id can name an artifact: it must be non-empty
// valid UTF-8. Any other character is allowed ("/", "..", NUL, spaces);
// backends store such ids safely.
func ValidateID(id string) error {
	if id == "" {
		return ErrInvalidID
	}
	if !utf8.ValidString(id) {
		return ErrInvalidID
	}
	return nil
}

// ValidateNamespace reports whether ns can name a namespace: non-empty
// valid UTF-8, like an id.
func ValidateNamespace(ns string) error {
	if ns == "" || !utf8.ValidString(ns) {
		return ErrInvalidNamespace
	}
	return nil
}

// ValidateArtifact checks what Put requires of an artifact: a valid id,
// metadata keys and values that are valid UTF-8 with non-empty keys.
func ValidateArtifact(a *Artifact) error {
	if err := ValidateID(a.ID); err != nil {
		return err
	}
	for k, v := range a.Metadata {
		if k == "" || !utf8.ValidString(k) || !utf8.ValidString(v) {
			return ErrInvalidMetadata
		}
	}
	if !utf8.ValidString(string(a.Type)) {
		return ErrInvalidMetadata
	}
	return nil
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

// relabel returns err with the operation of its *Error set to op, so that
// a failed Get inside Lines reads as a failed "lines".
func relabel(err error, op string) error {
	var e *Error
	if errors.As(err, &e) && e.Op != op {
		c := *e
		c.Op = op
		return &c
	}
	return err
}

// GrepInfos searches, in order, the artifacts that list describes (a Query
// result), reading each content with read; an artifact that read reports
// ErrNotFound for (deleted since the listing) is left out. It is Grep over
// a filter once the candidates are listed: a Searcher that lists them its
// own way, or reads contents more cheaply than Get, uses it.
func GrepInfos(ctx context.Context, namespace string, q GrepQuery, list []Info, read func(Info) (string, error)) (*GrepResult, error) {
	g, err := NewGrepper(q)
	if err != nil {
		return nil, &Error{Op: "grep", Namespace: namespace, ID: q.ID, Err: err}
	}
	for i, info := range list {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, &Error{Op: "grep", Namespace: namespace, Err: err}
			}
		}
		content, err := read(info)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				err = &Error{Op: "grep", Namespace: namespace, ID: info.ID, Err: err}
			}
			return nil, relabel(err, "grep")
		}
		g.Add(info.ID, content)
	}
	return g.Result(), nil
}
