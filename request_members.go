package agentctx

import "encoding/json"

// Member returns the raw JSON of a top-level member of the document's
// object (a request body's "tools", "model", ...), and whether it has one.
// The bytes are the document's own; callers must not modify them.
func (d *Document) Member(key string) (json.RawMessage, bool) {
	if m := findMember(d.members, key); m != nil {
		return json.RawMessage(m.raw), true
	}
	return nil, false
}
