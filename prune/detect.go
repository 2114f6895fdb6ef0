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
	// leading white space, reports a non-zero exit status as an agent
	// harness writes it, or is command output whose JSON has a non-empty
	// stderr or an exitCode other than 0. (The message's status and
	// is_error are the caller's.)
	Error bool
	// Terminal: it is command output by the seed's marks (SPEC §4): a
	// piece contains "stdout":, "stderr": or "exitCode":, or reports an
	// exit status as an agent harness writes it.
	Terminal bool
	// Transcript: a piece is shaped like the transcript of a shell
	// command, whatever its tool (shellTranscript: an exit status line
	// with a "Command:"/"Output:" header or a stream marker, or Cline's
	// report of a command). It counts as terminal output only under
	// Options.ByShape. TranscriptFailed: the transcript reports a
	// non-zero status, or none for a killed process; a result that is
	// terminal output (by its tool's name, or by its shape) is then an
	// error.
	Transcript       bool
	TranscriptFailed bool
}

// terminal reports whether the class counts as terminal output, with
// results shaped like a shell transcript counted or not (Options.ByShape).
func (c Class) terminal(byShape bool) bool { return c.Terminal || byShape && c.Transcript }

// Classify reads what a result's content says (seed 004 §3.3 and §3.4),
// in one pass over each piece of its text. A piece that is one JSON
// string (a result an agent sent JSON-encoded, as Cline does) is read as
// the text it encodes. It depends on the content only: a caller that sees
// the same results again may keep the answers (Options.Classify).
func Classify(c agentctx.Content) Class {
	var cl Class
	eachText(c, func(s string) bool {
		if text, ok := rawjson.TextOfString(s); ok {
			s = text
		}
		p := classifyText(s)
		cl.Error, cl.Terminal = cl.Error || p.Error, cl.Terminal || p.Terminal
		cl.Transcript, cl.TranscriptFailed = cl.Transcript || p.Transcript, cl.TranscriptFailed || p.TranscriptFailed
		return !(cl.Error && cl.Terminal) // nothing more can change what either reading decides
	})
	return cl
}

func classifyText(s string) (c Class) {
	code, hasCode := harnessExitCode(s)
	c.Terminal = hasCode || containsTerminalFeature(s)
	switch {
	case strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), errorPrefix):
		c.Error = true
	case hasCode:
		c.Error = code != 0
	}
	if !c.Error && c.Terminal {
		c.Error = commandFailed(s)
	}
	if !hasCode {
		code, hasCode, c.Transcript = shellTranscript(s)
		c.TranscriptFailed = c.Transcript && hasCode && code != 0
	}
	return c
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

// transcriptLines bounds the lines shellTranscript reads at each end of a
// text: the header and the trailer of a transcript, never the output
// between them (a result can be megabytes).
const transcriptLines = 12

// shellTranscript reports whether s is shaped like the transcript of a
// shell command as agents other than those of harnessExitCode write it,
// and the exit status it reports. It asks for two marks, so that a file
// or a page that merely mentions an exit code is not taken for command
// output (a false positive clears output the model may need):
//
//   - an exit status line ("Exit Code: N", "Exit code: N", "exit status
//     N", "Exit code N"; N an integer or "(none)", nothing after it but
//     a note in parentheses) in the first or last lines, and a header or
//     stream marker: the first line labelled "Command:", "Output:",
//     "Stdout:" or "Stderr:" (Gemini CLI's and Qwen Code's
//     run_shell_command), or a line that is only a stream marker
//     ("STDOUT:", "stderr:", "<stdout>", "--- stderr ---", ...). Both
//     lines start at the line's start: an indented one is a file's (a
//     YAML key "stdout:", a numbered listing);
//   - or Cline's: a first line "Command executed..." followed by an
//     "Output:" line, or "Command is still running in the user's
//     terminal..." followed by "Here's the output so far:"; these report
//     no status (shaped true, hasCode false) unless an exit status line
//     follows.
//
// A status that is not an integer ("(none)": killed by a signal) is
// reported as code -1, a failure.
func shellTranscript(s string) (code int, hasCode, shaped bool) {
	head := firstLines(s, transcriptLines)
	if len(head) == 0 {
		return 0, false, false
	}
	tail := lastLines(s, transcriptLines)
	code, hasCode = exitStatusIn(head)
	if !hasCode {
		code, hasCode = exitStatusIn(tail)
	}
	if clineTranscript(head) {
		return code, hasCode, true
	}
	if !hasCode {
		return 0, false, false
	}
	first := head[0]
	for _, label := range [...]string{"Command: ", "Output: ", "Output:", "Stdout: ", "Stdout:", "Stderr: ", "Stderr:"} {
		if strings.HasPrefix(first, label) {
			return code, true, true
		}
	}
	for _, lines := range [2][]string{head, tail} {
		for _, l := range lines {
			if streamMarker(strings.TrimRight(l, " \t")) {
				return code, true, true
			}
		}
	}
	return 0, false, false
}

