package prune

import (
	"strconv"
	"strings"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// terminalFeatures are the substrings that mark command output (seed 004
// §3.3): the members of a serialized command result.
var terminalFeatures = [...]string{`"stdout":`, `"stderr":`, `"exitCode":`}

// errorPrefix starts the content of a failed tool call (seed 004 §3.4).
const errorPrefix = "Error:"

// eachText calls fn with every piece of text of a result's content that the
// detection rules look at, until fn returns false: the string itself; for a
// block list, the text of each text block; for any other JSON value, its
// JSON. Absent and null content have no text.
func eachText(c agentctx.Content, fn func(string) bool) {
	switch c.Kind() {
	case agentctx.ContentText:
		fn(c.Text())
	case agentctx.ContentBlocks:
		for _, b := range c.Blocks() {
			if b.Type == agentctx.BlockText && !fn(b.Text) {
				return
			}
		}
	case agentctx.ContentOther:
		fn(c.AsText())
	}
}

// Class is what a tool result's content says of the call (Classify).
type Class struct {
	// Error: the call failed. A piece of text starts with "Error:" after
	// leading white space, reports a non-zero exit status, or is command
	// output whose JSON has a non-empty stderr or an exitCode other than
	// 0. (The message's status and is_error are the caller's.)
	Error bool
	// Terminal: it looks like command output. A piece contains
	// "stdout":, "stderr": or "exitCode":, or reports an exit status as an
	// agent harness writes it.
	Terminal bool
}

// Classify reads what a result's content says (seed 004 §3.3 and §3.4),
// in one pass over each piece of its text. It depends on the content
// only: a caller that sees the same results again may keep the answers
// (Options.Classify).
func Classify(c agentctx.Content) Class {
	var cl Class
	eachText(c, func(s string) bool {
		e, t := classifyText(s)
		cl.Error, cl.Terminal = cl.Error || e, cl.Terminal || t
		return !(cl.Error && cl.Terminal)
	})
	return cl
}

func classifyText(s string) (isError, terminal bool) {
	code, hasCode := harnessExitCode(s)
	terminal = hasCode || containsTerminalFeature(s)
	switch {
	case strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), errorPrefix):
		isError = true
	case hasCode:
		isError = code != 0
	}
	if !isError && terminal {
		isError = commandFailed(s)
	}
	return isError, terminal
}

// hasTerminalFeatures reports whether the content looks like serialized
// command output (Classify's Terminal).
func hasTerminalFeatures(c agentctx.Content) bool { return Classify(c).Terminal }

// contentIsError reports whether the content itself says the call failed
// (Classify's Error).
func contentIsError(c agentctx.Content) bool { return Classify(c).Error }

// containsTerminalFeature reports whether s contains one of
// terminalFeatures, in one pass over s (every feature starts with a
// quote): the results of a long session are scanned on every request.
func containsTerminalFeature(s string) bool {
	for {
		i := strings.IndexByte(s, '"')
		if i < 0 {
			return false
		}
		s = s[i:]
		for _, f := range terminalFeatures {
			if strings.HasPrefix(s, f) {
				return true
			}
		}
		s = s[1:]
	}
}

// harnessExitCode reads the exit status that agent harnesses write in plain
// text around command output (beyond the seed): mini-swe-agent starts with
// "<returncode>N</returncode>", Codex writes "Exit code: N" or "Process
// exited with code N" in its first lines (codexExitCode), OpenHands ends
// with "[The command completed with exit code N.]". ok is false when s has
// none of them.
func harnessExitCode(s string) (code int, ok bool) {
	t := strings.TrimLeft(s, " \t\r\n")
	if rest, found := strings.CutPrefix(t, "<returncode>"); found {
		num, _, found := strings.Cut(rest, "</returncode>")
		if n, err := strconv.Atoi(strings.TrimSpace(num)); found && err == nil {
			return n, true
		}
		return 0, false
	}
	if n, ok := codexExitCode(t); ok {
		return n, true
	}
	t = strings.TrimRight(s, " \t\r\n")
	const head, tail = "[The command completed with exit code ", ".]"
	if !strings.HasSuffix(t, tail) {
		return 0, false
	}
	i := strings.LastIndex(t, head)
	if i < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(t[i+len(head) : len(t)-len(tail)])
	return n, err == nil
}

// codexExitCode reads the exit status of Codex's shell tools, which write
// it in the first lines of their output: "Exit code: N" (shell) or
// "Process exited with code N" (exec_command, after "Chunk ID" and "Wall
// time" lines). t starts at the first character that is not white space.
func codexExitCode(t string) (int, bool) {
	for k := 0; k < 4 && t != ""; k++ {
		line, rest, _ := strings.Cut(t, "\n")
		line = strings.TrimRight(line, "\r")
		for _, p := range [...]string{"Exit code: ", "Process exited with code "} {
			if num, ok := strings.CutPrefix(line, p); ok {
				n, err := strconv.Atoi(strings.TrimSpace(num))
				return n, err == nil
			}
		}
		t = rest
	}
	return 0, false
}

// commandFailed parses s as a JSON object and reports whether it records a
// failed command: a non-empty "stderr" (a string or an array), or an
// "exitCode" that is present and not 0. Text that is not a JSON object
// records nothing. With duplicate keys the last one counts, as in
// JavaScript's JSON.parse.
func commandFailed(s string) bool {
	if !strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), "{") {
		return false
	}
	members, err := rawjson.Members([]byte(s))
	if err != nil {
		return false
	}
	var stderr, exitCode []byte
	for _, m := range members {
		switch m.Key {
		case "stderr":
			stderr = m.Value
		case "exitCode":
			exitCode = m.Value
		}
	}
	return stderrNonEmpty(stderr) || exitCodeFailed(exitCode)
}

// stderrNonEmpty reports whether a raw "stderr" value holds something: a
// non-empty string or a non-empty array (JavaScript's stderr.length > 0).
func stderrNonEmpty(raw []byte) bool {
	switch rawjson.Kind(raw) {
	case '"':
		return rawjson.Unquote(raw) != ""
	case '[':
		elems, err := rawjson.Elements(raw)
		return err == nil && len(elems) > 0
	}
	return false
}

// exitCodeFailed reports whether a raw "exitCode" value is present and not
// zero. Zero is a JSON number equal to 0 or a string holding one; anything
// else (1, -1, null for a killed process, "ENOENT") is a failure.
func exitCodeFailed(raw []byte) bool {
	if raw == nil {
		return false
	}
	s := string(raw)
	if rawjson.Kind(raw) == '"' {
		s = strings.TrimSpace(rawjson.Unquote(raw))
	}
	f, err := strconv.ParseFloat(s, 64)
	return err != nil || f != 0
}
