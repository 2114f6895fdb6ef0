package driver

import (
	"cmp"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
)

// DefaultMaxResults is the number of matching lines a grep returns when
// GrepQuery.MaxResults is 0 (SPEC §5).
const DefaultMaxResults = 100

// LinesOf returns lines start..end of content (1-based, inclusive). An end
// beyond the last line is clamped to it. A start below 1, a start after the
// end, and a start beyond the last line are ErrInvalidRange (so an empty
// content has no line to read). Lines uses it for every Store that is not
// a LineReader.
func LinesOf(id, content string, start, end int) (*LineRange, error) {
	total := CountLines(content)
	end, err := CheckRange(start, end, total)
	if err != nil {
		return nil, err
	}
	// Skip to line start without splitting the whole content.
	s := content
	for range start - 1 {
		s = s[strings.IndexByte(s, '\n')+1:]
	}
	lines := make([]string, 0, end-start+1)
	for range end - start + 1 {
		line := s
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			line, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		lines = append(lines, strings.TrimSuffix(line, "\r"))
	}
	return &LineRange{ID: id, Start: start, End: end, Total: total, Lines: lines}, nil
}

// CheckRange checks a line range start..end of an artifact of total
// lines by the rules of LinesOf and returns the end clamped to total. A
// LineReader uses it to report the same errors.
func CheckRange(start, end, total int) (int, error) {
	switch {
	case start < 1:
		return 0, fmt.Errorf("%w: start line %d: lines are numbered from 1", ErrInvalidRange, start)
	case start > end:
		return 0, fmt.Errorf("%w: start line %d is after end line %d", ErrInvalidRange, start, end)
	case start > total:
		return 0, fmt.Errorf("%w: start line %d is beyond the end (%d lines)", ErrInvalidRange, start, total)
	}
	return min(end, total), nil
}

// GrepQuery is a line search.
type GrepQuery struct {
	// ID names the one artifact to search. When empty, every artifact that
	// matches Filter is searched, in Query order (Filter's Offset and
	// Limit are ignored).
	ID     string
	Filter Filter
	// Pattern is an RE2 regular expression (Go regexp syntax) matched
	// against each line, without its line ending.
	Pattern string
	// IgnoreCase matches letters in any case (Unicode case folding).
	IgnoreCase bool
	// Context is the number of lines shown before and after each match.
	Context int
	// MaxResults caps the matching lines returned over all artifacts:
	// 0 means DefaultMaxResults, a negative value means no cap. Matches
	// past the cap are still counted in GrepResult.Total.
	MaxResults int
}

// GrepResult is what a grep found.
type GrepResult struct {
	Hits     []GrepHit `json:"hits"`     // artifacts with at least one returned match, in order
	Matches  int       `json:"matches"`  // matching lines returned
	Total    int       `json:"total"`    // matching lines found; more than Matches when the cap was hit
	Searched int       `json:"searched"` // artifacts in scope: the one named, or all that match the filter
	Lines    int       `json:"lines"`    // lines read
}

// Limited reports whether matches were left out because of MaxResults.
func (r *GrepResult) Limited() bool { return r.Total > r.Matches }

// GrepHit is the matches in one artifact, with their context lines.
type GrepHit struct {
	ID         string     `json:"id"`
	TotalLines int        `json:"total_lines"`
	Lines      []GrepLine `json:"lines"` // ascending; a gap in Number separates groups
}

// GrepLine is one line shown by a grep.
type GrepLine struct {
	Number int    `json:"number"` // 1-based
	Text   string `json:"text"`
	Match  bool   `json:"match"` // false for a context line
}

// Compile compiles the query's pattern. A pattern that does not compile is
// ErrInvalidPattern.
func (q GrepQuery) Compile() (*regexp.Regexp, error) {
	p := q.Pattern
	if q.IgnoreCase {
		p = "(?i)" + p
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidPattern, err)
	}
	return re, nil
}

