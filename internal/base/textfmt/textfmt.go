// Package textfmt formats numbers for the text agentctx writes for people
// and models.
package textfmt

import "strconv"

// Thousands writes n with a comma between groups of three digits:
// 40000 → "40,000", -1234 → "-1,234".
func Thousands(n int) string {
	s := strconv.Itoa(n)
	start := 0
	if n < 0 {
		start = 1
	}
	for i := len(s) - 3; i > start; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
