// Package clientsaved recognises a tool result that is a client's preview
// of a long output it saved to a file of its own, and the path it names:
// Claude Code, opencode, Kilo and Qwen Code keep such an output out of the
// context and show the model a preview with the path. It is the one rule
// that the offload (a read of that file is kept whole) and the summary's
// "Stored originals" (the file is listed whatever the preview's size)
// share (issue 47).
package clientsaved

import (
	"bytes"
	"strings"

	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// scan bounds the characters Append reads at each end of a text: clients
// put their notice before or after the preview, never in the middle of a
// long output, and a result is scanned once as it arrives.
const scan = 8 << 10

// notices are the sentences clients write just before the path of the file
// they saved a long output to; the path ends the line:
//
//   - "Full output saved to: ": Claude Code's and Qwen Code's
//     "<persisted-output>\nOutput too large (58.6KB). Full output saved
//     to: …", opencode's and Kilo's "The tool call succeeded but the
//     output was truncated. Full output saved to: …", and opencode's shell
//     "...output truncated...\n\nFull output saved to: …";
//   - "The full output has been saved to: ": Qwen Code's (and Gemini
//     CLI's) "Tool output was too large and has been truncated.";
//   - "Output is being written to: ": Claude Code's command run in the
//     background ("Command running in background with ID: …").
//
// They are whole phrases of the clients, not a verb and a path: a tool's
// own "report saved to /tmp/…" names a file the client did not save, and a
// read of it is a read like any other.
var notices = [...]string{"Full output saved to: ", "The full output has been saved to: ", "Output is being written to: "}

// Append appends to paths the absolute paths of the files that text says
// the client saved output to (see notices), in order, each once (a path
// already in paths is not appended again), and returns the extended
// slice. Only the text's first and last 8 KiB are read. A text that is one
// JSON string (Cline's results) is read as the text it encodes.
func Append(paths []string, text string) []string {
	if decoded, ok := rawjson.TextOfString(text); ok {
		text = decoded
	}
	if len(text) <= 2*scan {
		return appendIn(paths, text)
	}
	return appendIn(appendIn(paths, text[:scan]), text[len(text)-scan:])
}

func appendIn(paths []string, s string) []string {
	for _, n := range notices {
		for rest := s; ; {
			i := strings.Index(rest, n)
			if i < 0 {
				break
			}
			rest = rest[i+len(n):]
			line, _, _ := strings.Cut(rest, "\n")
			if p := cleanPath(line); p != "" && !contains(paths, p) {
				paths = append(paths, p)
			}
		}
	}
	return paths
}

// cleanPath returns the path that line (what follows a notice, to the end
// of its line) holds, or "" when it holds none: a path is absolute (/, ~/
// or a drive letter), may hold spaces (a Windows home "C:\Users\Ada
// Lovelace"), and names a file at least two levels down; the sentence's
// final punctuation is not part of it. A line with a character no client's
// path holds (a quote, a backtick, <, >, |) is a quotation of a notice (a
// grep of source code), not one.
func cleanPath(line string) string {
	p := strings.TrimRight(strings.TrimSpace(line), ".,;:!?")
	if strings.ContainsAny(p, "\"`<>|") {
		return ""
	}
	sep := "/"
	switch {
	case strings.HasPrefix(p, "/"), strings.HasPrefix(p, "~/"):
	case len(p) > 3 && isLetter(p[0]) && p[1] == ':' && (p[2] == '\\' || p[2] == '/'):
		sep = p[2:3]
	default:
		return ""
	}
	if strings.Count(p, sep) < 2 || strings.HasSuffix(p, sep) {
		return ""
	}
	return p
}

func isLetter(b byte) bool { return 'a' <= b|0x20 && b|0x20 <= 'z' }

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Named reports whether a tool call's input names one of paths (as Append
// found them in earlier results): the call reads a file the client saved
// output to. A path is looked for as it is and as JSON writes it in a
// string (a Windows path's backslashes doubled), as a whole name: not as
// the start of a longer one (/tmp/x/a.txt in /tmp/x/a.txt.bak) or the end
// of another (/tmp/x/a.txt in /var/tmp/x/a.txt).
func Named(input []byte, paths []string) bool {
	if len(input) == 0 {
		return false
	}
	for _, p := range paths {
		if hasName(input, []byte(p)) {
			return true
		}
		if enc := rawjson.AppendString(nil, p); len(enc) != len(p)+2 && hasName(input, enc[1:len(enc)-1]) {
			return true
		}
	}
	return false
}

// hasName reports whether name occurs in b with no path character just
// before or after it.
func hasName(b, name []byte) bool {
	for off := 0; ; {
		i := bytes.Index(b[off:], name)
		if i < 0 {
			return false
		}
		start, end := off+i, off+i+len(name)
		if (start == 0 || !pathByte(b[start-1])) && (end == len(b) || !pathByte(b[end])) {
			return true
		}
		off = start + 1
	}
}

// pathByte reports whether c continues a file name or a path. A
// backslash does not: in a JSON input it starts an escape ("cat
// /tmp/x/a.txt\nls"), and a saved file is no Windows directory.
func pathByte(c byte) bool {
	switch {
	case isLetter(c), '0' <= c && c <= '9', c >= 0x80:
		return true
	}
	return strings.IndexByte("._-~/", c) >= 0
}