// Limit returns the cap on returned matches: MaxResults, DefaultMaxResults
// for 0, and -1 (none) for a negative value.
func (q GrepQuery) Limit() int {
	switch {
	case q.MaxResults == 0:
		return DefaultMaxResults
	case q.MaxResults < 0:
		return -1
	}
	return q.MaxResults
}

// Grepper searches artifacts one after another and collects a GrepResult
// under the query's cap. Grep uses it, and so can a Searcher: NewGrepper,
// then Add for every candidate artifact in order, then Result.
type Grepper struct {
	re      *regexp.Regexp
	pieces  []string // Substrings: a line without one of them cannot match
	fold    bool     // pieces are lower-case and compared with lower-cased text
	context int
	limit   int
	res     GrepResult
}

// NewGrepper compiles q for a search.
func NewGrepper(q GrepQuery) (*Grepper, error) {
	re, err := q.Compile()
	if err != nil {
		return nil, err
	}
	pieces, fold := q.substrings()
	if fold { // compared with lower-cased text: lower the exact parts too
		for i, p := range pieces {
			pieces[i] = asciiLower(p)
		}
	}
	return &Grepper{re: re, pieces: pieces, fold: fold, context: max(q.Context, 0), limit: q.Limit()}, nil
}

// asciiLower lower-cases the ASCII letters of s; other bytes, and so every
// byte offset, stay as they are.
func asciiLower(s string) string {
	i := 0
	for i < len(s) && !('A' <= s[i] && s[i] <= 'Z') {
		i++
	}
	if i == len(s) {
		return s
	}
	b := []byte(s)
	for ; i < len(b); i++ {
		if 'A' <= b[i] && b[i] <= 'Z' {
			b[i] += 'a' - 'A'
		}
	}
	return string(b)
}

// mayMatch reports whether text (lower-cased when g.fold) holds every
// piece; when it does not, no line of it can match (see
// GrepQuery.Substrings).
func (g *Grepper) mayMatch(text string) bool {
	for _, p := range g.pieces {
		if !strings.Contains(text, p) {
			return false
		}
	}
	return true
}

// Add searches one artifact's content.
func (g *Grepper) Add(id, content string) {
	g.res.Searched++
	// The literal parts of the pattern decide cheaply for most content and
	// most lines; Go's regexp is slow on case-insensitive literals.
	var lowered []string
	if len(g.pieces) > 0 {
		low := content
		if g.fold {
			low = asciiLower(content)
		}
		if !g.mayMatch(low) {
			g.res.Lines += CountLines(content)
			return
		}
		if g.fold {
			lowered = SplitLines(low)
		}
	}
	lines := SplitLines(content)
	g.res.Lines += len(lines)
	hit := GrepHit{ID: id, TotalLines: len(lines)}
	next := 0 // first line (0-based) not yet shown
	trail := 0
	for i, line := range lines {
		// (Exact pieces need no check per line: regexp finds literals fast.)
		if lowered != nil && !g.mayMatch(lowered[i]) || !g.re.MatchString(line) {
			if trail > 0 && i >= next {
				hit.Lines = append(hit.Lines, GrepLine{Number: i + 1, Text: line})
				next = i + 1
				trail--
			}
			continue
		}
		g.res.Total++
		if g.limit >= 0 && g.res.Matches >= g.limit {
			trail = 0 // a match past the cap ends the trailing context
			continue
		}
		g.res.Matches++
		for j := max(next, i-g.context); j < i; j++ {
			hit.Lines = append(hit.Lines, GrepLine{Number: j + 1, Text: lines[j]})
		}
		hit.Lines = append(hit.Lines, GrepLine{Number: i + 1, Text: line, Match: true})
		next = i + 1
		trail = g.context
	}
	if len(hit.Lines) > 0 {
		g.res.Hits = append(g.res.Hits, hit)
	}
}

// Skipped counts n artifacts in scope that an index showed cannot match,
// so they were not read (see GrepQuery.Substrings).
func (g *Grepper) Skipped(n int) { g.res.Searched += n }

// SearchedElsewhere counts n artifacts, of lines lines in all, that were
// searched without Add (by a database server) and have no matching line.
func (g *Grepper) SearchedElsewhere(n, lines int) {
	g.res.Searched += n
	g.res.Lines += lines
}

