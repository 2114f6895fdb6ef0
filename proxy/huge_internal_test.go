package proxy

import (
	"strings"
	"testing"
)

// TestHashStrippedIsHashOfStripped holds the streamed hash to the hash of
// the stripped form written out, on messages with and without breakpoints,
// string contents, nested blocks, odd spacing and invalid JSON.
func TestHashStrippedIsHashOfStripped(t *testing.T) {
	for _, raw := range []string{
		`{"role":"user","content":"hi"}`,
		`{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a\nb \"q\"","cache_control":{"type":"ephemeral"}}]}`,
		`{ "role" : "assistant", "content" : [ { "type" : "tool_use", "id" : "t1", "name" : "Bash", "input" : { "command" : "ls", "n" : 1e3 } } ] }`,
		`{"role":"user","content":[{"type":"text","text":"x"}],"extra":[1, 2, {"cache_control":null}, "s", true, null]}`,
		`{"role":"user","content":"` + strings.Repeat("long line\\n", 20000) + `"}`,
		`{"role":"user","content":[1,2`,
		`"just a string"`,
		`[ 1 , "a" ]`,
		``,
	} {
		if got, want := hashStripped([]byte(raw)), hash64(appendStripped(nil, []byte(raw), true)); got != want {
			t.Errorf("hashStripped(%.80s) = %x, want %x", raw, got, want)
		}
		if msgHash([]byte(raw)) != hash64(canonical([]byte(raw))) {
			t.Errorf("msgHash(%.80s) is not the hash of its canonical form", raw)
		}
	}
}
