package rawjson

// ArrayParts writes a JSON array as the parts of its bytes, in order,
// without copying its elements: an element kept from a body (a subslice
// of it) is read in place, and a run of kept elements that lie in the
// body one comma apart is one part; the brackets, the commas between
// runs and the elements written anew are parts of their own. Joined, the
// parts are the array written element by element: '[', the elements with
// one comma between, ']'. The zero value writes with no body (no runs).
type ArrayParts struct {
	body  []byte
	parts [][]byte
	run   []byte // kept elements adjacent in body, still to be added
	any   bool   // an element was written
}

// NewArrayParts returns an ArrayParts whose kept elements are subslices of
// body.
func NewArrayParts(body []byte) *ArrayParts {
	return &ArrayParts{body: body, parts: append(make([][]byte, 0, 8), arrayOpen)}
}

// The bytes ArrayParts puts around and between elements: read only.
var arrayOpen, arrayComma, arrayClose = []byte("["), []byte(","), []byte("]")

// Kept adds an element as it is in the body.
func (a *ArrayParts) Kept(el []byte) {
	if a.run != nil {
		if r, ok := a.joined(el); ok {
			a.run = r
			return
		}
	}
	a.next()
	a.run = el
}

// New adds an element written anew (its bytes are read, not copied, until
// the parts are).
func (a *ArrayParts) New(el []byte) {
	a.next()
	a.parts = append(a.parts, el)
}

// next ends the run and adds what comes before the next element: the
// opening bracket, or a comma.
func (a *ArrayParts) next() {
	a.flush()
	if a.parts == nil {
		a.parts = append(a.parts, arrayOpen) // the zero value
	}
	if a.any {
		a.parts = append(a.parts, arrayComma)
	}
	a.any = true
}

func (a *ArrayParts) flush() {
	if a.run != nil {
		a.parts, a.run = append(a.parts, a.run), nil
	}
}

// Parts closes the array and returns its parts.
func (a *ArrayParts) Parts() [][]byte {
	if a.parts == nil {
		a.parts = append(a.parts, arrayOpen)
	}
	a.flush()
	return append(a.parts, arrayClose)
}

// joined returns the span of the body that is the run, one comma, then
// next, when they lie so in it.
func (a *ArrayParts) joined(next []byte) ([]byte, bool) {
	r, ok := spanIn(a.body, a.run)
	if !ok {
		return nil, false
	}
	end := r + len(a.run)
	if n, ok := spanIn(a.body, next); !ok || n != end+1 || a.body[end] != ',' {
		return nil, false
	}
	return a.body[r : end+1+len(next)], true
}

// spanIn returns the offset of sub in data when sub is a non-empty span
// of data's own bytes.
func spanIn(data, sub []byte) (int, bool) {
	if len(sub) == 0 || len(data) == 0 {
		return 0, false
	}
	off := cap(data) - cap(sub)
	if off < 0 || off+len(sub) > len(data) || &data[off] != &sub[0] {
		return 0, false
	}
	return off, true
}