// Result returns what was found so far.
func (g *Grepper) Result() *GrepResult {
	r := g.res
	if r.Hits == nil {
		r.Hits = []GrepHit{}
	}
	return &r
}

// SortInfos orders descriptions as Query returns them: by Created, then
// by ID.
func SortInfos(list []Info) {
	slices.SortFunc(list, func(a, b Info) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// Substrings returns strings that every line matching q contains, compared
// ASCII-case-insensitively: the literal parts of the pattern that any match
// must include, each at least 3 characters of printable ASCII (letters
// whose case folds outside ASCII, k and s, are left out of case-insensitive
// parts). A full-text index (SQLite FTS5 trigram, PostgreSQL pg_trgm) can
// use them to skip artifacts that cannot match; the search itself must
// still run the regular expression. An invalid pattern or one without such
// parts returns nil.
func (q GrepQuery) Substrings() []string {
	out, _ := q.substrings()
	return out
}

// substrings returns Substrings and whether any part of the pattern
// ignores case (when none does, the strings are exact).
func (q GrepQuery) substrings() ([]string, bool) {
	flags := syntax.Perl
	if q.IgnoreCase {
		flags |= syntax.FoldCase
	}
	re, err := syntax.Parse(q.Pattern, flags)
	if err != nil {
		return nil, false
	}
	re = re.Simplify()
	info := required(re)
	var out []string
	add := func(s string) {
		for _, part := range strings.Split(s, "\x00") {
			if len(part) >= 3 && !slices.Contains(out, part) {
				out = append(out, part)
			}
		}
	}
	if info.exact {
		add(info.s)
	}
	for _, s := range info.req {
		add(s)
	}
	return out, hasFold(re)
}

func hasFold(re *syntax.Regexp) bool {
	if re.Flags&syntax.FoldCase != 0 {
		return true
	}
	for _, sub := range re.Sub {
		if hasFold(sub) {
			return true
		}
	}
	return false
}

// litInfo describes what a regexp node matches: exactly the string s (with
// "\x00" standing for a character that cannot be searched for), or
// something that contains every string of req.
type litInfo struct {
	exact bool
	s     string
	req   []string
}

func literalString(runes []rune, fold bool) string {
	var b strings.Builder
	for _, r := range runes {
		switch {
		case r < 0x20 || r > 0x7e:
			b.WriteByte(0)
		case fold && (r == 'k' || r == 'K' || r == 's' || r == 'S'):
			b.WriteByte(0) // folds to U+212A KELVIN SIGN / U+017F LONG S
		case fold && r >= 'A' && r <= 'Z':
			b.WriteRune(r + 'a' - 'A')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func required(re *syntax.Regexp) litInfo {
	switch re.Op {
	case syntax.OpLiteral:
		return litInfo{exact: true, s: literalString(re.Rune, re.Flags&syntax.FoldCase != 0)}
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return litInfo{exact: true}
	case syntax.OpCharClass:
		if len(re.Rune) == 2 && re.Rune[0] == re.Rune[1] {
			return litInfo{exact: true, s: literalString(re.Rune[:1], false)}
		}
	case syntax.OpCapture:
		return required(re.Sub[0])
	case syntax.OpPlus:
		return atLeastOnce(required(re.Sub[0]))
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return atLeastOnce(required(re.Sub[0]))
		}
	case syntax.OpConcat:
		var out litInfo
		run, exact := "", true
		for _, sub := range re.Sub {
			si := required(sub)
			if si.exact {
				run += si.s
				continue
			}
			exact = false
			out.req = append(out.req, run)
			run = ""
			out.req = append(out.req, si.req...)
		}
		if exact {
			return litInfo{exact: true, s: run}
		}
		out.req = append(out.req, run)
		return out
	}
	return litInfo{}
}

func atLeastOnce(sub litInfo) litInfo {
	if sub.exact {
		return litInfo{req: []string{sub.s}}
	}
	return litInfo{req: sub.req}
}
