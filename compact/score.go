package compact

import (
	"regexp"
	"slices"
	"strings"
	"unsafe"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/standin"
	"github.com/agentctx/agentctx/tokens"
)

// Coverage is how many of a kind of fact a summary kept.
type Coverage struct {
	// Total is the number of distinct facts of the history.
	Total int `json:"total"`
	// Kept is how many of them the summary holds.
	Kept int `json:"kept"`
	// Missing lists those it lost, in the order of the history.
	Missing []string `json:"missing,omitempty"`
}

// Share is Kept / Total, or 1 when there was nothing to keep.
func (c Coverage) Share() float64 {
	if c.Total == 0 {
		return 1
	}
	return float64(c.Kept) / float64(c.Total)
}

func (c *Coverage) check(fact string, kept bool) {
	c.Total++
	if kept {
		c.Kept++
	} else {
		c.Missing = append(c.Missing, fact)
	}
}

// SummaryScore measures a summary against the history it replaced: what a
// model continuing from it (with the kept tail) still knows. See
// ScoreSummary.
type SummaryScore struct {
	// Tokens is the size of the summary.
	Tokens int `json:"tokens"`
	// Paths are the file paths of the summarized middle that the kept tail
	// names again: the files the work is still about.
	Paths Coverage `json:"paths"`
	// Identifiers are the identifiers of the middle that the tail names
	// again.
	Identifiers Coverage `json:"identifiers"`
	// SeenPaths and SeenIdentifiers are the stricter measure: the terms
	// of the whole middle, tool output included (a file read in full, a
	// directory listing), that the tail names again. No target is set on
	// them: an extractive summary cannot hold every name of every file the
	// agent read.
	SeenPaths       Coverage `json:"seen_paths"`
	SeenIdentifiers Coverage `json:"seen_identifiers"`
	// Requests are the user's requests in the middle (see UserRequests),
	// kept when the summary quotes them whole.
	Requests Coverage `json:"requests"`
	// Errors are the distinct errors of the middle's failed tool calls,
	// kept when the summary quotes the start of their telling line.
	Errors Coverage `json:"errors"`
	// Noise lists the summary's lines that help no one: repeated lines,
	// stand-ins of pruned or offloaded results, raw JSON, "not shown"
	// notes.
	Noise []string `json:"noise,omitempty"`
}

// ScoreOptions configure ScoreSummary. The zero value uses the defaults.
type ScoreOptions struct {
	// Counter measures the summary. Nil means tokens.O200kBase().
	Counter tokens.Counter
}

// ScoreSummary scores summary, written for middle, against middle and the
// tail kept after it (Split gives both).
//
// Paths and identifiers of the middle are those the user and the agent
// wrote: the text of the user's and the assistant's messages and the
// strings of tool inputs; they are scored when the tail names them again
// anywhere, tool results included (SeenPaths and SeenIdentifiers also take
// the middle's tool results, except stand-ins left by prune or offload). A path is one with a
// "/" that starts with "/", "./", "../" or "~/", has two "/" or more, or
// ends in a file name with an extension, or a bare file name with a known
// extension; an identifier is a word shaped like one (sync_session,
// handleInfo, os.path, Spotter.Session, spotter-a0y, a call "name(").
// Only those that the tail names again are scored: they are what the work
// goes on with. A path counts as kept when the summary holds it, or holds
// it relative to a directory that a summary line declares ("Paths are
// relative to DIR" or "Under DIR:").
//
// Requests and error lines are compared with white space collapsed.
func ScoreSummary(summary string, middle, tail []agentctx.Message, opts ScoreOptions) SummaryScore {
	tc := opts.Counter
	if tc == nil {
		tc = tokens.O200kBase()
	}
	s := SummaryScore{Tokens: tc.Count(summary)}
	flat := collapse(summary)

	mid := termsOf(middle, false)
	later := termsOf(tail, true)
	bases := declaredBases(summary)
	for _, t := range mid.order {
		kind := mid.kind[t]
		if _, ok := later.kind[t]; !ok {
			continue
		}
		switch kind {
		case termPath:
			s.Paths.check(t, pathKept(summary, t, bases))
		case termIdent:
			s.Identifiers.check(t, strings.Contains(summary, t))
		}
	}
	all := termsOf(middle, true)
	for _, t := range all.order {
		if _, ok := later.kind[t]; !ok {
			continue
		}
		switch all.kind[t] {
		case termPath:
			s.SeenPaths.check(t, pathKept(summary, t, bases))
		case termIdent:
			s.SeenIdentifiers.check(t, strings.Contains(summary, t))
		}
	}
	for _, r := range UserRequests(middle) {
		s.Requests.check(clip(r, 120), strings.Contains(flat, collapse(r)))
	}
	seen := map[string]bool{}
	for _, e := range failedLines(middle) {
		k := collapse(e)
		if seen[k] {
			continue
		}
		seen[k] = true
		probe := []rune(k)
		if len(probe) > 40 {
			probe = probe[:40]
		}
		s.Errors.check(clip(e, 120), strings.Contains(flat, string(probe)))
	}
	s.Noise = noiseLines(summary)
	return s
}

