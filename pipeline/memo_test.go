package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit/memtest"
	"github.com/agentctx/agentctx/tokens"
)

// TestStateCloneIsDeep fills every field of a state and checks that a
// clone encodes alike and shares nothing a call may change.
func TestStateCloneIsDeep(t *testing.T) {
	now := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	st := &state{Schema: 1, Requests: 3, Crossed: 9, RetryAt: 4, Counted: 7, Compactions: 1, Breaks: 2, Colds: 1, LastAt: now, CacheAt: now.Add(time.Minute), Intact: true,
		Length: 6, ForwardedGrowth: 2.5, Forwarded: 4, After: 5, SummaryTokens: 3, Removed: 2, ReadBacks: 1, Stale: 7, StaleGrowth: 0.5,
		Results:       map[string]*resultState{"a\x00h": {FirstSeen: now, Artifact: "x", Action: actionPruned, At: now, Content: "c", Chars: 5}},
		Compaction:    &compactionState{Head: 1, N: 4, Digest: "d", Summary: "s", Archive: "ar", At: now, Chars: 9},
		Usage:         &usageState{Tokens: 1, Counted: 2, Ratio: 1.5, N: 3, Cached: 2, Hit: 0.9, HitN: 3},
		Thinking:      (*ThinkingMemory)(nil).with([]ThinkingEntry{{Key: 1, Prefix: 2}}, []ThinkingEntry{{Key: 3, Prefix: 4}}),
		TerminalTools: []string{"my_shell"}, SavedPaths: []string{"/tmp/x/a.txt"}}
	// Every field set: a field added to state without clone knowing of
	// it shows up here as a zero value.
	v := reflect.ValueOf(*st)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("test state leaves %s unset", v.Type().Field(i).Name)
		}
	}
	c := st.clone()
	a, _ := json.Marshal(st)
	b, _ := json.Marshal(c)
	if string(a) != string(b) {
		t.Fatalf("clone encodes\n%s\nnot\n%s", b, a)
	}
	c.Results["a\x00h"].Action = "changed"
	c.Results["new"] = &resultState{}
	c.Compaction.N = 99
	c.Usage.N = 99
	if a2, _ := json.Marshal(st); string(a2) != string(a) {
		t.Fatal("changing the clone changed the original")
	}
}

func TestDigestMemoIsContentDigest(t *testing.T) {
	m := newDigestMemo()
	for _, text := range []string{"", "short", strings.Repeat("x", 255), strings.Repeat("y", 256), strings.Repeat("long result\n", 1000)} {
		want := "id\x00" + contentDigest(text)
		for range 2 { // computed, then remembered
			if got := m.resultKey("id", agentctx.Text(text)); got != want {
				t.Fatalf("%d bytes: %q, want %q", len(text), got, want)
			}
		}
	}
	// Same length, other content: another digest.
	a, b := strings.Repeat("a", 300), strings.Repeat("b", 300)
	if m.resultKey("id", agentctx.Text(a)) == m.resultKey("id", agentctx.Text(b)) {
		t.Fatal("two contents of one length share a key")
	}
	// The memo stays bounded.
	for i := range 2*maxDigests + 10 {
		m.resultKey("id", agentctx.Text(fmt.Sprintf("%0300d", i)))
	}
	if len(m.cur) > maxDigests || len(m.prev) > maxDigests {
		t.Fatalf("memo holds %d + %d digests", len(m.cur), len(m.prev))
	}
}

