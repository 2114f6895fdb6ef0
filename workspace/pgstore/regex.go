package pgstore

import (
	"fmt"
	"regexp/syntax"
	"strings"
	"unicode"
)

// maxRegex bounds the length of a translated expression; a longer one is
// not used (the server would find it too complex, or slow).
const maxRegex = 4096

// pgRegex translates the pattern of a grep (RE2, matched against each line
// without its line ending) into a PostgreSQL regular expression that,
// matched against a whole chunk of lines, matches wherever some line
// matches the pattern: never a false negative, sometimes a false positive
// (the RE2 search runs on every candidate afterwards). ok is false when no
// such translation is known; the search then reads every artifact.
//
// It is built from the parsed pattern, so nothing depends on the server's
// locale: case-insensitive letters become explicit classes of their
// Unicode case-folding orbit (k, K and the Kelvin sign), classes become
// code point ranges, "$" also matches before the "\r" of a "\r\n" line end,
// and word boundaries, which PostgreSQL defines by locale, are dropped
// (which only widens the match).
func pgRegex(pattern string, ignoreCase bool) (re string, ok bool) {
	flags := syntax.Perl
	if ignoreCase {
		flags |= syntax.FoldCase
	}
	parsed, err := syntax.Parse(pattern, flags)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	b.WriteString("(?n)") // newline-sensitive: ^ and $ at line ends, . never a newline
	if !emit(&b, parsed) || b.Len() > maxRegex {
		return "", false
	}
	return b.String(), true
}

// emit writes the PostgreSQL translation of re (see pgRegex); false when
// there is none or it grows longer than maxRegex.
func emit(b *strings.Builder, re *syntax.Regexp) bool {
	if b.Len() > maxRegex {
		return false
	}
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		b.WriteString("(?:)")
	case syntax.OpLiteral:
		return literal(b, re)
	case syntax.OpCharClass:
		return charClass(b, re)
	case syntax.OpAnyCharNotNL:
		b.WriteByte('.')
	case syntax.OpAnyChar:
		b.WriteString(`(?:.|\n)`)
	case syntax.OpBeginLine, syntax.OpBeginText:
		b.WriteByte('^')
	case syntax.OpEndLine, syntax.OpEndText:
		b.WriteString(`\r?$`)
	case syntax.OpCapture:
		return group(b, re.Sub[0], "")
	case syntax.OpStar:
		return group(b, re.Sub[0], "*")
	case syntax.OpPlus:
		return group(b, re.Sub[0], "+")
	case syntax.OpQuest:
		return group(b, re.Sub[0], "?")
	case syntax.OpRepeat:
		// PostgreSQL bounds repetitions by 255: a larger bound becomes
		// "at least 255", which matches more, never less.
		lo := min(re.Min, 255)
		if re.Max < 0 || re.Max > 255 {
			return group(b, re.Sub[0], fmt.Sprintf("{%d,}", lo))
		}
		return group(b, re.Sub[0], fmt.Sprintf("{%d,%d}", lo, re.Max))
	case syntax.OpConcat:
		b.WriteString("(?:")
		for _, sub := range re.Sub {
			if !emit(b, sub) {
				return false
			}
		}
		b.WriteByte(')')
	case syntax.OpAlternate:
		b.WriteString("(?:")
		for i, sub := range re.Sub {
			if i > 0 {
				b.WriteByte('|')
			}
			if !emit(b, sub) {
				return false
			}
		}
		b.WriteByte(')')
	default: // OpNoMatch, and anything new
		return false
	}
	return true
}

// literal writes a literal's characters, each folding one as a bracket
// of its case-folding orbit.
func literal(b *strings.Builder, re *syntax.Regexp) bool {
	for _, r := range re.Rune {
		if re.Flags&syntax.FoldCase != 0 && unicode.SimpleFold(r) != r {
			b.WriteByte('[')
			for f := r; ; {
				if !item(b, f) {
					return false
				}
				if f = unicode.SimpleFold(f); f == r {
					break
				}
			}
			b.WriteByte(']')
		} else if !item(b, r) {
			return false
		}
	}
	return true
}

// charClass writes a class as a bracket of code point ranges, NUL left
// out; false for an empty class, which matches nothing.
func charClass(b *strings.Builder, re *syntax.Regexp) bool {
	if len(re.Rune) == 0 {
		return false // matches nothing
	}
	b.WriteByte('[')
	for i := 0; i+1 < len(re.Rune); i += 2 {
		lo, hi := max(re.Rune[i], 1), re.Rune[i+1] // no NUL in text
		if hi < lo {
			continue
		}
		if !item(b, lo) {
			return false
		}
		if hi > lo {
			b.WriteByte('-')
			if !item(b, hi) {
				return false
			}
		}
	}
	b.WriteByte(']')
	return true
}

// group writes sub as a non-capturing group followed by suffix.
func group(b *strings.Builder, sub *syntax.Regexp, suffix string) bool {
	b.WriteString("(?:")
	if !emit(b, sub) {
		return false
	}
	b.WriteByte(')')
	b.WriteString(suffix)
	return true
}

// item writes one character, escaped so that it means itself inside and
// outside brackets; NUL and surrogates cannot be written.
func item(b *strings.Builder, r rune) bool {
	switch {
	case r <= 0 || r >= 0xD800 && r <= 0xDFFF || r > unicode.MaxRune:
		return false
	case r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'):
		b.WriteRune(r)
	case r >= 0x20 && r < 0x7f:
		b.WriteByte('\\')
		b.WriteRune(r)
	case r <= 0xFFFF:
		fmt.Fprintf(b, `\u%04x`, r)
	default:
		fmt.Fprintf(b, `\U%08x`, r)
	}
	return true
}
