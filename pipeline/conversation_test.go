package pipeline_test

import (
	"bytes"
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/tokens"
)

// countingCounter counts the bytes it tokenizes.
type countingCounter struct {
	bytes atomic.Int64
	inner tokens.Counter
}

func (c *countingCounter) Count(s string) int {
	c.bytes.Add(int64(len(s)))
	return c.inner.Count(s)
}

// redecode returns msgs encoded and decoded again: equal messages that
// share no memory with msgs.
func redecode(t testing.TB, msgs []agentctx.Message) []agentctx.Message {
	t.Helper()
	data, err := agentctx.MarshalMessages(msgs)
	if err != nil {
		t.Fatal(err)
	}
	out, err := agentctx.UnmarshalMessages(data)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRedecodedHistoryIsWarm: a caller that decodes its history again for
// every request (the SDK middleware, a CLI run per request) keeps the
// memos: the second call of a session counts no message again, and the
// prefix is not hashed again. The memos used to hit only for the very
// same message values.
func TestRedecodedHistoryIsWarm(t *testing.T) {
	rec := &countingCounter{inner: tokens.O200kBase()}
	p, err := pipeline.New(pipeline.Options{Stateless: true, NoPrune: true, NoCompact: true, Offload: pipeline.OffloadNone,
		MessageCounter: tokens.NewMessageCounter(tokens.MessageOptions{Counter: rec, CacheSize: -1})})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	msgs := benchHistory(20)
	first, err := p.Prepare(t.Context(), redecode(t, msgs))
	if err != nil {
		t.Fatal(err)
	}
	before := rec.bytes.Load()
	if before == 0 {
		t.Fatal("the first call counted nothing")
	}
	for _, in := range [][]agentctx.Message{redecode(t, msgs), append([]agentctx.Message(nil), msgs...), cloned(msgs)} {
		res, err := p.Prepare(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		if res.Report.TokensBefore != first.Report.TokensBefore || res.Report.TokensAfter != first.Report.TokensAfter {
			t.Fatalf("tokens %d → %d, first call %d → %d", res.Report.TokensBefore, res.Report.TokensAfter, first.Report.TokensBefore, first.Report.TokensAfter)
		}
	}
	if again := rec.bytes.Load() - before; again != 0 {
		t.Fatalf("equal messages decoded again: %d bytes tokenized again, want 0", again)
	}
}

func cloned(msgs []agentctx.Message) []agentctx.Message {
	out := make([]agentctx.Message, len(msgs))
	for i, m := range msgs {
		out[i] = m.Clone()
	}
	return out
}

// TestRedecodedSession runs two sessions on one growing history with
// every step on (store, prune, offload, a compaction reused): one handed
// the same message values on every call, one the history decoded again
// each time. Both send the same bytes and report the same counts, and the
// result's Sources and Facts describe its messages.
func TestRedecodedSession(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string) *pipeline.Pipeline {
		p, err := pipeline.New(pipeline.Options{WorkspaceDir: filepath.Join(dir, name),
			Compact: compact.Options{Limit: 8_000, Dir: filepath.Join(dir, name, "archive")}, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	same, fresh := mk("one"), mk("two")
	all := benchHistory(40)
	compacted := false
	// Up to a second compaction, whose archive would hold the first
	// summary's paths, which differ by session.
	for n := 41; n <= 89; n += 6 {
		msgs := all[:n]
		a, err := same.Prepare(context.Background(), msgs)
		if err != nil {
			t.Fatal(err)
		}
		in := redecode(t, msgs)
		b, err := fresh.Prepare(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if compacted && b.Report.Step(pipeline.StepCompact).Compact.Compacted {
			break // a second compaction: its archive holds the first summary's paths
		}
		ea, _ := agentctx.MarshalMessages(a.Messages)
		eb, _ := agentctx.MarshalMessages(b.Messages)
		ea = bytes.ReplaceAll(ea, []byte(filepath.Join(dir, "one")), []byte(filepath.Join(dir, "two"))) // the summary's pointers
		if !bytes.Equal(ea, eb) || a.Report.TokensBefore != b.Report.TokensBefore || a.Report.TokensAfter != b.Report.TokensAfter {
			t.Fatalf("%d messages: the re-decoded session differs (%d → %d, same values %d → %d)", n, b.Report.TokensBefore, b.Report.TokensAfter, a.Report.TokensBefore, a.Report.TokensAfter)
		}
		compacted = compacted || b.Report.Step(pipeline.StepCompact).Compact.Reused > 0
		checkSources(t, same.MessageCounter(), msgs, a)
		checkSources(t, fresh.MessageCounter(), in, b)
	}
	if !compacted {
		t.Fatal("no compaction reused: the test does not cover it")
	}
}

// checkSources checks res.Sources and res.Facts against the messages: a
// kept message encodes as its input, in order; a changed one as none at
// its place; every hash and count is the message's own.
func checkSources(t *testing.T, mc *tokens.MessageCounter, in []agentctx.Message, res *pipeline.Result) {
	t.Helper()
	if len(res.Sources) != len(res.Messages) || len(res.Facts) != len(res.Messages) {
		t.Fatalf("%d sources, %d facts for %d messages", len(res.Sources), len(res.Facts), len(res.Messages))
	}
	last, changed := -1, 0
	for j, m := range res.Messages {
		enc, _ := m.AppendJSON(nil)
		f := res.Facts[j]
		if f.Hash != agentctx.HashEncoding(enc) || f.Tokens != mc.CountMessage(m) || f.Encoding != nil && !bytes.Equal(f.Encoding, enc) {
			t.Fatalf("message %d: facts %v/%d do not describe it", j, f.Hash, f.Tokens)
		}
		k := res.Sources[j]
		if k < 0 {
			changed++
			continue
		}
		if k <= last || k >= len(in) {
			t.Fatalf("sources out of order: %v", res.Sources)
		}
		last = k
		if want, _ := in[k].AppendJSON(nil); !bytes.Equal(enc, want) {
			t.Fatalf("message %d is said to be input message %d, unchanged, but encodes otherwise", j, k)
		}
	}
	if changed == 0 {
		t.Fatal("no message changed: the test does not cover the steps")
	}
}

// TestOwnFactsFillsInPlace: under CallOptions.OwnFacts the call fills the
// Facts it is given in place and hands them back (the proxy's, made for
// the request alone, are not copied: 4.8 MB for a request of 100,000
// messages); without it the Facts given are never modified. Both give the
// same messages and facts.
func TestOwnFactsFillsInPlace(t *testing.T) {
	at := now.Add(-time.Minute)
	hist := history(user("look", at), exchange("t1", "Bash", "ls", "a\nb", false, at), exchange("t2", "Read", "x.go", "package x", false, at))
	var out [2]*pipeline.Result
	for k, own := range []bool{false, true} {
		p := newPipeline(t, options(t))
		conv, err := agentctx.NewConversation(hist)
		if err != nil {
			t.Fatal(err)
		}
		for i := range conv.Facts {
			conv.Facts[i].Tokens = 99_999 // another counter's: left out either way
		}
		given := append([]agentctx.Facts(nil), conv.Facts...)
		res, err := p.PrepareConversation(context.Background(), conv, 0, pipeline.CallOptions{OwnFacts: own})
		if err != nil {
			t.Fatal(err)
		}
		shared := len(res.Facts) > 0 && &res.Facts[0] == &conv.Facts[0]
		if own != shared {
			t.Errorf("OwnFacts %v: the result's facts are the given ones: %v", own, shared)
		}
		if !own {
			for i := range given {
				if conv.Facts[i].Tokens != given[i].Tokens || conv.Facts[i].Hash != given[i].Hash || !bytes.Equal(conv.Facts[i].Encoding, given[i].Encoding) {
					t.Fatalf("the facts given were modified at %d", i)
				}
			}
		}
		for i, f := range res.Facts {
			if f.Tokens == 99_999 || f.Tokens <= 0 {
				t.Errorf("OwnFacts %v: message %d counted %d", own, i, f.Tokens)
			}
		}
		out[k] = res
	}
	a, _ := agentctx.MarshalMessages(out[0].Messages)
	b, _ := agentctx.MarshalMessages(out[1].Messages)
	if !bytes.Equal(a, b) || out[0].Report.TokensAfter != out[1].Report.TokensAfter {
		t.Error("OwnFacts changed what is prepared")
	}
	for i := range out[0].Facts {
		if out[0].Facts[i].Tokens != out[1].Facts[i].Tokens || out[0].Facts[i].Hash != out[1].Facts[i].Hash {
			t.Errorf("OwnFacts changed the facts of message %d", i)
		}
	}
}