// TestResultKeyAllocatesOnce: a result's key is its one string, its
// digest the first 12 bytes of the content's SHA-256 in hex, as stored
// states hold it (four allocations a result, 50,000 results, and a copy
// of the text of every result of blocks; issue 24 item 7).
func TestResultKeyAllocatesOnce(t *testing.T) {
	m := newDigestMemo()
	text := "ok 12 files changed"
	sum := sha256.Sum256([]byte(text))
	if got, want := m.resultKey("toolu_01", agentctx.Text(text)), "toolu_01\x00"+hex.EncodeToString(sum[:12]); got != want {
		t.Fatalf("key %q, want %q", got, want)
	}
	long := strings.Repeat("line of output\n", 400)
	lsum := sha256.Sum256([]byte(long))
	if got := contentDigest(long); got != hex.EncodeToString(lsum[:12]) {
		t.Errorf("contentDigest of %d bytes = %s", len(long), got)
	}
	c := agentctx.Text(text)
	if n := testing.AllocsPerRun(100, func() { m.resultKey("toolu_01", c) }); n > 1 {
		t.Errorf("a short result's key allocates %.0f times", n)
	}
	// A result of blocks is keyed by their text (AsText), written into a
	// pooled buffer rather than a string of its own, short or long.
	for _, text := range []string{"ok", long} {
		blocks := agentctx.BlockList(agentctx.TextBlock(text), agentctx.TextBlock("exit 0"))
		if got, want := m.resultKey("toolu_02", blocks), "toolu_02\x00"+contentDigest(blocks.AsText()); got != want {
			t.Fatalf("blocks key %q, want %q", got, want)
		}
		if n := testing.AllocsPerRun(100, func() { m.resultKey("toolu_02", blocks) }); n > 1 && !raceEnabled {
			t.Errorf("the key of a result of %d-byte blocks allocates %.0f times", len(text), n)
		}
	}
}

// TestCountFactsIsCount counts lists that share messages in every way the
// steps make them (replaced in place, a run summarized, messages added or
// dropped) and checks each sum against a fresh count.
func TestCountFactsIsCount(t *testing.T) {
	mc := tokens.NewMessageCounter(tokens.MessageOptions{})
	p := &Pipeline{mc: mc}
	c := &call{p: p, counts: carry[agentctx.Hash, int](nil, 1024, 0)}
	var base []agentctx.Message
	for i := range 40 {
		base = append(base, agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(fmt.Sprintf("message %d %s", i, strings.Repeat("w ", i*20)))))
	}
	replaced := append([]agentctx.Message(nil), base...)
	replaced[5] = agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("[pruned]"))
	replaced[6] = agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("[pruned too]"))
	summarized := append([]agentctx.Message{base[0], agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("summary"))}, base[20:]...)
	grown := append(append([]agentctx.Message(nil), base...), agentctx.NewMessage(agentctx.RoleAssistant, agentctx.Text("new")))
	for i, list := range [][]agentctx.Message{base, base, replaced, summarized, grown, base[:10], nil, base[30:], replaced} {
		if got, want := c.countFacts(list, make([]agentctx.Facts, len(list))), mc.Count(list); got != want {
			t.Fatalf("list %d: countFacts %d, Count %d", i, got, want)
		}
	}
}

