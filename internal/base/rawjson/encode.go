package rawjson

import (
	"bytes"
	"encoding/json"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Unquote decodes a raw JSON string token (quotes included) that has already
// been validated. Invalid UTF-8 and lone surrogates become U+FFFD, exactly as
// encoding/json decodes them. A raw value that is not a string yields "".
func Unquote(raw []byte) string {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return ""
	}
	body := raw[1 : len(raw)-1]
	i := plainPrefix(body)
	if i == len(body) || (!containsByte(body[i:], '\\') && utf8.Valid(body[i:])) {
		return string(body)
	}
	out := appendUnquoted(make([]byte, 0, len(body)+utf8.UTFMax), body, i)
	// out is not used again: the string takes its memory rather than a
	// copy, as strings.Builder does (a large string is held once).
	return unsafe.String(unsafe.SliceData(out), len(out))
}

// AppendUnquote appends to dst what Unquote returns for raw: a caller
// that scans decoded strings one at a time decodes them all into one
// buffer.
func AppendUnquote(dst, raw []byte) []byte {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return dst
	}
	body := raw[1 : len(raw)-1]
	return appendUnquoted(dst, body, plainPrefix(body))
}

// plainPrefix returns the length of body's leading run of ASCII bytes
// that are not a backslash: what a string's decoding copies as it is.
func plainPrefix(body []byte) int {
	i := 0
	for i < len(body) && body[i] != '\\' && body[i] < utf8.RuneSelf {
		i++
	}
	return i
}

// appendUnquoted appends the decoding of a string token's body to out,
// its first i bytes being plain (plainPrefix).
func appendUnquoted(out, body []byte, i int) []byte {
	out = append(out, body[:i]...)
	for i < len(body) {
		c := body[i]
		switch {
		case c == '\\':
			if i+1 >= len(body) {
				return out
			}
			switch e := body[i+1]; e {
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := hex4(body[i+2:])
				i += 6
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if i+1 < len(body) && body[i] == '\\' && body[i+1] == 'u' {
						r2 = hex4(body[i+2:])
					}
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						i += 6
						r = dec
					} else {
						r = utf8.RuneError
					}
				}
				if r < 0 {
					r = utf8.RuneError
				}
				out = utf8.AppendRune(out, r)
				continue
			default: // '"', '\\', '/'
				out = append(out, e)
			}
			i += 2
		case c < utf8.RuneSelf:
			j := i + 1
			for j < len(body) && body[j] != '\\' && body[j] < utf8.RuneSelf {
				j++
			}
			out = append(out, body[i:j]...)
			i = j
		default:
			r, size := utf8.DecodeRune(body[i:])
			if r == utf8.RuneError && size == 1 {
				out = append(out, "\uFFFD"...)
			} else {
				out = append(out, body[i:i+size]...)
			}
			i += size
		}
	}
	return out
}

// hex4 decodes four hex digits, or returns -1.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

func containsByte(b []byte, c byte) bool {
	for _, x := range b {
		if x == c {
			return true
		}
	}
	return false
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string the way JavaScript's
// JSON.stringify writes it: only '"', '\\' and control characters are
// escaped (\b \f \n \r \t by name, others as \u00xx); '<', '>', '&', U+2028
// and U+2029 are written as is. Invalid UTF-8 is written as U+FFFD.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, s[start:i]...)
				dst = append(dst, "\uFFFD"...)
				i++
				start = i
				continue
			}
			i += size
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// IsString reports whether token is exactly AppendString(nil, s), without
// writing it: a long string is compared run by run.
func IsString(token []byte, s string) bool {
	if len(token) < len(s)+2 || token[len(token)-1] != '"' {
		return false
	}
	n, ok := StringPrefix(token, s)
	return ok && n == len(token)
}

// StringPrefix reports whether data begins with AppendString(nil, s), and
// its length when it does, without writing it: a long string is compared
// run by run.
func StringPrefix(data []byte, s string) (int, bool) {
	if len(data) < len(s)+2 || data[0] != '"' {
		return 0, false
	}
	t := data[1:]
	start := 0
	// eat consumes p from the front of t.
	eat := func(p string) bool {
		if len(t) < len(p) || string(t[:len(p)]) != p {
			return false
		}
		t = t[len(p):]
		return true
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				if !eat(s[start:i]) || !eat("\uFFFD") {
					return 0, false
				}
				i++
				start = i
				continue
			}
			i += size
			continue
		}
		if !eat(s[start:i]) || !eat(escapeOf(c)) {
			return 0, false
		}
		i++
		start = i
	}
	if !eat(s[start:]) || !eat(`"`) {
		return 0, false
	}
	return len(data) - len(t), true
}

