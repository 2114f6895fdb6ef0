// Package rawjson splits JSON documents into raw pieces without losing a
// byte: object members in their original order, array elements, and scalar
// values exactly as written. It also writes JSON the way JavaScript's
// JSON.stringify does (minimal string escapes, no HTML escaping), which is
// what agentctx counts characters on.
//
// The scanner validates as it goes and reports the byte offset of the first
// error. Nesting is limited to MaxDepth so hostile input cannot exhaust the
// stack.
package rawjson

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects the scanner accepts.
const MaxDepth = 10000

// SyntaxError describes malformed JSON and where it is.
type SyntaxError struct {
	Offset int64 // byte offset of the error in the scanned input
	Msg    string
}

func (e *SyntaxError) Error() string { return e.Msg }

// Member is one member of a JSON object: its decoded key and its raw value.
type Member struct {
	Key    string
	RawKey []byte // the key's string token as written, quotes included; aliases the input
	Value  []byte // raw value, without surrounding whitespace; a subslice of the input
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// SkipSpace returns the index of the first non-whitespace byte at or after i.
func SkipSpace(data []byte, i int) int {
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	return i
}

func errAt(i int, format string, args ...any) error {
	return &SyntaxError{Offset: int64(i), Msg: fmt.Sprintf(format, args...)}
}

func describe(data []byte, i int) string {
	if i >= len(data) {
		return "unexpected end of JSON input"
	}
	r, _ := utf8.DecodeRune(data[i:])
	return fmt.Sprintf("invalid character %q", r)
}

// ValueEnd scans one JSON value starting at data[i] (no leading whitespace)
// and returns the index just past it.
func ValueEnd(data []byte, i int) (int, error) {
	return valueEnd(data, i, 0)
}

func valueEnd(data []byte, i, depth int) (int, error) {
	if i >= len(data) {
		return i, errAt(i, "unexpected end of JSON input")
	}
	switch c := data[i]; {
	case c == '"':
		return stringEnd(data, i)
	case c == '{':
		if depth >= MaxDepth {
			return i, errAt(i, "exceeded max depth %d", MaxDepth)
		}
		i = SkipSpace(data, i+1)
		if i < len(data) && data[i] == '}' {
			return i + 1, nil
		}
		for {
			if i >= len(data) || data[i] != '"' {
				return i, errAt(i, "%s looking for beginning of object key string", describe(data, i))
			}
			end, err := stringEnd(data, i)
			if err != nil {
				return end, err
			}
			i = SkipSpace(data, end)
			if i >= len(data) || data[i] != ':' {
				return i, errAt(i, "%s after object key", describe(data, i))
			}
			i = SkipSpace(data, i+1)
			if i, err = valueEnd(data, i, depth+1); err != nil {
				return i, err
			}
			i = SkipSpace(data, i)
			if i < len(data) && data[i] == ',' {
				i = SkipSpace(data, i+1)
				continue
			}
			if i < len(data) && data[i] == '}' {
				return i + 1, nil
			}
			return i, errAt(i, "%s after object key:value pair", describe(data, i))
		}
	case c == '[':
		if depth >= MaxDepth {
			return i, errAt(i, "exceeded max depth %d", MaxDepth)
		}
		i = SkipSpace(data, i+1)
		if i < len(data) && data[i] == ']' {
			return i + 1, nil
		}
		for {
			var err error
			if i, err = valueEnd(data, i, depth+1); err != nil {
				return i, err
			}
			i = SkipSpace(data, i)
			if i < len(data) && data[i] == ',' {
				i = SkipSpace(data, i+1)
				continue
			}
			if i < len(data) && data[i] == ']' {
				return i + 1, nil
			}
			return i, errAt(i, "%s after array element", describe(data, i))
		}
	case c == '-' || (c >= '0' && c <= '9'):
		return numberEnd(data, i)
	case c == 't':
		return literalEnd(data, i, "true")
	case c == 'f':
		return literalEnd(data, i, "false")
	case c == 'n':
		return literalEnd(data, i, "null")
	default:
		return i, errAt(i, "%s looking for beginning of value", describe(data, i))
	}
}

func literalEnd(data []byte, i int, lit string) (int, error) {
	for k := 0; k < len(lit); k++ {
		if i+k >= len(data) || data[i+k] != lit[k] {
			return i + k, errAt(i+k, "%s in literal %s", describe(data, i+k), lit)
		}
	}
	return i + len(lit), nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func numberEnd(data []byte, i int) (int, error) {
	if data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && isDigit(data[i]):
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	default:
		return i, errAt(i, "%s in numeric literal", describe(data, i))
	}
	if i < len(data) && data[i] == '.' {
		i++
		if i >= len(data) || !isDigit(data[i]) {
			return i, errAt(i, "%s after decimal point in numeric literal", describe(data, i))
		}
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= len(data) || !isDigit(data[i]) {
			return i, errAt(i, "%s in exponent of numeric literal", describe(data, i))
		}
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	}
	return i, nil
}

func isHex(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// stringEnd scans a string starting at the opening quote. Invalid UTF-8 is
// accepted (as encoding/json does); control characters are not.
func stringEnd(data []byte, i int) (int, error) {
	i++
	for i < len(data) {
		i = plainRun(data, i)
		if i >= len(data) {
			break
		}
		c := data[i]
		switch {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			if i+1 < len(data) && simpleEscape[data[i+1]] {
				i += 2 // the common case: \n, \", \\ ...
				continue
			}
			j, err := escapeEnd(data, i)
			if err != nil {
				return j, err
			}
			i = j
		default: // c < 0x20
			return i, errAt(i, "invalid character %q in string literal", rune(c))
		}
	}
	return i, errAt(i, "unexpected end of JSON input")
}

// simpleEscape marks the characters that follow a backslash in a
// two-byte escape.
var simpleEscape = [256]bool{'"': true, '\\': true, '/': true, 'b': true, 'f': true, 'n': true, 'r': true, 't': true}

// escapeEnd returns the index after the escape at data[i] (a backslash)
// that is not a two-byte one: a \u escape, or an error.
func escapeEnd(data []byte, i int) (int, error) {
	if i+1 >= len(data) {
		return i + 1, errAt(i+1, "unexpected end of JSON input")
	}
	if data[i+1] != 'u' {
		return i + 1, errAt(i+1, "%s in string escape code", describe(data, i+1))
	}
	for k := 2; k < 6; k++ {
		if i+k >= len(data) || !isHex(data[i+k]) {
			return i + k, errAt(i+k, "%s in \\u hexadecimal character escape", describe(data, i+k))
		}
	}
	return i + 6, nil
}

// ErrNotObject and ErrNotArray report a value of the wrong kind.
var (
	ErrNotObject = errors.New("not a JSON object")
	ErrNotArray  = errors.New("not a JSON array")
)

// Members splits a raw JSON object into its members in order. The values
// alias data. A duplicate key is kept as written (both members returned).
func Members(data []byte) ([]Member, error) {
	return MembersFunc(data, nil)
}

// AppendMembers is Members appending to dst (which it returns, or nil and
// the error): a caller that keeps the members in a form of its own can
// split into a buffer it reuses, such as an array on its stack, instead of
// a slice made per object.
func AppendMembers(dst []Member, data []byte) ([]Member, error) {
	return appendMembersFunc(dst, data, nil)
}

// MembersFunc is Members with the end of each member value found by valueAt:
// valueAt(key, i) returns the index just past the value that starts at data[i]
// (no leading whitespace), or an error. A nil valueAt, or one that returns -1
// and no error, scans the value as Members does. Callers use it to skip
// values they have validated before, or to split one member further as
// they go.
func MembersFunc(data []byte, valueAt func(key string, i int) (int, error)) ([]Member, error) {
	return appendMembersFunc(nil, data, valueAt)
}

func appendMembersFunc(out []Member, data []byte, valueAt func(key string, i int) (int, error)) ([]Member, error) {
	i := SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, ErrNotObject
	}
	i = SkipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		if j := SkipSpace(data, i+1); j != len(data) {
			return nil, errAt(j, "%s after top-level value", describe(data, j))
		}
		return out, nil
	}
	if out == nil {
		out = make([]Member, 0, 4) // a message or block has a few members: no growing from 1
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return nil, errAt(i, "%s looking for beginning of object key string", describe(data, i))
		}
		keyStart := i
		end, err := stringEnd(data, i)
		if err != nil {
			return nil, err
		}
		key, ok := CommonKey(data[i:end])
		if !ok {
			key = Unquote(data[i:end])
		}
		i = SkipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return nil, errAt(i, "%s after object key", describe(data, i))
		}
		i = SkipSpace(data, i+1)
		start := i
		j := -1
		if valueAt != nil {
			if j, err = valueAt(key, i); err != nil {
				return nil, err
			}
		}
		if j < 0 {
			if j, err = valueEnd(data, i, 1); err != nil {
				return nil, err
			}
		} else if j < i || j > len(data) {
			return nil, errAt(i, "value of %q ends out of range", key)
		}
		i = j
		out = append(out, Member{Key: key, RawKey: data[keyStart:end], Value: data[start:i]})
		i = SkipSpace(data, i)
		if i < len(data) && data[i] == ',' {
			i = SkipSpace(data, i+1)
			continue
		}
		if i < len(data) && data[i] == '}' {
			if j := SkipSpace(data, i+1); j != len(data) {
				return nil, errAt(j, "%s after top-level value", describe(data, j))
			}
			return out, nil
		}
		return nil, errAt(i, "%s after object key:value pair", describe(data, i))
	}
}

