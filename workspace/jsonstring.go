package workspace

import (
	"strings"

	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// KeyEncoding is the metadata key that says how a tool result's stored
// content differs from what was sent; EncodingJSONString: the result was
// one JSON string (Cline sends its results so), stored as the text it
// encodes, whose JSON string (as JavaScript's JSON.stringify writes it)
// is the result as sent (OriginalContent).
const (
	KeyEncoding        = "encoding"
	EncodingJSONString = "json_string"
	// EncodingJSONToken: the result was a string whose decoding is not
	// what was sent (a lone surrogate escape, \ud800, decodes to U+FFFD;
	// agentctx.SentString), stored as its JSON string token as sent,
	// escapes and all (SentJSON gives it back).
	EncodingJSONToken = "json_token"
)

// SentJSON returns the JSON of a tool result artifact's content as it was
// sent, byte for byte, for an artifact stored with EncodingJSONToken, and
// false for any other (OriginalContent gives those back).
func SentJSON(a *Artifact) ([]byte, bool) {
	if a.Metadata[KeyEncoding] != EncodingJSONToken {
		return nil, false
	}
	return []byte(a.Content), true
}

// storeDecoded returns the text a tool result's string stands for when it
// is stored decoded: s is one JSON string, written back byte for byte by
// rawjson.AppendString, whose text has more than one line; "" otherwise
// (s is stored as it is). A one-line string gains nothing from decoding:
// its lines would not page either.
func storeDecoded(s string) string {
	if len(s) < 2 || s[0] != '"' || !strings.Contains(s, `\n`) {
		return "" // the cheap checks first: every stored string comes here
	}
	text, ok := rawjson.TextOfString(s)
	if !ok || !strings.Contains(text, "\n") {
		return ""
	}
	return text
}
