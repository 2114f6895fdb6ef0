package golden

import (
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	lines := func(n int, change map[int]string) []byte {
		var b strings.Builder
		for i := range n {
			if c, ok := change[i]; ok {
				if c != "" {
					b.WriteString(c + "\n")
				}
				continue
			}
			b.WriteString("line " + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + "\n")
		}
		return []byte(b.String())
	}
	a := lines(100, map[int]string{10: "=== step 2"})
	if d := Diff(a, a); d != "" {
		t.Fatalf("equal inputs: %q", d)
	}
	b := lines(100, map[int]string{10: "=== step 2", 40: "changed", 70: ""})
	d := Diff(a, b)
	for _, want := range []string{"@@ in === step 2", "-    41  line", "+    41  changed", "-    71  line"} {
		if !strings.Contains(d, want) {
			t.Errorf("diff lacks %q:\n%s", want, d)
		}
	}
	if strings.Count(d, "@@") != 2 {
		t.Errorf("want two hunks:\n%s", d)
	}
}

func TestBody(t *testing.T) {
	got := Body([]byte(`{"a":[1,2]}`))
	want := "(11 bytes, sha256 "
	if !strings.HasPrefix(got, want) || !strings.Contains(got, "\"a\": [\n    1,") {
		t.Errorf("Body = %q", got)
	}
	if got := Body([]byte("not json")); !strings.HasSuffix(got, "\nnot json\n") {
		t.Errorf("Body of text = %q", got)
	}
}
