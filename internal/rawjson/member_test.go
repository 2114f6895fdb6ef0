package rawjson

import "testing"

func TestGetSet(t *testing.T) {
	for _, c := range []struct{ obj, key, get, set string }{
		{`{"a":1,"b":{"c":2}}`, "b", `{"c":2}`, `{"a":1,"b":true}`},
		{`{"a":1,"a":2}`, "a", `2`, `{"a":true,"a":true}`},
		{` { "a" : 1 } `, "z", ``, `{"a":1,"z":true}`},
		{`{}`, "a", ``, `{"a":true}`},
		{`[1]`, "a", ``, `[1]`},
		{`{"a":`, "a", ``, `{"a":`},
	} {
		if got := string(Get([]byte(c.obj), c.key)); got != c.get {
			t.Errorf("Get(%s, %q) = %q, want %q", c.obj, c.key, got, c.get)
		}
		if got := string(Set([]byte(c.obj), c.key, []byte("true"))); got != c.set {
			t.Errorf("Set(%s, %q) = %q, want %q", c.obj, c.key, got, c.set)
		}
	}
}