// clineTranscript reports whether the first lines are Cline's report of a
// command (its execute_command results).
func clineTranscript(head []string) bool {
	var next string
	switch first := head[0]; {
	case strings.HasPrefix(first, "Command executed"):
		next = "Output:"
	case strings.HasPrefix(first, "Command is still running in the user's terminal"):
		next = "Here's the output so far:"
	default:
		return false
	}
	for _, l := range head[1:] {
		if l = strings.TrimSpace(l); l != "" {
			return strings.HasPrefix(l, next)
		}
	}
	return false
}

// streamMarker reports whether a line (its trailing blanks cut) is only
// the name of an output stream, as transcripts put one above its output.
func streamMarker(l string) bool {
	switch strings.ToLower(l) {
	case "stdout:", "stderr:", "<stdout>", "<stderr>", "</stdout>", "</stderr>",
		"--- stdout ---", "--- stderr ---", "[stdout]", "[stderr]":
		return true
	}
	return false
}

// exitStatusIn returns the exit status of the first exit status line of
// lines (see shellTranscript).
func exitStatusIn(lines []string) (int, bool) {
	for _, l := range lines {
		if n, ok := exitStatusLine(strings.TrimRight(l, " \t")); ok {
			return n, true
		}
	}
	return 0, false
}

// exitStatusLine reads a line that reports an exit status: a label, an
// optional colon, a space, then an integer or "(none)" (-1), and nothing
// more but a note in parentheses ("Exit Code: 0 (Success)") or a full
// stop. Prose that goes on ("Exit code: 0 means success") is no status.
func exitStatusLine(l string) (int, bool) {
	for _, label := range [...]string{"exit code", "exit status"} {
		if len(l) <= len(label) || !strings.EqualFold(l[:len(label)], label) {
			continue
		}
		rest := strings.TrimPrefix(l[len(label):], ":")
		if !strings.HasPrefix(rest, " ") {
			return 0, false
		}
		val, note, _ := strings.Cut(strings.TrimLeft(rest, " "), " ")
		if note = strings.TrimSpace(note); note != "" && (note[0] != '(' || !strings.HasSuffix(note, ")")) {
			return 0, false
		}
		val = strings.TrimSuffix(val, ".")
		if val == "(none)" {
			return -1, true
		}
		n, err := strconv.Atoi(val)
		return n, err == nil
	}
	return 0, false
}

// firstLines returns up to n lines from the first line of s that is not
// blank, without their line endings.
func firstLines(s string, n int) []string {
	s = strings.TrimLeft(s, " \t\r\n")
	var out []string
	for len(out) < n && s != "" {
		line, rest, _ := strings.Cut(s, "\n")
		out = append(out, strings.TrimRight(line, "\r"))
		s = rest
	}
	return out
}

// lastLines returns up to n lines that end s (after its trailing blank
// lines), the last first, without their line endings.
func lastLines(s string, n int) []string {
	s = strings.TrimRight(s, " \t\r\n")
	var out []string
	for len(out) < n && s != "" {
		i := strings.LastIndexByte(s, '\n')
		out = append(out, strings.TrimRight(s[i+1:], "\r"))
		if i < 0 {
			break
		}
		s = s[:i]
	}
	return out
}