func TestPrefixDigestMemo(t *testing.T) {
	p := &Pipeline{}
	var msgs []agentctx.Message
	for i := range 20 {
		m, _ := agentctx.DecodeMessage([]byte(fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":"m%d"}]}`, i)))
		msgs = append(msgs, m)
	}
	facts := func(msgs []agentctx.Message) []agentctx.Facts {
		conv, err := agentctx.NewConversation(msgs)
		if err != nil {
			t.Fatal(err)
		}
		return conv.Facts
	}
	want, _ := digestOf(msgs)
	for range 2 {
		if got, ok := p.prefixDigest(msgs, facts(msgs)); !ok || got != want {
			t.Fatal("memo digest differs from digestOf")
		}
	}
	// The same content decoded apart, then one message changed: computed
	// again, right both times.
	other := append([]agentctx.Message(nil), msgs...)
	other[7], _ = agentctx.DecodeMessage([]byte(`{"role":"user","content":[{"type":"text","text":"m7"}]}`))
	if got, _ := p.prefixDigest(other, facts(other)); got != want {
		t.Fatal("equal prefix decoded apart: another digest")
	}
	other[7] = other[7].WithContent(agentctx.Text("changed"))
	changed, _ := digestOf(other)
	if got, _ := p.prefixDigest(other, facts(other)); got != changed || got == want {
		t.Fatal("a changed prefix kept the old digest")
	}
	if got, _ := p.prefixDigest(msgs[:19], facts(msgs[:19])); got == want {
		t.Fatal("a shorter prefix kept the digest")
	}
}

// TestCountMemoAcrossCalls changes the caller's slice in place between
// calls: the count must follow the new message, not the remembered one.
func TestCountMemoAcrossCalls(t *testing.T) {
	p, err := New(Options{WorkspaceDir: t.TempDir(), NoCompact: true, NoPrune: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	msgs := []agentctx.Message{
		agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("hello there")),
		agentctx.NewMessage(agentctx.RoleAssistant, agentctx.Text("hi")),
		agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("short")),
	}
	for round := range 3 {
		res, err := p.Prepare(t.Context(), msgs)
		if err != nil {
			t.Fatal(err)
		}
		want := p.mc.Count(msgs) + res.Report.ReservedTokens
		if res.Report.TokensBefore != want {
			t.Fatalf("round %d: TokensBefore %d, want %d", round, res.Report.TokensBefore, want)
		}
		msgs[2] = agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(strings.Repeat("much longer now ", round+2)))
	}
}

// A carried memo never changes the map it was given (other calls read
// it), hands it on as it is when nothing was added, and, past its bound,
// hands on only the entries the call used.
func TestCarriedMemo(t *testing.T) {
	last := map[string]int{"a": 1, "b": 2, "c": 3}
	c := carry(last, 10, 0)
	if v, ok := c.get("b"); !ok || v != 2 {
		t.Fatalf("get b = %d, %v", v, ok)
	}
	if got := c.result(); len(got) != 3 || fmt.Sprintf("%p", got) != fmt.Sprintf("%p", last) {
		t.Fatal("nothing added: the same map is not handed on")
	}
	c.put("d", 4)
	if len(last) != 3 {
		t.Fatal("put changed the last call's map")
	}
	if v, ok := c.get("d"); !ok || v != 4 {
		t.Fatalf("get d = %d, %v", v, ok)
	}
	if got := c.result(); len(got) != 4 || got["a"] != 1 {
		t.Fatalf("handed on %v", got)
	}
	// Past the bound: only what the call used goes on.
	c = carry(last, 2, 0)
	c.get("a")
	c.get("zz")
	c.put("e", 5)
	if got := c.result(); len(got) != 2 || got["a"] != 1 || got["e"] != 5 {
		t.Fatalf("past the bound, handed on %v", got)
	}
	if len(last) != 3 {
		t.Fatal("the last call's map changed")
	}
}

// TestCountFactsMissesOnce holds what counting a first request's 20,000
// messages allocates beside the counts it keeps: the list of the messages
// it must count, grown by append, was four times its size (3.9 MB of
// 100,000 messages; issue 24, item 7): 85 bytes a message, 60 now.
func TestCountFactsMissesOnce(t *testing.T) {
	const n = 20_000
	msgs := make([]agentctx.Message, n)
	facts := make([]agentctx.Facts, n)
	for i := range msgs {
		msgs[i] = agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(fmt.Sprint("message ", i)))
		facts[i].Hash = agentctx.Hash{uint64(i + 1), 1}
	}
	mc := tokens.NewMessageCounter(tokens.MessageOptions{})
	p := &Pipeline{mc: mc}
	want := mc.Count(msgs) // the counter's own memo warm: not what is measured
	c := &call{p: p, counts: carry[agentctx.Hash, int](nil, 4*n, n)}
	var got int
	bytes := memtest.AllocatedBy(func() { got = c.countFacts(msgs, facts) })
	if got != want {
		t.Fatalf("countFacts %d, Count %d", got, want)
	}
	t.Logf("%d bytes for %d messages (%.1f each)", bytes, n, float64(bytes)/n)
	if bytes > 70*n {
		t.Errorf("countFacts allocated %d bytes for %d messages, want at most %d", bytes, n, 70*n)
	}
}
