package thinking

import "testing"

// TestPrefixSameInEveryProcess: a prefix chained from message digests is a
// fixed function of the messages (no per-process seed), so that replicas
// may store and compare it. The constant was computed once; any change of
// Next or MessageDigest changes it, and the prefixes stored in session
// states with it.
func TestPrefixSameInEveryProcess(t *testing.T) {
	var h Prefix
	for _, m := range []string{`{"role":"user","content":[{"type":"text","text":"hi"}]}`, `{"role":"assistant","content":[{"type":"text","text":"hello"}]}`} {
		h = h.Next(MessageDigest([]byte(m)))
	}
	if h != 0xe62c00ad90964505 {
		t.Errorf("prefix %#x", uint64(h))
	}
	if k := KeyDigest("sig"); k == 0 || k != KeyDigest("sig") || k == KeyDigest("sih") {
		t.Errorf("KeyDigest: %#x", k)
	}
}
