package wire

// JSONArray reads a JSON array written incrementally, element by element:
// the Gemini API's streamGenerateContent without alt=sse, which writes
// "[", then each response object as it is made, separated by commas
// (with line breaks between them), then "]". Feed it the stream's bytes
// as they come, split anywhere, and End it when the stream ends. Each
// element of the array is emitted once its last byte is read (an object
// or an array at its closing bracket, a string at its closing quote,
// another value at the comma, space or bracket after it), so that the
// last chunk of an answer is read as soon as it comes, before the "]".
//
// What follows the array's "]" is passed over. A stream that is not an
// array (its first byte, after spaces and a byte order mark, is not "[")
// is one value: emitted whole at End (an answer written whole). Elements
// are not validated: the reader only tracks strings and brackets, and an
// element or value over MaxEventSize is passed over whole, the stream's
// later elements still read. The zero value is ready.
type JSONArray struct {
	state    arrayState
	depth    int  // brackets open in the element
	inStr    bool // in a string of the element
	esc      bool // after a backslash in that string
	elem     []byte
	tooLarge bool
	bom      int  // bytes of a leading byte order mark read
	started  bool // a byte other than the mark's was read
}

type arrayState uint8

const (
	arrayStart   arrayState = iota // before the "["
	arrayBetween                   // in the array, between elements
	arrayElem                      // in an element
	arrayDone                      // after the "]"
	arrayValue                     // not an array: one value, emitted at End
)

// Feed reads a chunk of the stream and calls emit with each element it
// completes; the element is the reader's memory, valid only until emit
// returns.
func (a *JSONArray) Feed(p []byte, emit func([]byte)) {
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch a.state {
		case arrayStart:
			if !a.started && a.bom < len(bom) && c == bom[a.bom] {
				a.bom++ // a byte order mark, at the stream's start only
				continue
			}
			a.started = true
			switch c {
			case ' ', '\t', '\r', '\n':
			case '[':
				a.state = arrayBetween
			default:
				a.state = arrayValue
				a.keep(p[i:])
				return
			}
		case arrayBetween:
			switch c {
			case ' ', '\t', '\r', '\n', ',':
			case ']':
				a.state = arrayDone
				return
			default:
				a.state, a.depth, a.inStr, a.esc = arrayElem, 0, false, false
				a.elem, a.tooLarge = a.elem[:0], false
				i = a.element(p, i, emit) - 1
			}
		case arrayElem:
			i = a.element(p, i, emit) - 1
		case arrayDone:
			return
		case arrayValue:
			a.keep(p[i:])
			return
		}
	}
}

// element reads the current element from p[i] on and returns where it
// stopped: past the element's last byte when it completed (emitted), at
// the delimiter that ends a scalar (left for the caller), or len(p).
func (a *JSONArray) element(p []byte, i int, emit func([]byte)) int {
	start := i
	for ; i < len(p); i++ {
		c := p[i]
		if a.inStr {
			switch {
			case a.esc:
				a.esc = false
			case c == '\\':
				a.esc = true
			case c == '"':
				a.inStr = false
				if a.depth == 0 {
					a.keep(p[start : i+1])
					a.complete(emit)
					return i + 1
				}
			}
			continue
		}
		switch c {
		case '"':
			a.inStr = true
		case '{', '[':
			a.depth++
		case '}', ']':
			if a.depth == 0 {
				if c == '}' {
					continue // stray, in what is not JSON: kept in the element
				}
				// A scalar ended by the array's "]".
				a.keep(p[start:i])
				a.complete(emit)
				return i
			}
			a.depth--
			if a.depth == 0 {
				a.keep(p[start : i+1])
				a.complete(emit)
				return i + 1
			}
		case ',', ' ', '\t', '\r', '\n':
			if a.depth == 0 {
				a.keep(p[start:i])
				a.complete(emit)
				return i
			}
		}
	}
	a.keep(p[start:])
	return i
}

// complete emits the element read, and waits for the next.
func (a *JSONArray) complete(emit func([]byte)) {
	if !a.tooLarge && len(a.elem) > 0 {
		emit(a.elem)
	}
	a.state, a.elem, a.tooLarge = arrayBetween, a.elem[:0], false
}

// keep appends to the element (or the value), within MaxEventSize.
func (a *JSONArray) keep(p []byte) {
	if a.tooLarge || len(p) == 0 {
		return
	}
	if len(a.elem)+len(p) > MaxEventSize {
		a.tooLarge, a.elem = true, a.elem[:0]
		return
	}
	a.elem = append(a.elem, p...)
}

// End reads what is left at the end of the stream: an element the stream
// ended in (a scalar, or an answer cut short, which is emitted as it is:
// what the upstream sent may still be worth reading), or the one value of
// a stream that is not an array. The reader is then ready for a new
// stream.
func (a *JSONArray) End(emit func([]byte)) {
	switch a.state {
	case arrayElem, arrayValue:
		if !a.tooLarge && len(a.elem) > 0 {
			emit(trimSpace(a.elem))
		}
	}
	*a = JSONArray{elem: a.elem[:0]}
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