// Elements splits a raw JSON array into its elements. The values alias data.
func Elements(data []byte) ([][]byte, error) {
	return AppendElements([][]byte{}, data)
}

// AppendElements is Elements appending the elements to dst (which may be
// a caller's buffer on the stack), returned non-nil.
func AppendElements(dst [][]byte, data []byte) ([][]byte, error) {
	i := SkipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return nil, ErrNotArray
	}
	i = SkipSpace(data, i+1)
	out := dst
	if out == nil {
		out = [][]byte{}
	}
	if i < len(data) && data[i] == ']' {
		if j := SkipSpace(data, i+1); j != len(data) {
			return nil, errAt(j, "%s after top-level value", describe(data, j))
		}
		return out, nil
	}
	for {
		start := i
		var err error
		if i, err = valueEnd(data, i, 1); err != nil {
			return nil, err
		}
		out = append(out, data[start:i])
		i = SkipSpace(data, i)
		if i < len(data) && data[i] == ',' {
			i = SkipSpace(data, i+1)
			continue
		}
		if i < len(data) && data[i] == ']' {
			if j := SkipSpace(data, i+1); j != len(data) {
				return nil, errAt(j, "%s after top-level value", describe(data, j))
			}
			return out, nil
		}
		return nil, errAt(i, "%s after array element", describe(data, i))
	}
}

