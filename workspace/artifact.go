package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
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

// Metadata keys that agentctx writes on every offloaded tool result
// (SPEC §5). Queries match them, and any other key, exactly.
const (
	KeyContextType = "context_type" // always ContextToolResult for offloaded tool results
	KeyBizID       = "biz_id"       // the tool call id
	KeyAgentID     = "agent_id"
	KeyTaskID      = "task_id"
	KeySessionID   = "session_id"
	KeyToolName    = "tool_name"
	KeyActionName  = "action_name"
)

// ContextToolResult is the context_type of an offloaded tool result.
const ContextToolResult = "tool_result"

// ArtifactIDPrefix is the prefix of a tool result's artifact id: the
// artifact of tool call "toolu_01" is "tool_result_toolu_01".
const ArtifactIDPrefix = "tool_result_"

// ArtifactID returns the artifact id of a tool call's result.
func ArtifactID(toolCallID string) string { return ArtifactIDPrefix + toolCallID }

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
