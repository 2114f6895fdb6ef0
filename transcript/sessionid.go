package transcript

import (
	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// SessionID returns the session id a document read from a Claude Code
// transcript carries (the sessionId of its records, which Claude Code also
// sends as the X-Claude-Code-Session-Id header, the key agentctx proxy
// keeps the session and its ledger entries under), or "" for a document of
// another format or whose records carry none. The id of the first record
// that has one is returned.
func SessionID(doc *agentctx.Document) string {
	for _, d := range doc.Conversations() {
		cc, ok := d.Writer().(*ccFile)
		if !ok {
			continue
		}
		for _, env := range cc.env {
			if mb := findMember(env, "sessionId"); mb != nil && rawjson.Kind(mb.Value) == '"' {
				if id := rawjson.Unquote(mb.Value); id != "" {
					return id
				}
			}
		}
	}
	return ""
}
