// Package standin holds the texts agentctx puts in place of a tool
// result it cleared, and the one test that recognises them, so that every
// reader (the summarizer, the dashboard, the reports) knows a cleared
// result by the same rule whichever text the session used.
package standin

import "strings"

const (
	// Seed is the placeholder of seed 004, "this command's output is out
	// of date": the default of the single-shot commands.
	Seed = "此命令返回内容已过时"
	// English is Seed in English, the default of the live commands
	// (proxy, claude, codex), whose models and users mostly read English.
	English = "This command's output is out of date."
)

// IsPlaceholder reports whether text is a cleared result's placeholder:
// it starts (after white space) with one of the built-in texts, followed
// by nothing or by a line that names the stored original.
func IsPlaceholder(text string) bool {
	t := strings.TrimSpace(text)
	for _, p := range [...]string{Seed, English} {
		if rest, ok := strings.CutPrefix(t, p); ok && (rest == "" || rest[0] == '\n') {
			return true
		}
	}
	return false
}

// Contains reports whether s holds a built-in placeholder anywhere (a
// summary line or a request body that quotes one).
func Contains(s string) bool {
	return strings.Contains(s, Seed) || strings.Contains(s, English)
}
