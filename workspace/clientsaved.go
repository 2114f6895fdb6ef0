package workspace

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// savedScan bounds the characters SavedPaths reads at each end of a
// text: clients put their notice before or after the preview, never in
// the middle of a long output.
const savedScan = 8 << 10

// savedPathRE finds a notice that output was saved to a file, and the
// absolute path it names: Claude Code's "Full output saved to: /…",
// opencode's and Kilo's "Full output saved to: /…", Qwen Code's and Gemini
// CLI's "The full output has been saved to: /…", and the like ("written
// to", "stored in the file", …).
var savedPathRE = regexp.MustCompile(`(?i)\b(?:saved|written|stored|persisted|spilled)\s+(?:to|at|in|into)(?:\s+(?:the\s+)?file)?\s*:?\s*` +
	"[`'\"<(\\[]?" + `((?:/|~/|[A-Za-z]:\\)[^\s` + "`'\"<>()\\[\\]" + `]+)`)

// SavedPaths returns the absolute paths of the files that a tool result
// says the client saved output to (a client that keeps a long output in a
// file of its own and shows a preview naming it: Claude Code, opencode,
// Kilo, Qwen Code), in order, each once; nil when it names none. Only the
// text's first and last 8 KiB are read. A result that is one JSON string
// is read as its text.
func SavedPaths(c agentctx.Content) []string {
	var out []string
	scan := func(s string) {
		if text, ok := rawjson.TextOfString(s); ok {
			s = text
		}
		parts := []string{s}
		if len(s) > 2*savedScan {
			parts = []string{s[:savedScan], s[len(s)-savedScan:]}
		}
		for _, part := range parts {
			if !mayNameSaved(part) {
				continue
			}
			for _, m := range savedPathRE.FindAllStringSubmatch(part, -1) {
				if p := cleanSavedPath(m[1]); p != "" && !contains(out, p) {
					out = append(out, p)
				}
			}
		}
	}
	switch c.Kind() {
	case agentctx.ContentText:
		scan(c.Text())
	case agentctx.ContentBlocks:
		for _, b := range c.Blocks() {
			if b.Type == agentctx.BlockText {
				scan(b.Text)
			}
		}
	}
	return out
}

// savedWords are the verbs of savedPathRE, without their first letter
// (either case) and with the space after them: a text without any cannot
// match, and strings.Contains tells that much faster than the expression
// (every new result of a long first request is scanned).
var savedWords = [...]string{"aved ", "ritten ", "tored ", "ersisted ", "pilled "}

func mayNameSaved(s string) bool {
	for _, w := range savedWords {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// cleanSavedPath trims the punctuation that ends the sentence around a
// path, and returns "" for a path too short to name a file (a root, a
// directory one level down).
func cleanSavedPath(p string) string {
	p = strings.TrimRight(p, ".,;:!?")
	sep := "/"
	if strings.Contains(p, `\`) && !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~/") {
		sep = `\`
	}
	if strings.Count(p, sep) < 2 || strings.HasSuffix(p, sep) {
		return ""
	}
	return p
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// NamesSavedPath reports whether a tool call's input names one of paths
// (SavedPaths of earlier results): the call reads a file the client saved
// output to, and its result is kept whole like a read of the workspace
// (ToolCall.ReadsSaved). The path is looked for as it is and as JSON
// writes it in a string (a Windows path's backslashes doubled).
func NamesSavedPath(input json.RawMessage, paths []string) bool {
	if len(input) == 0 {
		return false
	}
	for _, p := range paths {
		if bytes.Contains(input, []byte(p)) {
			return true
		}
		if enc := rawjson.AppendString(nil, p); len(enc) != len(p)+2 && bytes.Contains(input, enc[1:len(enc)-1]) {
			return true
		}
	}
	return false
}
