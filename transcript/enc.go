package transcript

import (
	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// encoder appends compact JSON; err keeps the first error of a message
// that could not be encoded.
type encoder struct {
	buf []byte
	err error
}

// key writes the separator and a member's key: the key token as written
// when the member was read, else key quoted.
func (e *encoder) key(first *bool, m *rawjson.Member, key string) {
	if !*first {
		e.buf = append(e.buf, ',')
	}
	*first = false
	if m != nil && m.RawKey != nil {
		e.buf = append(e.buf, m.RawKey...)
	} else {
		e.buf = rawjson.AppendString(e.buf, key)
	}
	e.buf = append(e.buf, ':')
}

// raw writes a raw JSON value, compacted.
func (e *encoder) raw(v []byte) { e.buf = rawjson.AppendCompact(e.buf, v) }

// str writes a string.
func (e *encoder) str(s string) { e.buf = rawjson.AppendString(e.buf, s) }

// message writes m losslessly (agentctx.Message.AppendJSON).
func (e *encoder) message(m *agentctx.Message) {
	var err error
	e.buf, err = m.AppendJSON(e.buf)
	e.fail(err)
}

// inner writes m as its record held it, without the members the record
// added (agentctx.Message.AppendInnerJSON).
func (e *encoder) inner(m *agentctx.Message) {
	var err error
	e.buf, err = m.AppendInnerJSON(e.buf)
	e.fail(err)
}

func (e *encoder) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}
