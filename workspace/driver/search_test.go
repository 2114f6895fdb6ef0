package driver_test

import (
	"slices"
	"testing"

	"github.com/agentctx/agentctx/workspace/driver"
)

// TestSubstrings: the literal parts an index may require must be in every
// matching line; when in doubt there are none.
func TestSubstrings(t *testing.T) {
	cases := []struct {
		pattern string
		fold    bool
		want    []string
	}{
		{"needle", false, []string{"needle"}},
		{"needle", true, []string{"needle"}},
		{"kelvin", false, []string{"kelvin"}},
		{"kelvin", true, []string{"elvin"}},          // k folds to U+212A
		{"(?i)mississippi", false, []string{"ippi"}}, // s folds to U+017F
		{"error: .* failed", false, []string{"error: ", " failed"}},
		{"ab", false, nil},
		{"a.c", false, nil},
		{"foo|bar", false, nil},
		{"(foo)+bar", false, []string{"foo", "bar"}},
		{"x*needle?", false, []string{"needl"}},
		{"^status=200$", false, []string{"status=200"}},
		{"go{3}gle", false, []string{"gooogle"}},
		{"é+tude", false, []string{"tude"}},
		{`\d+ms`, false, nil},
		{"(", false, nil},
		{"abc[d]ef", false, []string{"abcdef"}},
		{"tab\there", false, []string{"tab", "here"}},
	}
	for _, c := range cases {
		got := driver.GrepQuery{Pattern: c.pattern, IgnoreCase: c.fold}.Substrings()
		if !slices.Equal(got, c.want) {
			t.Errorf("Substrings(%q, fold %v) = %q, want %q", c.pattern, c.fold, got, c.want)
		}
	}
}

func TestCountAndSplitLines(t *testing.T) {
	cases := []struct {
		s     string
		lines []string
	}{
		{"", nil},
		{"\n", []string{""}},
		{"a", []string{"a"}},
		{"a\n", []string{"a"}},
		{"a\r\nb", []string{"a", "b"}},
		{"a\n\nb\n", []string{"a", "", "b"}},
	}
	for _, c := range cases {
		if got := driver.SplitLines(c.s); !slices.Equal(got, c.lines) || driver.CountLines(c.s) != len(c.lines) {
			t.Errorf("%q: SplitLines %q CountLines %d", c.s, got, driver.CountLines(c.s))
		}
	}
}

// FuzzGrepperMatchesRegexp: the literal prefilter never changes what
// matches: the total is that of the regular expression on every line.
func FuzzGrepperMatchesRegexp(f *testing.F) {
	f.Add("needle", false, "a needle\nNEEDLE\nno")
	f.Add("kelvin", true, "300 \u212Aelvin\nKELVIN\r\nkelvin")
	f.Add("(?i)mis+is+ippi", false, "MIſſISSIPPI\nmississippi")
	f.Add("ab(?i:cd)ef", false, "abCDef\nABcdef")
	f.Add("x+y{2}z", true, "XYYZ\nxyz")
	f.Fuzz(func(t *testing.T, pattern string, fold bool, content string) {
		q := driver.GrepQuery{Pattern: pattern, IgnoreCase: fold, MaxResults: -1}
		re, err := q.Compile()
		if err != nil {
			return
		}
		want := 0
		for _, l := range driver.SplitLines(content) {
			if re.MatchString(l) {
				want++
			}
		}
		g, err := driver.NewGrepper(q)
		if err != nil {
			t.Fatal(err)
		}
		g.Add("x", content)
		if got := g.Result().Total; got != want {
			t.Errorf("pattern %q fold %v: %d matches, regexp finds %d (substrings %q)", pattern, fold, got, want, q.Substrings())
		}
	})
}