// Valid reports whether data is exactly one JSON value (surrounding
// whitespace allowed), and if not, where the first error is.
func Valid(data []byte) error {
	i := SkipSpace(data, 0)
	end, err := ValueEnd(data, i)
	if err != nil {
		return err
	}
	if j := SkipSpace(data, end); j != len(data) {
		return errAt(j, "%s after top-level value", describe(data, j))
	}
	return nil
}

// Kind returns the first byte of a raw value ('{', '[', '"', 'n', 't', 'f',
// or a number's first byte), or 0 for empty input.
func Kind(raw []byte) byte {
	i := SkipSpace(raw, 0)
	if i >= len(raw) {
		return 0
	}
	return raw[i]
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// hasLess returns a word whose high bits mark the bytes of x below n (n <= 128).
func hasLess(x, n uint64) uint64 { return (x - lsb*n) &^ x & msb }

// hasByte returns a word whose high bits mark the bytes of x equal to b.
func hasByte(x uint64, b byte) uint64 {
	y := x ^ (lsb * uint64(b))
	return (y - lsb) &^ y & msb
}

// plainRun returns the index of the first byte at or after i that is '"',
// '\\' or a control character, or len(data). It looks at eight bytes at a
// time: string bodies are most of a transcript.
//
// The lowest byte a mask of hasLess or hasByte marks is always a match
// (a false mark can only follow a true one), so the first special byte of
// a word is found from its mask without looking at the bytes one by one.
func plainRun(data []byte, i int) int {
	for i+8 <= len(data) {
		x := binary.LittleEndian.Uint64(data[i:])
		if m := hasLess(x, 0x20) | hasByte(x, '"') | hasByte(x, '\\'); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
		i += 8
	}
	for i < len(data) {
		if c := data[i]; c < 0x20 || c == '"' || c == '\\' {
			return i
		}
		i++
	}
	return i
}

// CommonKey returns, for the token of a key that messages and blocks of
// the model APIs and coding agents' tool inputs use (as written without
// escapes: "role", "content", "type", "command", ...), the key and that
// token, shared and not to be modified, so that decoding many small
// messages does not allocate them for each.
func CommonKey(token []byte) (key string, ok bool) {
	t, ok := commonKeyTokens[string(token)] // no allocation: the compiler looks up without converting
	if !ok {
		return "", false
	}
	return t.key, true
}

// CommonKeyToken returns the shared token of a common key (see CommonKey)
// equal to token, or nil.
func CommonKeyToken(token []byte) []byte {
	if t, ok := commonKeyTokens[string(token)]; ok {
		return t.token
	}
	return nil
}

type commonKey struct {
	key   string
	token []byte
}

// commonKeyTokens is read only.
var commonKeyTokens = func() map[string]commonKey {
	m := map[string]commonKey{}
	for _, k := range []string{"role", "content", "type", "text", "id", "name", "input", "tool_use_id", "is_error",
		"cache_control", "tool_calls", "tool_call_id", "function", "arguments", "thinking", "signature", "source",
		"media_type", "data", "citations", "status", "call_id", "output", "summary", "timestamp", "model",
		// The members of coding agents' tool inputs that summaries read.
		"command", "cmd", "description", "timeout", "file_path", "path", "pattern", "query", "url", "prompt",
		"old_string", "new_string", "old_str", "new_str", "todos",
		// The members of Claude Code's todos, which every TodoWrite call
		// repeats for the whole list.
		"activeForm", "priority", "title"} {
		tok := []byte(`"` + k + `"`)
		m[string(tok)] = commonKey{key: k, token: tok[:len(tok):len(tok)]}
	}
	return m
}()
