package compact

import (
	"encoding/json"
	"strings"
	"unsafe"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/base/standin"
)

// Stand-ins that other steps put in place of a tool result. They say
// nothing about what the tool did, so a summary never quotes them.
const (
	batchOffloadRef   = "[Content offloaded to: "
	messageOffloadRef = "[Tool result offloaded to file: "
	knowledgeListTag  = "<knowledge_list>"
)

// isStandIn reports whether a tool result's text is a stand-in left by
// prune or offload rather than the tool's output.
func isStandIn(text string) bool {
	t := strings.TrimSpace(text)
	return standin.IsPlaceholder(t) ||
		strings.HasPrefix(t, batchOffloadRef) ||
		strings.HasPrefix(t, messageOffloadRef) ||
		strings.HasPrefix(t, knowledgeListTag)
}

// stableArchive reports whether an archive name may go into a summary: an
// id that depends only on what the archive holds (an artifact id such as
// compact_85d8bbb8), not a file path, which carries a timestamp and a
// sequence number and would make the same middle give different bytes.
func stableArchive(name string) bool {
	return name != "" && !strings.ContainsAny(name, "/\\") && len(name) <= 200
}

// archiveLine is the sentence that names a stable archive.
func archiveLine(name string) string {
	return "The original messages are archived as " + name + "."
}

// foreignSummaryPrefix begins the summary Claude Code puts in place of a
// conversation it compacted; such a message is an earlier summary, not a
// request.
const foreignSummaryPrefix = "This session is being continued from a previous conversation"

// UserRequests returns the requests the user made in msgs, oldest first,
// as the extractive summarizer and ScoreSummary see them: the text of every
// user message that is not a tool result, with <system-reminder> blocks
// removed and line ends normalized. Messages an agent harness writes in the
// user's name are left out: earlier summaries (see IsSummary, and Claude
// Code's "This session is being continued ..."), task notifications, local
// command output, interruption notices, and messages with messageStatus
// "error" (an OpenHands error observation without a call). A Claude Code slash command
// (<command-name>/x</command-name> <command-args>y</command-args>) becomes
// "/x y".
func UserRequests(msgs []agentctx.Message) []string {
	var out []string
	for i := range msgs {
		if r, ok := requestText(&msgs[i]); ok {
			out = append(out, r)
		}
	}
	return out
}

// requestText returns the user's request in m, if m holds one.
func requestText(m *agentctx.Message) (string, bool) {
	if m.Role != agentctx.RoleUser {
		return "", false
	}
	return requestTextOf(m, strings.TrimSpace(userText(m)))
}

// requestTextOf is requestText given the message's user text, trimmed.
func requestTextOf(m *agentctx.Message, text string) (string, bool) {
	if m.Role != agentctx.RoleUser || m.Status() == "error" {
		return "", false // an error the harness reports in the user's name
	}
	if text == "" || strings.HasPrefix(text, SummaryTitle) || strings.HasPrefix(text, foreignSummaryPrefix) {
		return "", false
	}
	for _, p := range harnessPrefixes {
		if strings.HasPrefix(text, p) {
			return "", false
		}
	}
	if strings.HasPrefix(text, "<command-") {
		if cmd := slashCommand(text); cmd != "" {
			return cmd, true
		}
		return "", false
	}
	return text, true
}

// harnessPrefixes begin user messages that the harness wrote.
var harnessPrefixes = []string{
	"<task-notification>", "<local-command-stdout>", "<local-command-stderr>",
	"<bash-stdout>", "<bash-stderr>", "Caveat: The messages below were generated",
	"[Request interrupted by user",
}

// slashCommand turns Claude Code's command tags into "/name args".
func slashCommand(text string) string {
	name := between(text, "<command-name>", "</command-name>")
	if name == "" {
		return ""
	}
	if !strings.HasPrefix(name, "/") {
		name = "/" + name
	}
	if args := strings.TrimSpace(between(text, "<command-args>", "</command-args>")); args != "" {
		name += " " + args
	}
	return name
}

func between(s, open, close string) string {
	_, rest, ok := strings.Cut(s, open)
	if !ok {
		return ""
	}
	in, _, _ := strings.Cut(rest, close)
	return strings.TrimSpace(in)
}

// userText is the text of a user or assistant message: its string content
// or its text blocks, without system reminders, with "\r\n" as "\n".
func userText(m *agentctx.Message) string {
	var text string
	switch m.Content.Kind() {
	case agentctx.ContentText:
		text = m.Content.Text()
	case agentctx.ContentBlocks:
		var parts []string
		for _, b := range m.Content.Blocks() {
			if b.Type == agentctx.BlockText && strings.TrimSpace(b.Text) != "" {
				parts = append(parts, b.Text)
			}
		}
		text = strings.Join(parts, "\n")
	}
	if strings.Contains(text, "<system-reminder>") {
		text = systemReminder.ReplaceAllString(text, "")
	}
	if strings.Contains(text, "\r") {
		text = unixNewlines(text)
	}
	return text
}

// unixNewlines returns s with each CRLF and each lone CR made a LF, in
// one copy (replacing the two in turn made two: 7.5 MB for a compaction
// of 10 MB of OpenHands' turns).
func unixNewlines(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for {
		i := strings.IndexByte(s, '\r')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		b.WriteByte('\n')
		s = s[i+1:]
		if s != "" && s[0] == '\n' {
			s = s[1:]
		}
	}
}

// inputStrings calls fn with every string value (not the keys) of a tool
// call's JSON input, or with the input itself when it is not a JSON object
// or array. It reads the bytes in place and allocates only for strings
// with escapes: a string without one is raw's own bytes, valid while fn
// runs (fn copies what it keeps; a compaction of 10,000 calls copied 5 MB
// of inputs only to scan them). Escaped strings are decoded into
// *scratch (nil: a buffer of this call), which grows to the longest: fn
// is given its bytes, valid while fn runs too.
func inputStrings(raw []byte, scratch *[]byte, fn func(string)) {
	if scratch == nil {
		scratch = new([]byte)
	}
	i := 0
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\n' || raw[i] == '\t' || raw[i] == '\r') {
		i++
	}
	if i == len(raw) || raw[i] != '{' && raw[i] != '[' {
		if len(raw) > 0 {
			fn(borrowed(raw))
		}
		return
	}
	for i < len(raw) {
		if raw[i] != '"' {
			i++
			continue
		}
		// A string literal: find its end.
		j, escaped := i+1, false
		for j < len(raw) && raw[j] != '"' {
			if raw[j] == '\\' {
				escaped = true
				j++
			}
			j++
		}
		if j >= len(raw) {
			return
		}
		lit := raw[i : j+1]
		// A key is followed by ':'.
		k := j + 1
		for k < len(raw) && (raw[k] == ' ' || raw[k] == '\n' || raw[k] == '\t' || raw[k] == '\r') {
			k++
		}
		if k < len(raw) && raw[k] == ':' {
			i = k + 1
			continue
		}
		if !escaped {
			fn(borrowed(lit[1 : len(lit)-1]))
		} else if json.Valid(lit) {
			*scratch = rawjson.AppendUnquote((*scratch)[:0], lit) // json.Unmarshal's string, without its reflection
			fn(borrowed(*scratch))
		}
		i = j + 1
	}
}

// borrowed is b as a string sharing its memory, for a callee that keeps
// none of it.
func borrowed(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
