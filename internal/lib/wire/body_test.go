package wire

import (
	"errors"
	"testing"
)

func TestSplitBody(t *testing.T) {
	b, err := SplitBody([]byte(` {"model":"m","n":1,"model":"last","messages":[1]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Members) != 4 || b.Str("model") != "last" || string(b.Get("messages")) != "[1]" || b.Get("none") != nil || b.Str("n") != "" {
		t.Errorf("split %+v", b.Members)
	}
	// The hook finds the ends of the values: offsets from the first
	// non-space byte.
	var keys []string
	_, err = SplitBody([]byte(`  {"a":[1, 2],"b":3}`), func(key string, i int) (int, error) {
		keys = append(keys, key)
		return -1, nil
	})
	if err != nil || len(keys) != 2 {
		t.Errorf("hook saw %v, %v", keys, err)
	}
	for _, raw := range []string{``, ` `, `[1]`, `"x"`} {
		if _, err := SplitBody([]byte(raw), nil); !errors.Is(err, ErrNotObject) {
			t.Errorf("%q: %v, want ErrNotObject", raw, err)
		}
	}
	if _, err := SplitBody([]byte(`{"a":}`), nil); err == nil || errors.Is(err, ErrNotObject) {
		t.Errorf("invalid object: %v", err)
	}
}
