package wire

import "bytes"

// MaxEventSize caps the data of one event an SSE reader keeps (32 MiB): an
// event whose data is larger is passed over whole, the stream's later
// events still read.
const MaxEventSize = 32 << 20

// Event is one event of a Server-Sent Events stream.
type Event struct {
	// Name is the value of its "event" field, "" when it has none.
	Name string
	// Data is the value of its "data" fields, joined by "\n". It is the
	// reader's memory: valid only until the callback returns.
	Data []byte
}

// SSE reads a Server-Sent Events stream (the WHATWG event-stream format)
// incrementally: Feed it the stream's bytes as they come, split anywhere,
// and End it when the stream ends. Lines end with LF, CRLF or CR; lines
// starting with ":" are comments; a field without a colon has an empty
// value; one space after the colon is dropped; an event is dispatched at
// the empty line that ends it, when it has data. The "id" and "retry"
// fields are ignored. The zero value is ready.
type SSE struct {
	line     []byte // the start of a line the last chunk did not end
	lineLong bool   // the line being read is over MaxEventSize: passed over
	cr       bool   // the last chunk ended with CR: an LF first in the next ends nothing
	started  bool   // a line was read (a leading byte order mark is dropped)
	data     []byte // the event's data so far, each line followed by LF
	hasData  bool
	tooLarge bool // the event's data is over MaxEventSize: passed over
	name     string
	names    []string // the event names seen, reused
}

var bom = []byte("\xef\xbb\xbf")

// Feed reads a chunk of the stream and calls emit with each event it
// completes.
func (s *SSE) Feed(p []byte, emit func(Event)) {
	if len(p) == 0 {
		return
	}
	if s.cr && p[0] == '\n' {
		p = p[1:]
	}
	s.cr = false
	for len(p) > 0 {
		i := lineEnd(p)
		if i < 0 {
			s.keep(p)
			return
		}
		end := i + 1
		if p[i] == '\r' {
			if i+1 < len(p) {
				if p[i+1] == '\n' {
					end++
				}
			} else {
				s.cr = true
			}
		}
		if len(s.line) > 0 || s.lineLong {
			s.keep(p[:i])
			s.field(s.line, emit)
			s.line, s.lineLong = s.line[:0], false
		} else {
			s.field(p[:i], emit)
		}
		p = p[end:]
	}
}

// lineEnd returns the index of the first CR or LF in p, or -1.
// (bytes.IndexAny scans byte by byte; IndexByte is vectorized.)
func lineEnd(p []byte) int {
	i := bytes.IndexByte(p, '\n')
	if i < 0 {
		return bytes.IndexByte(p, '\r')
	}
	if j := bytes.IndexByte(p[:i], '\r'); j >= 0 {
		return j
	}
	return i
}

// End reads what is left at the end of the stream: an unterminated last
// line, and an event its empty line did not end, are dispatched (the
// format would drop them; an upstream cut short may still have said
// something worth reading). The reader is then ready for a new stream.
func (s *SSE) End(emit func(Event)) {
	if len(s.line) > 0 || s.lineLong {
		s.field(s.line, emit)
		s.line, s.lineLong = s.line[:0], false
	}
	s.field(nil, emit)
	s.cr, s.started = false, false
}

// keep appends to the pending line, within MaxEventSize.
func (s *SSE) keep(p []byte) {
	if s.lineLong || len(s.line)+len(p) > MaxEventSize+len("data: ") {
		s.lineLong, s.line = true, s.line[:0]
		return
	}
	s.line = append(s.line, p...)
}

// field reads one line; an empty one dispatches the event.
func (s *SSE) field(line []byte, emit func(Event)) {
	if !s.started {
		s.started = true
		line = bytes.TrimPrefix(line, bom)
	}
	if s.lineLong {
		// A line over the limit (whatever its field) loses its event.
		s.tooLarge = true
		return
	}
	if len(line) == 0 {
		if s.hasData && !s.tooLarge {
			emit(Event{Name: s.name, Data: s.data[:len(s.data)-1]})
		}
		s.data, s.hasData, s.tooLarge, s.name = s.data[:0], false, false, ""
		return
	}
	if line[0] == ':' {
		return
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		s.hasData = true
		if s.tooLarge || len(s.data)+len(value) >= MaxEventSize {
			s.tooLarge = true
			return
		}
		s.data = append(append(s.data, value...), '\n')
	case "event":
		s.name = s.intern(value)
	}
}

// intern returns value as a string, without allocating for the few names
// a stream repeats.
func (s *SSE) intern(value []byte) string {
	for _, n := range s.names {
		if n == string(value) {
			return n
		}
	}
	n := string(value)
	if len(s.names) < 16 {
		s.names = append(s.names, n)
	}
	return n
}