// escapeOf returns how AppendString writes the byte c, which it escapes
// ('"', '\\' or a control character).
func escapeOf(c byte) string {
	switch c {
	case '"':
		return `\"`
	case '\\':
		return `\\`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	return controlEscapes[6*int(c) : 6*int(c)+6]
}

// controlEscapes is how AppendString writes the control characters it
// does not escape by name: \u0000 to \u001f, six bytes each.
const controlEscapes = `\u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\u0008\u0009\u000a\u000b\u000c\u000d\u000e\u000f\u0010\u0011\u0012\u0013\u0014\u0015\u0016\u0017\u0018\u0019\u001a\u001b\u001c\u001d\u001e\u001f`

// AppendCompact appends a valid raw JSON value with insignificant whitespace
// removed. Strings and numbers are copied byte for byte.
func AppendCompact(dst, raw []byte) []byte {
	CompactRuns(raw, func(run []byte) { dst = append(dst, run...) })
	return dst
}

// CompactRuns calls yield with the runs of a valid raw JSON value between
// its insignificant whitespace, in order: together they are what
// AppendCompact appends, never copied.
func CompactRuns(raw []byte, yield func([]byte)) {
	inString := false
	start := 0
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case ' ', '\t', '\n', '\r':
			if i > start {
				yield(raw[start:i])
			}
			start = i + 1
		}
	}
	if start < len(raw) {
		yield(raw[start:])
	}
}

// AppendCanonical appends a valid raw JSON value in the form
// JSON.stringify(JSON.parse(raw)) gives: compact, strings re-escaped by
// AppendString, member order kept. Numbers are copied as written (JavaScript
// would also normalize them, e.g. 1.0 to 1; that difference is accepted).
func AppendCanonical(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case isSpace(c):
			i++
		case c == '"':
			end, err := stringEnd(raw, i)
			if err != nil {
				return append(dst, raw[i:]...)
			}
			tok := raw[i:end]
			if needsReescape(tok) {
				dst = AppendString(dst, Unquote(tok))
			} else {
				dst = append(dst, tok...)
			}
			i = end
		default:
			j := i + 1
			for j < len(raw) && raw[j] != '"' && !isSpace(raw[j]) {
				j++
			}
			dst = append(dst, raw[i:j]...)
			i = j
		}
	}
	return dst
}

// IsCanonical reports whether AppendCanonical would append raw, a valid
// JSON value, as it is (false for invalid JSON):
// a caller that needs the canonical form of a value already in it need
// not copy it.
func IsCanonical(raw []byte) bool {
	for i := 0; i < len(raw); {
		switch c := raw[i]; {
		case isSpace(c):
			return false
		case c == '"':
			end, err := stringEnd(raw, i)
			if err != nil || needsReescape(raw[i:end]) {
				return false
			}
			i = end
		default:
			i++
		}
	}
	return true
}

// needsReescape reports whether a string token differs from what
// AppendString would write for its value: it has an escape other than the
// ones AppendString writes, or invalid UTF-8.
func needsReescape(tok []byte) bool {
	body := tok[1 : len(tok)-1]
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c == '\\' {
			if i+1 < len(body) {
				switch body[i+1] {
				case '"', '\\', 'b', 'f', 'n', 'r', 't':
					i++
					continue
				case 'u':
					// \u00xx for a control character other than the named ones
					// is what AppendString writes; anything else is not.
					if i+5 < len(body) && body[i+2] == '0' && body[i+3] == '0' && (body[i+4] == '0' || body[i+4] == '1') &&
						isLowerHex(body[i+5]) {
						v := unhex(body[i+4])<<4 | unhex(body[i+5])
						if v != '\b' && v != '\f' && v != '\n' && v != '\r' && v != '\t' {
							i += 5
							continue
						}
					}
				}
			}
			return true
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(body[i:])
			if r == utf8.RuneError && size == 1 {
				return true
			}
			i += size - 1
		}
	}
	return false
}

func isLowerHex(c byte) bool { return isDigit(c) || (c >= 'a' && c <= 'f') }

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}

// Marshal is json.Marshal without HTML escaping: '<', '>' and '&' stay as
// they are, as JSON.stringify writes them. There is no trailing newline.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// HasLoneSurrogate reports whether the string token raw holds a \u escape
// of a surrogate that is not half of a pair: what Unquote decodes to
// U+FFFD, so that the decoded string is not what raw says.
func HasLoneSurrogate(raw []byte) bool {
	for i := 0; i+1 < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if raw[i+1] != 'u' {
			i++ // an escape of one character: skip it (\\u is not \u)
			continue
		}
		r := hex4(raw[i+2:])
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return true // a low half first
		case r >= 0xD800 && r <= 0xDBFF:
			j := i + 6
			if j+1 >= len(raw) || raw[j] != '\\' || raw[j+1] != 'u' {
				return true
			}
			if r2 := hex4(raw[j+2:]); r2 < 0xDC00 || r2 > 0xDFFF {
				return true
			}
			i = j + 5 // past the pair
		default:
			i += 5
		}
	}
	return false
}