// collapse returns s with every run of white space made one space, trimmed.
func collapse(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// termSet is the distinct terms of messages in the order first seen.
type termSet struct {
	order []string
	kind  map[string]int
}

func termsOf(msgs []agentctx.Message, results bool) termSet {
	ts := termSet{kind: map[string]int{}}
	add := func(term string, kind int) {
		if _, ok := ts.kind[term]; !ok {
			term = strings.Clone(term) // it may be a tool input's bytes (inputStrings)
			ts.kind[term] = kind
			ts.order = append(ts.order, term)
		}
	}
	scan := func(s string) { scanTerms(s, add) }
	for i := range msgs {
		eachText(&msgs[i], results, scan)
	}
	return ts
}

// eachText calls fn with each piece of text m shows: its text, the
// strings of its tool inputs (borrowed: see inputStrings), and, when
// results is true, its tool results (not stand-ins). Thinking is left out.
func eachText(m *agentctx.Message, results bool, fn func(string)) {
	if m.Role == agentctx.RoleTool {
		if !results {
			return
		}
		if t := resultText(m.Content); !isStandIn(t) {
			fn(t)
		}
		return
	}
	switch m.Content.Kind() {
	case agentctx.ContentText:
		fn(m.Content.Text())
	case agentctx.ContentBlocks:
		for _, b := range m.Content.Blocks() {
			switch b.Type {
			case agentctx.BlockText:
				fn(b.Text)
			case agentctx.BlockToolUse:
				inputStrings(b.Input, nil, fn)
			case agentctx.BlockToolResult:
				if !results {
					continue
				}
				if t := resultText(b.Content); !isStandIn(t) {
					fn(t)
				}
			}
		}
	}
	for _, tc := range m.ToolCalls {
		inputStrings(unsafe.Slice(unsafe.StringData(tc.Function.Arguments), len(tc.Function.Arguments)), nil, fn) // read, never written
	}
}

// failedLines returns the telling line of every failed tool result of msgs
// that has one.
func failedLines(msgs []agentctx.Message) []string {
	var out []string
	add := func(c agentctx.Content, isError bool, status string) {
		t := resultText(c)
		if isStandIn(t) || !resultFailed(c, isError, status) {
			return
		}
		if l := keyLine(t, true, 200); l != "" {
			out = append(out, l)
		}
	}
	for i := range msgs {
		m := &msgs[i]
		if m.Role == agentctx.RoleTool {
			add(m.Content, false, m.Status())
			continue
		}
		for _, b := range m.Content.Blocks() {
			if b.Type == agentctx.BlockToolResult {
				add(b.Content, b.IsError, m.Status())
			}
		}
	}
	return out
}

var baseLine = regexp.MustCompile(`(?m)(?:Paths are relative to|Under) (\S+/):?\s*$`)

// declaredBases returns the directories the summary says its relative
// paths are under.
func declaredBases(summary string) []string {
	var out []string
	for _, m := range baseLine.FindAllStringSubmatch(summary, -1) {
		out = append(out, strings.TrimSuffix(m[1], ":"))
	}
	return out
}

func pathKept(summary, p string, bases []string) bool {
	if strings.Contains(summary, p) {
		return true
	}
	for _, b := range bases {
		if rel, ok := strings.CutPrefix(p, b); ok && rel != "" && strings.Contains(summary, rel) {
			return true
		}
	}
	return false
}

// noiseLines returns the items of a summary ("- x" and "1. x" lines
// outside the user's requests) that carry nothing: repeats of an earlier
// item, stand-ins, raw JSON objects, "not shown" notes.
func noiseLines(summary string) []string {
	var out []string
	seen := map[string]bool{}
	requests := false
	for _, line := range strings.Split(summary, "\n") {
		if strings.HasPrefix(line, "## ") {
			requests = strings.TrimSpace(line[3:]) == titleRequests
			continue
		}
		// Only items count: a request or a multi-line item quotes what
		// it quotes.
		if _, ok := itemStart(line); !ok || requests {
			continue
		}
		l := strings.TrimSpace(line)
		if l == "- none" {
			continue
		}
		switch {
		case seen[l] && len(l) > 3:
			out = append(out, "repeated: "+clip(l, 80))
		case standin.Contains(l) || strings.Contains(l, knowledgeListTag) ||
			strings.Contains(l, batchOffloadRef) || strings.Contains(l, messageOffloadRef):
			out = append(out, "stand-in: "+clip(l, 80))
		case strings.Contains(l, `{"`) && strings.Contains(l, `":`):
			out = append(out, "raw JSON: "+clip(l, 80))
		case strings.Contains(l, "not shown)"):
			out = append(out, "not shown: "+clip(l, 80))
		}
		seen[l] = true
	}
	return slices.Clip(out)
}
