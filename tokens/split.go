package tokens

// The pre-tokenizers below replace tiktoken's regular expressions. Each
// returns the end of the piece that the pattern's find_iter yields at s[i].
// Both patterns match at every position (every character is a letter, a
// number, white space or something else, and each kind has an alternative),
// so the pieces tile the text and a splitter only needs the start.
//
// The patterns are matched by a backtracking engine (fancy-regex), so the
// alternatives are tried in order and the first that matches wins, with its
// greedy quantifiers backtracking as needed. The comments name the
// alternatives A1..A7 (cl100k_base) and B1..B7 (o200k_base) in pattern order.
//
// s is valid UTF-8 (Encoding sanitizes invalid input first) and i < len(s).

// splitCL100k implements
//
//	A1 (?i:'s|'t|'re|'ve|'m|'ll|'d)
//	A2 [^\r\n\p{L}\p{N}]?\p{L}+
//	A3 \p{N}{1,3}
//	A4  ?[^\s\p{L}\p{N}]+[\r\n]*
//	A5 \s*[\r\n]+
//	A6 \s+(?!\S)
//	A7 \s+
func (t *classes) splitCL100k(s string, i int) int {
	c, n := t.stage2[s[i]&0x7F], 1
	if s[i] >= 0x80 {
		c, n = t.multi(s, i)
	}
	if c&cL != 0 { // A2 without the optional prefix
		return t.letters(s, i+n)
	}
	if c&cApos != 0 { // A1
		if k := contraction(s, i+1); k > 0 {
			return i + 1 + k
		}
	}
	j := i + n
	var c2 uint8 // class of the next character, 0 at the end
	n2 := 0
	if j < len(s) {
		if s[j] < 0x80 {
			c2, n2 = t.stage2[s[j]], 1
		} else {
			c2, n2 = t.multi(s, j)
		}
	}
	if c&(cN|cNL) == 0 && c2&cL != 0 { // A2 with c as the prefix
		return t.letters(s, j+n2)
	}
	if c&cN != 0 { // A3
		if c2&cN != 0 {
			j += n2
			if j < len(s) {
				if c3, n3 := t.at(s, j); c3&cN != 0 {
					j += n3
				}
			}
		}
		return j
	}
	if c&cS == 0 { // A4 without the space
		return t.newlines(s, t.others(s, j))
	}
	if s[i] == ' ' && j < len(s) && c2&(cS|cL|cN) == 0 { // A4 with the space
		return t.newlines(s, t.others(s, j+n2))
	}
	return t.spaces(s, i, n)
}

// splitO200k implements
//
//	B1 [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	B2 [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	B3 \p{N}{1,3}
//	B4  ?[^\s\p{L}\p{N}]+[\r\n/]*
//	B5 \s*[\r\n]+
//	B6 \s+(?!\S)
//	B7 \s+
//
// Call the first bracket class U ("upper": Lu Lt Lm Lo M) and the second W
// ("lower": Ll Lm Lo M). Marks (M) are in both but are not \p{L}, so a mark
// can also be the optional prefix, and the engine tries B1 with the prefix,
// then B1 without it, before B2.
func (t *classes) splitO200k(s string, i int) int {
	c, n := t.stage2[s[i]&0x7F], 1
	if s[i] >= 0x80 {
		c, n = t.multi(s, i)
	}
	j := i + n
	if c&cL != 0 { // B1, else B2, without the prefix
		end, u := t.cased(s, i)
		if end < 0 {
			// B2. c is Lu or Lt (B1 matches from Ll, Lm or Lo), so u > i.
			end = u
		}
		return suffix(s, end)
	}
	if c&(cN|cNL) == 0 { // c may be the prefix
		if j < len(s) {
			end, u := t.cased(s, j)
			if end >= 0 { // B1 with the prefix
				return suffix(s, end)
			}
			if c&cW != 0 {
				// c is a mark. B1 without the prefix: U* takes c and the
				// U run after it, backtracks to c, the only W character
				// in it, and W+ matches c alone.
				return suffix(s, j)
			}
			if u > j { // B2 with the prefix; W* is empty
				return suffix(s, u)
			}
		} else if c&cW != 0 { // a mark at the end: B1 without the prefix
			return j
		}
	}
	if c&cN != 0 { // B3
		if j < len(s) {
			if c2, n2 := t.at(s, j); c2&cN != 0 {
				j += n2
				if j < len(s) {
					if c3, n3 := t.at(s, j); c3&cN != 0 {
						j += n3
					}
				}
			}
		}
		return j
	}
	if c&cS == 0 { // B4 without the space
		return t.newlinesSlashes(s, t.others(s, j))
	}
	if s[i] == ' ' && j < len(s) {
		if c2, n2 := t.at(s, j); c2&(cS|cL|cN) == 0 { // B4 with the space
			return t.newlinesSlashes(s, t.others(s, j+n2))
		}
	}
	return t.spaces(s, i, n)
}

