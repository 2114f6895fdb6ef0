package compact

import (
	"strings"
	"unicode/utf8"
)

// Kinds of term found by scanTerms.
const (
	termPath  = iota // a file path or a file name with a known extension
	termIdent        // an identifier: snake_case, camelCase, a.qualified.name, an issue id, a call
)

// scanTerms calls fn for each file path and identifier in s, in order,
// repeats included. It is what both the extractive summarizer (to rank the
// identifiers a history is about) and ScoreSummary (to measure what a
// summary kept) call a path and an identifier:
//
//   - a path has a "/" and either begins with "/", "./", "../" or "~/", or
//     has two or more "/", or ends in a file name with an extension; a bare
//     file name counts when its extension is a known one (main.go,
//     README.md). URLs are not paths. A ":12" line suffix is dropped.
//   - an identifier begins with a letter or "_", has at least 3 characters,
//     and has a shape no English word has: an inner "_" (sync_session),
//     a lower-case letter followed by a capital (handleInfo, SessionLive),
//     two or more dotted or "::" parts (os.path.join, Spotter.Session), a
//     hyphen and a digit (spotter-a0y), or a "(" right after it (len( is
//     not enough: 3 letters and a call).
func scanTerms(s string, fn func(term string, kind int)) {
	i := 0
	for i < len(s) {
		// Skip to the start of a word.
		c := s[i]
		if !wordByte(c) {
			i++
			continue
		}
		// plain: letters only, capital at most first (most words of
		// prose and output), which is neither a path nor an identifier
		// unless a call.
		j, plain := i, true
		for j < len(s) && wordByte(s[j]) {
			if c := s[j]; !(c >= 'a' && c <= 'z' || j == i && c >= 'A' && c <= 'Z') {
				plain = false
			}
			j++
		}
		word := s[i:j]
		call := j < len(s) && s[j] == '('
		tag := i > 0 && s[i-1] == '<' // </output> is no path
		i = j
		if len(word) < 3 || len(word) > 300 || tag || plain && !call {
			continue
		}
		classify(word, call, fn)
	}
}

// wordByte reports whether c can be part of a path or an identifier.
// Non-ASCII bytes end a word.
func wordByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	switch c {
	case '_', '.', '/', '-', '~', '@', '+', ':':
		return true
	}
	return false
}

func classify(word string, call bool, fn func(string, int)) {
	if strings.Contains(word, "://") {
		return // a URL
	}
	// Trim what cannot end a term ("file.go:", "done.", "a/b/").
	for word != "" && strings.IndexByte(".:-+@~", word[len(word)-1]) >= 0 {
		word = word[:len(word)-1]
	}
	for word != "" && strings.IndexByte(":-+@", word[0]) >= 0 {
		word = word[1:]
	}
	if word == "" {
		return
	}
	if strings.ContainsRune(word, '/') {
		if p, ok := pathTerm(word); ok {
			fn(p, termPath)
		}
		return
	}
	// A line suffix: main.go:12:4.
	if k := strings.IndexByte(word, ':'); k > 0 && k+1 < len(word) && isDigit(word[k+1]) {
		word = word[:k]
	}
	if isFileName(word) {
		fn(word, termPath)
		return
	}
	if identTerm(word, call) {
		fn(word, termIdent)
	}
}

// pathTerm returns the path in word, which holds a "/".
func pathTerm(w string) (string, bool) {
	// Drop a :line or :line:col suffix.
	if k := strings.IndexByte(w, ':'); k > 0 {
		if k+1 < len(w) && isDigit(w[k+1]) {
			w = w[:k]
		} else {
			return "", false // a:b/c is no path
		}
	}
	w = strings.TrimRight(w, ".")
	if len(w) < 2 || strings.Contains(w, "//") {
		return "", false
	}
	letters := false
	for i := 0; i < len(w); i++ {
		if c := w[i]; c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			letters = true
			break
		}
	}
	if !letters {
		return "", false
	}
	switch {
	case w[0] == '/', strings.HasPrefix(w, "./"), strings.HasPrefix(w, "../"), strings.HasPrefix(w, "~/"):
		if w[0] == '/' && strings.Count(w, "/") == 1 && len(w) < 4 {
			return "", false // "/a"
		}
		return w, true
	case strings.Count(w, "/") >= 2:
		if w[0] == '-' || w[0] == '@' {
			return "", false
		}
		return w, true
	}
	last := w[strings.LastIndexByte(w, '/')+1:]
	if dot := strings.LastIndexByte(last, '.'); dot > 0 && dot < len(last)-1 && isExtension(last[dot+1:]) {
		return w, true
	}
	return "", false
}

