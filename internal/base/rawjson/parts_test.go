package rawjson_test

import (
	"bytes"
	"testing"

	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// TestArrayParts: the parts make the array written element by element,
// whatever is kept and written anew, and a run of elements adjacent in
// the body, one comma apart, is one part.
func TestArrayParts(t *testing.T) {
	compact := []byte(`[{"a":1},{"b":2},{"c":3},"d"]`)
	spaced := []byte(`[ {"a":1} , {"b":2},{"c":3},` + "\n" + `"d" ]`)
	fresh := []byte(`{"new":true}`)
	for _, body := range [][]byte{compact, spaced} {
		els, err := rawjson.Elements(body)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name  string
			order []int // element indices; -1 written anew
			parts int   // in the compact body
		}{
			{"all kept", []int{0, 1, 2, 3}, 3},
			{"first new", []int{-1, 1, 2, 3}, 5},
			{"one between", []int{0, 1, -1, 2, 3}, 7},
			{"one dropped", []int{0, 2, 3}, 5},
			{"reordered", []int{1, 0}, 5},
			{"repeated", []int{0, 0}, 5},
			{"new only", []int{-1}, 3},
			{"none", nil, 2},
		} {
			w := rawjson.NewArrayParts(body)
			want := []byte{'['}
			for i, k := range tc.order {
				if i > 0 {
					want = append(want, ',')
				}
				if k < 0 {
					w.New(fresh)
					want = append(want, fresh...)
				} else {
					w.Kept(els[k])
					want = append(want, els[k]...)
				}
			}
			want = append(want, ']')
			parts := w.Parts()
			if got := bytes.Join(parts, nil); !bytes.Equal(got, want) {
				t.Errorf("%s: %s, want %s", tc.name, got, want)
			}
			if &body[0] == &compact[0] && len(parts) != tc.parts {
				t.Errorf("%s: %d parts, want %d", tc.name, len(parts), tc.parts)
			}
		}
	}
	// Elements from elsewhere are never joined; the zero value has no
	// body.
	var w rawjson.ArrayParts
	w.Kept([]byte(`1`))
	w.Kept([]byte(`2`))
	if got := bytes.Join(w.Parts(), nil); string(got) != `[1,2]` {
		t.Errorf("zero value: %s", got)
	}
}

// FuzzArrayParts: for any array and any choice of its elements, kept or
// written anew, in any order, the parts make the array written element
// by element.
func FuzzArrayParts(f *testing.F) {
	f.Add([]byte(`[1,2,3,{"a":[4]}]`), []byte{0, 1, 2, 3})
	f.Add([]byte(`[ "x" , "y" ,"z"]`), []byte{2, 0, 255, 1, 1})
	f.Add([]byte(`[]`), []byte{7})
	f.Fuzz(func(t *testing.T, body, order []byte) {
		els, err := rawjson.Elements(body)
		if err != nil {
			return
		}
		w := rawjson.NewArrayParts(body)
		want := []byte{'['}
		for i, o := range order {
			if i > 0 {
				want = append(want, ',')
			}
			if int(o) < len(els) {
				w.Kept(els[o])
				want = append(want, els[o]...)
			} else {
				w.New([]byte(`null`))
				want = append(want, `null`...)
			}
		}
		want = append(want, ']')
		if got := bytes.Join(w.Parts(), nil); !bytes.Equal(got, want) {
			t.Fatalf("parts make %s, want %s", got, want)
		}
	})
}
