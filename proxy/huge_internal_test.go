package proxy

import (
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/lib/thinking"
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

// TestCompactlyWrittenMessagesKeepNoMore holds what the decode cache keeps
// of each message written compactly (as clients write them) besides the
// message itself to its facts: a request of 100,000 small messages kept
// 88 bytes (a 96-byte allocation) of each for an encoding, a Responses
// item and its group that such a message never has (issue 24, item 7).
// The rest lives in decodedMore, allocated only when there is one.
func TestCompactlyWrittenMessagesKeepNoMore(t *testing.T) {
	c := newDecodeCache(1 << 20)
	for _, raw := range []string{
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}`,
		`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}`,
		`{"role":"user","content":"hi"}`,
	} {
		d, _, _, err := decodeMsg(c, new(agentctx.OwnedDecoder), []byte(raw), nil)
		if err != nil {
			t.Fatal(err)
		}
		if d.more != nil {
			t.Errorf("%s: keeps more than its facts", raw)
		}
		if got := string(d.encoding([]byte(raw))); got != raw {
			t.Errorf("%s: its encoding is %s", raw, got)
		}
	}
	if decodedMsgBytes > 56 {
		t.Errorf("a decoded message's facts take %d bytes, want at most 56", decodedMsgBytes)
	}
	// Written with spaces, its encoding is its own, and kept.
	raw := []byte(`{ "role": "user", "content": "hi" }`)
	d, _, _, err := decodeMsg(c, new(agentctx.OwnedDecoder), raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.more == nil || string(d.encoding(raw)) != `{"role":"user","content":"hi"}` {
		t.Errorf("a message written with spaces: encoding %q", d.encoding(raw))
	}
}

// TestHashStrippedMakesNoGarbage holds hashing a message with a string
// content (the form hashStripped rewrites) to no allocation once warm: a
// request of 100,000 small tool results allocated 8.3 MB of hashers
// (issue 24, item 7).
func TestHashStrippedMakesNoGarbage(t *testing.T) {
	raw := []byte(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok 1"}]}`)
	want := hash64(appendStripped(nil, raw, true))
	if n := testing.AllocsPerRun(100, func() {
		if hashStripped(raw) != want {
			t.Fatal("hashStripped changed its hash")
		}
	}); n > 0 && !raceEnabled {
		t.Errorf("hashStripped allocates %.0f times per message", n)
	}
}

// TestStableDigestMakesNoGarbage: the digest a signed thinking block's
// prefix is kept by is that of the message's stripped form, hashed as it
// is read: a coding agent's turns (a string content, a breakpoint) wrote
// a copy each, 10 MB for a 10 MB request (issue 24, item 7).
func TestStableDigestMakesNoGarbage(t *testing.T) {
	for _, raw := range [][]byte{
		[]byte(`{"role":"user","content":"fix the failing test, then run it again"}`),
		[]byte(`{"role":"user","content":[{"type":"text","text":"go on","cache_control":{"type":"ephemeral"}}]}`),
		[]byte(`{"role":"assistant","content":[{"type":"text","text":"done"}]}`),
		[]byte(`{"role":"user","content":"` + strings.Repeat(`line of a file read back\n`, 10_000) + `"}`), // past any pooled buffer
	} {
		want := thinking.MessageDigest(canonical(raw))
		if got := stableDigest(raw); got != want {
			t.Fatalf("%.40s… (%d bytes): digest %x, want %x", raw, len(raw), got, want)
		}
		if n := testing.AllocsPerRun(100, func() { stableDigest(raw) }); n > 0 && !raceEnabled {
			t.Errorf("%.40s… (%d bytes): stableDigest allocates %.0f times", raw, len(raw), n)
		}
	}
}