// letters returns the end of the run of \p{L} characters starting at s[j].
func (t *classes) letters(s string, j int) int {
	for j < len(s) {
		b := s[j]
		if b < 0x80 {
			if t.stage2[b]&cL == 0 {
				return j
			}
			j++
			continue
		}
		c, n := t.multi(s, j)
		if c&cL == 0 {
			return j
		}
		j += n
	}
	return j
}

// cased matches U*W+ (B1) at s[p:], where U* backtracks: it returns the end
// of the B1 match, or -1 when B1 does not match, and the end u of the run of
// U characters at p (for B2).
//
// U* first takes the whole U run [p, u). If the character at u is in W (it
// is then Ll, since it is not in U), W+ takes the W run from u. Otherwise
// U* gives back characters until W+ can start: at the last character of
// [p, u) that is in W too (Lm, Lo or M), and W+ then matches just that one,
// because nothing after it in the run is in W.
func (t *classes) cased(s string, p int) (end, u int) {
	lastBoth := -1 // end of the last U-and-W character in [p, u)
	j := p
	for j < len(s) {
		c, n := t.stage2[s[j]&0x7F], 1
		if s[j] >= 0x80 {
			c, n = t.multi(s, j)
		}
		if c&cU == 0 {
			if c&cW == 0 {
				break
			}
			// W+ from j.
			j += n
			for j < len(s) {
				if b := s[j]; b < 0x80 {
					if t.stage2[b]&cW == 0 {
						break
					}
					j++
					continue
				}
				c, n = t.multi(s, j)
				if c&cW == 0 {
					break
				}
				j += n
			}
			return j, 0
		}
		j += n
		if c&cW != 0 {
			lastBoth = j
		}
	}
	return lastBoth, j
}

// suffix extends a B1/B2 match ending at e by the optional contraction.
func suffix(s string, e int) int {
	if e < len(s) && s[e] == '\'' {
		if k := contraction(s, e+1); k > 0 {
			return e + 1 + k
		}
	}
	return e
}

// contraction returns the length in bytes of the letters of
// (?i:'s|'t|'re|'ve|'m|'ll|'d) at s[j:], just after the apostrophe, or 0.
// Case-insensitive matching in the regex engine uses simple case folding:
// besides the ASCII letters of both cases, only U+017F LATIN SMALL LETTER
// LONG S (ſ) folds to one of these letters (to s); internal/gen checks this
// against the engine. The Kelvin sign folds to k, which no contraction has.
func contraction(s string, j int) int {
	if j >= len(s) {
		return 0
	}
	switch b := s[j]; b | 0x20 { // b|0x20 is one of these letters only for ASCII b
	case 's', 't', 'm', 'd':
		return 1
	case 'r', 'v':
		if j+1 < len(s) && s[j+1]|0x20 == 'e' {
			return 2
		}
	case 'l':
		if j+1 < len(s) && s[j+1]|0x20 == 'l' {
			return 2
		}
	default:
		if b == 0xC5 && j+1 < len(s) && s[j+1] == 0xBF { // ſ
			return 2
		}
	}
	return 0
}

// others returns the end of the run of [^\s\p{L}\p{N}] characters at s[j:].
func (t *classes) others(s string, j int) int {
	for j < len(s) {
		b := s[j]
		if b < 0x80 {
			if t.stage2[b]&(cS|cL|cN) != 0 {
				return j
			}
			j++
			continue
		}
		c, n := t.multi(s, j)
		if c&(cS|cL|cN) != 0 {
			return j
		}
		j += n
	}
	return j
}

// newlines returns the end of the run of [\r\n] at s[j:].
func (t *classes) newlines(s string, j int) int {
	for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
		j++
	}
	return j
}

// newlinesSlashes returns the end of the run of [\r\n/] at s[j:].
func (t *classes) newlinesSlashes(s string, j int) int {
	for j < len(s) && (s[j] == '\r' || s[j] == '\n' || s[j] == '/') {
		j++
	}
	return j
}

// spaces implements A5..A7 (B5..B7) at s[i], a white-space character of n
// bytes that no earlier alternative matched.
//
// \s*[\r\n]+ takes the white-space run and backtracks to its last \r or \n,
// so it matches up to and including that character. Without one,
// \s+(?!\S) matches the run when it ends the text, and otherwise the run
// without its last character (which the next piece then takes, as in
// " word"), unless the run is a single character, which \s+ matches.
func (t *classes) spaces(s string, i, n int) int {
	nl := -1 // end of the last \r or \n in the run
	if s[i] == '\r' || s[i] == '\n' {
		nl = i + 1
	}
	last := i // start of the run's last character
	j := i + n
	for j < len(s) {
		c, m := t.stage2[s[j]&0x7F], 1
		if s[j] >= 0x80 {
			c, m = t.multi(s, j)
		}
		if c&cS == 0 {
			break
		}
		if c&cNL != 0 {
			nl = j + 1
		}
		last = j
		j += m
	}
	switch {
	case nl >= 0:
		return nl
	case j == len(s) || last == i:
		return j
	default:
		return last
	}
}
