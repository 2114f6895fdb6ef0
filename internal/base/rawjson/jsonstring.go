package rawjson

import "unsafe"

// TextOfString returns the text that s encodes when s is exactly one JSON
// string token (quotes included, nothing around it) that AppendString
// writes back byte for byte, as JavaScript's JSON.stringify wrote it: the
// form of a tool result an agent sent JSON-encoded (Cline's). ok is false
// for anything else, so that the text always gives s back.
func TextOfString(s string) (text string, ok bool) {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return "", false
	}
	b := unsafe.Slice(unsafe.StringData(s), len(s)) // read only
	if end, err := stringEnd(b, 0); err != nil || end != len(b) {
		return "", false
	}
	text = Unquote(b)
	if !IsString(b, text) {
		return "", false
	}
	return text, true
}