// isFileName reports whether w is a file name with a known extension.
func isFileName(w string) bool {
	dot := strings.LastIndexByte(w, '.')
	if dot <= 0 || dot == len(w)-1 {
		return false
	}
	return knownExtensions[w[dot+1:]] // case matters: t.Sum is no file
}

// isExtension reports whether e looks like a file extension after a path
// (letters and digits, at most 8, with a letter).
func isExtension(e string) bool {
	if len(e) > 8 {
		return false
	}
	letter := false
	for i := 0; i < len(e); i++ {
		c := e[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letter = true
		case c >= '0' && c <= '9':
		default:
			return false
		}
	}
	return letter
}

var knownExtensions = map[string]bool{
	"go": true, "mod": true, "sum": true, "py": true, "pyi": true, "rs": true, "ex": true, "exs": true,
	"js": true, "mjs": true, "cjs": true, "ts": true, "tsx": true, "jsx": true, "json": true, "jsonl": true,
	"md": true, "rst": true, "txt": true, "yml": true, "yaml": true, "toml": true, "ini": true, "cfg": true,
	"c": true, "h": true, "cc": true, "cpp": true, "hpp": true, "cxx": true, "m": true, "mm": true,
	"java": true, "kt": true, "kts": true, "scala": true, "rb": true, "php": true, "swift": true, "cs": true,
	"sh": true, "bash": true, "zsh": true, "fish": true, "ps1": true, "sql": true, "html": true, "htm": true,
	"css": true, "scss": true, "vue": true, "svelte": true, "xml": true, "proto": true, "lock": true,
	"pony": true, "lua": true, "zig": true, "nim": true, "dart": true, "erl": true, "hrl": true, "heex": true,
	"eex": true, "lean": true, "hs": true, "ml": true, "mli": true, "clj": true, "r": true, "jl": true,
	"ipynb": true, "csv": true, "tsv": true, "log": true, "diff": true, "patch": true, "env": true,
	"dockerfile": true, "gradle": true, "tf": true, "nix": true, "cmake": true, "mk": true, "pl": true,
	"svg": true, "png": true, "jpg": true, "gif": true, "pdf": true, "tmpl": true, "tpl": true,
}

// identTerm reports whether w (letters, digits, "_", ".", "-", ":" after
// trimming) has the shape of an identifier.
func identTerm(w string, call bool) bool {
	c := w[0]
	if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_') {
		return false
	}
	var under, camel, hyphen, digit, dots, dotNum, colons bool
	parts := 1
	prevLower, prevUpper := false, false
	for i := 0; i < len(w); i++ {
		c := w[i]
		lower, upper := c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z'
		switch {
		case c == '_':
			if i > 0 && i < len(w)-1 {
				under = true
			}
		case c == '-':
			hyphen = true
		case c >= '0' && c <= '9':
			digit = true
		case c == '.':
			if i+1 < len(w) && isDigit(w[i+1]) {
				dotNum = true // v1.2, spotter-a0y.4
			} else {
				dots = true
				parts++
			}
		case c == ':':
			if i+1 < len(w) && w[i+1] == ':' {
				colons = true
			} else if i == 0 || w[i-1] != ':' {
				return false
			}
		case upper:
			if prevLower {
				camel = true
			}
		case lower:
			if prevUpper && i >= 2 && w[i-2] >= 'A' && w[i-2] <= 'Z' {
				camel = true // HTTPServer
			}
		case !lower && !upper:
			return false
		}
		prevLower, prevUpper = lower, upper
	}
	if dotNum && !(hyphen && digit) {
		return false
	}
	switch {
	case under, camel, colons:
		return true
	case dots:
		// Each part at least 2 characters: os.path, not e.g.
		for _, p := range strings.Split(w, ".") {
			if len(p) == 0 || len(p) < 2 && !isDigit(p[0]) {
				return false
			}
		}
		return parts >= 2
	case hyphen:
		return digit
	case call:
		return utf8.RuneCountInString(w) >= 4 && !commonCalls[strings.ToLower(w)]
	}
	return false
}

// commonCalls are keywords and builtins that are followed by "(" in any
// code: no identifier of the work.
var commonCalls = map[string]bool{
	"make": true, "func": true, "print": true, "range": true, "append": true, "while": true,
	"switch": true, "return": true, "super": true, "type": true, "list": true, "dict": true,
	"tuple": true, "open": true, "printf": true, "println": true, "sizeof": true, "assert": true,
	"self": true, "this": true, "catch": true, "elif": true, "with": true, "defer": true, "panic": true,
	"string": true, "float": true, "bool": true, "isinstance": true, "callable": true, "sorted": true,
	"enumerate": true, "then": true, "when": true, "case": true, "async": true, "await": true,
	"select": true, "from": true, "where": true, "values": true, "count": true, "note": true,
	"example": true, "optional": true, "default": true, "see": true, "e.g": true, "i.e": true,
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
