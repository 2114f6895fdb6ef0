package rawjson

import (
	"context"
	"errors"
	"testing"
)

// TestLines: values and members in order; an incomplete last line is
// skipped and named; a bad line before the last, or a value that is not
// an object, is an error; a done ctx stops the scan.
func TestLines(t *testing.T) {
	tests := []struct {
		in      string
		values  int
		partial int
		err     bool
	}{
		{"{\"a\":1}\n{\"b\":2}\n", 2, 0, false},
		{"{\"a\":1}\n{\"b\":", 1, 2, false},
		{"{\"a\":1}\n{\"b\":\n", 0, 0, true},
		{"{\"b\":", 0, 0, true},
		{"{\"a\":1}\n[1]\n", 0, 0, true},
		{"", 0, 0, false},
	}
	for _, tt := range tests {
		values, members, partial, err := Lines(context.Background(), []byte(tt.in))
		if (err != nil) != tt.err || len(values) != tt.values || len(members) != tt.values || partial != tt.partial {
			t.Errorf("%q: %d values, %d members, partial %d, err %v", tt.in, len(values), len(members), partial, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, _, err := Lines(ctx, []byte(`{"a":1}`)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	data := []byte(`  {"a":1}`)
	vs, _, _, _ := Lines(context.Background(), data)
	if Offset(data, vs[0]) != 2 {
		t.Errorf("Offset = %d", Offset(data, vs[0]))
	}
}
