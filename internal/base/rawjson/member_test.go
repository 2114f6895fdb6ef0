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

// AppendMembers splits as Members does, into the caller's buffer: no
// allocation when it has room (decodeMembers splits every message and
// block of a request into an array on its stack; issue 24).
func TestAppendMembers(t *testing.T) {
	for _, obj := range []string{`{}`, ` { "b" : 1.50 , "a":{"x": [ 1 ]}, "\u0063":"\u00e9" } `, `{"a":1,"a":2,"c":[],"d":null,"e":"f"}`} {
		want, err := Members([]byte(obj))
		if err != nil {
			t.Fatal(err)
		}
		var buf [8]Member
		got, err := AppendMembers(buf[:0], []byte(obj))
		if err != nil || len(got) != len(want) {
			t.Fatalf("%s: %d members, %v; want %d", obj, len(got), err, len(want))
		}
		for i := range got {
			if got[i].Key != want[i].Key || string(got[i].RawKey) != string(want[i].RawKey) || string(got[i].Value) != string(want[i].Value) {
				t.Errorf("%s: member %d = %+v, want %+v", obj, i, got[i], want[i])
			}
		}
		if len(got) > 0 && &got[0] != &buf[0] {
			t.Errorf("%s: not split into the buffer", obj)
		}
	}
	if _, err := AppendMembers(nil, []byte(`[1]`)); err != ErrNotObject {
		t.Errorf("array: %v, want ErrNotObject", err)
	}
	data := []byte(`{"role":"user","content":"hi","x":1}`)
	if n := testing.AllocsPerRun(100, func() {
		var buf [8]Member
		if _, err := AppendMembers(buf[:0], data); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%v allocations splitting into a buffer with room", n)
	}
}
