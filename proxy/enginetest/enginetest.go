// Package enginetest is a conformance suite for proxy.Engine: the rules
// every Engine must satisfy whatever it decides about a conversation, run
// on scripted sessions of each API the proxy edits (Anthropic Messages,
// OpenAI Chat Completions, OpenAI Responses).
//
// An Engine's test calls Run with a constructor of fresh Engines,
// configured so that the scripted sessions (a task of about Turns tool
// calls with results of ResultChars characters each) get edited:
//
//	func TestConformance(t *testing.T) {
//		enginetest.Run(t, enginetest.Options{New: func(t *testing.T, dir string) proxy.Engine { ... }, ExpectEdits: true})
//	}
//
// The rules (per API; the Session subtest checks Pairing, LastTurn,
// Unchanged, Sources, RequestKept and Flags on every request of a scripted
// session, and Edits; the other subtests check those on every request they
// send besides their own rule):
//
//   - Pairing: every prepared list pairs each tool call with its result
//     (agentctx.ValidatePairing finds no issue) when the request did.
//   - LastTurn: the open turn survives: the last message keeps its role, its
//     text and the ids of its tool results, and every call of the last
//     assistant message is still sent.
//   - Unchanged: a Prepared that claims Unchanged returns the request's own
//     messages, encoded byte for byte as received; and the counts are set
//     (TokensBefore > 0; TokensAfter == TokensBefore when unchanged).
//   - Sources: when a Prepared says which messages it kept (Sources, not
//     nil), it is true: one source per message; each one not negative
//     names the request's message (in Document.Messages) that the
//     prepared message encodes as, byte for byte (Message.AppendJSON),
//     and they increase; -1 (changed or added) is always true. When it
//     says what it knows of them (Facts, not nil), there is one per
//     message, and an Encoding or a Hash there is the message's.
//   - RequestKept: Prepare does not modify the request (its Document,
//     Header).
//   - Idempotent: preparing the same request twice gives the same list
//     byte for byte, and the second time claims no prefix change.
//   - Sticky: what was sent for a request is sent again, byte for byte, as
//     the prefix of the next request (the client echoes its history back),
//     unless that Prepare says it changed the prefix (PrefixChanged) or
//     compacted.
//   - Flags: Compacted implies PrefixChanged; Pruned or Offloaded > 0, or
//     Compacted, implies not Unchanged.
//   - Retry: requests of a session sent out of order (a second client
//     ahead of the first, or behind it: a retry, a regenerate) keep the
//     rules above.
//   - BehindCompaction: once a request compacted, a retry of an earlier
//     request of the session (a client that retries after a timeout) and a
//     retry of the compacting request itself are prepared without error
//     and keep the rules above.
//   - EditedHistory: a client that edits an earlier message (the text of
//     its first request) is prepared without error and keeps the rules.
//   - Sessions: sessions do not leak into each other: a session prepared
//     among others gets what it gets alone on a fresh Engine.
//   - Concurrent: the same request of a session sent by two clients at
//     once, for each request of three sessions side by side, all succeed
//     and keep the rules (run with -race).
//   - Canceled: Prepare with a canceled context returns promptly; an
//     error (on which the proxy forwards the original request) leaves the
//     session usable: the next Prepare succeeds and keeps the rules.
//   - Observe: Observe of a known or unknown session returns promptly and
//     the session stays usable.
//   - Edits (when Options.ExpectEdits): the scripted session is edited at
//     least once, so the rules are not checked on forwarding alone.
package enginetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/pricing"
	"github.com/agentctx/agentctx/proxy"
)

// Defaults of Options.
const (
	DefaultTurns       = 12
	DefaultResultChars = 3000
)

// Options configure Run. The zero value of every field but New means the
// documented default.
type Options struct {
	// New returns a fresh Engine that keeps its files (workspace, session
	// state, archives), if any, under dir, an empty directory. Run closes
	// it (proxy.Closer) when the subtest ends. Two Engines given the same
	// dir must send the same bytes for the same requests (the Sessions
	// rule runs a session on one, removes dir, and runs it again on the
	// other).
	New func(t *testing.T, dir string) proxy.Engine
	// APIs are the wire formats to run; nil means all three.
	APIs []proxy.API
	// Turns is the number of tool calls of a scripted session
	// (DefaultTurns), ResultChars the size of each result
	// (DefaultResultChars).
	Turns       int
	ResultChars int
	// ExpectEdits requires the Engine to change at least one request of
	// the scripted session (prune, offload or compact).
	ExpectEdits bool
	// Known names rules the Engine is known to break, each with the
	// reason (an open issue): they are skipped with it, so the suite
	// passes while the issue is open and the skip says what is left.
	Known map[string]string
	// Timeout bounds what must return promptly (a canceled Prepare,
	// Observe); 0 means 10 s.
	Timeout time.Duration
}

func (o Options) withDefaults() Options {
	if len(o.APIs) == 0 {
		o.APIs = []proxy.API{proxy.APIAnthropic, proxy.APIChat, proxy.APIResponses}
	}
	if o.Turns <= 0 {
		o.Turns = DefaultTurns
	}
	if o.ResultChars <= 0 {
		o.ResultChars = DefaultResultChars
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	return o
}

// Run runs every rule against Engines made by o.New, the APIs in
// parallel subtests.
func Run(t *testing.T, o Options) {
	t.Helper()
	if o.New == nil {
		t.Fatal("enginetest: Options.New is nil")
	}
	o = o.withDefaults()
	for _, api := range o.APIs {
		t.Run(string(api), func(t *testing.T) {
			t.Parallel()
			s := &suite{o: o, api: api}
			rules := []struct {
				name string
				run  func(*testing.T)
			}{
				{"Session", s.session}, // Pairing, LastTurn, Unchanged, Sources, RequestKept, Flags, Edits
				{"Idempotent", s.idempotent},
				{"Sticky", s.sticky},
				{"Retry", s.retry},
				{"BehindCompaction", s.behind},
				{"EditedHistory", s.edited},
				{"Sessions", s.sessions},
				{"Concurrent", s.concurrent},
				{"Canceled", s.canceled},
				{"Observe", s.observe},
			}
			for _, r := range rules {
				t.Run(r.name, func(t *testing.T) {
					if why, ok := o.Known[r.name]; ok {
						t.Skipf("known to fail: %s", why)
					}
					r.run(t)
				})
			}
		})
	}
}

type suite struct {
	o   Options
	api proxy.API
}

func (s *suite) engine(t *testing.T) proxy.Engine {
	t.Helper()
	e, _ := s.engineIn(t, t.TempDir())
	return e
}

// engineIn returns an Engine over dir and a function that closes it.
func (s *suite) engineIn(t *testing.T, dir string) (proxy.Engine, func()) {
	t.Helper()
	e := s.o.New(t, dir)
	var once sync.Once
	closeIt := func() {
		once.Do(func() {
			if c, ok := e.(proxy.Closer); ok {
				if err := c.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}
		})
	}
	t.Cleanup(closeIt)
	return e, closeIt
}

// prepare prepares r on e and checks every per-request rule.
func (s *suite) prepare(t *testing.T, e proxy.Engine, r *Req) *proxy.Prepared {
	t.Helper()
	return s.prepareCtx(t, t.Context(), e, r)
}

func (s *suite) prepareCtx(t *testing.T, ctx context.Context, e proxy.Engine, r *Req) *proxy.Prepared {
	t.Helper()
	req := r.Request()
	before := encodeAll(t, req.Document.Messages)
	header := req.Header.Clone()
	p, err := e.Prepare(ctx, req)
	if err != nil {
		t.Fatalf("%s: Prepare: %v", r.Name, err)
	}
	if p == nil {
		t.Fatalf("%s: Prepare returned neither a result nor an error", r.Name)
	}
	if after := encodeAll(t, req.Document.Messages); !equalLists(before, after) {
		t.Errorf("%s: Prepare modified the request's Document", r.Name)
	}
	if !equalHeader(header, req.Header) {
		t.Errorf("%s: Prepare modified the request's Header", r.Name)
	}
	s.check(t, r, p)
	return p
}

// check applies the rules of one prepared request.
func (s *suite) check(t *testing.T, r *Req, p *proxy.Prepared) {
	t.Helper()
	in := r.Messages
	out := p.Messages
	if rep := agentctx.ValidatePairing(in); rep.Err() == nil {
		if rep := agentctx.ValidatePairing(out); rep.Err() != nil {
			t.Errorf("%s: Pairing: the prepared list is unpaired: %v", r.Name, rep.Err())
		}
	}
	checkLastTurn(t, r.Name, in, out)
	a, b := encodeAll(t, in), encodeAll(t, out)
	checkSources(t, r.Name, a, b, p)
	if p.Unchanged && !equalLists(a, b) {
		i := firstDiff(a, b)
		x, y := around(at(a, i), at(b, i))
		t.Errorf("%s: Unchanged claimed, but message %d differs from the request's:\nrequest  %s\nprepared %s", r.Name, i, x, y)
	}
	if p.TokensBefore <= 0 {
		t.Errorf("%s: TokensBefore = %d, want a count", r.Name, p.TokensBefore)
	}
	if p.Unchanged && p.TokensAfter != p.TokensBefore {
		t.Errorf("%s: Unchanged but TokensAfter %d != TokensBefore %d", r.Name, p.TokensAfter, p.TokensBefore)
	}
	if p.Compacted && !p.PrefixChanged {
		t.Errorf("%s: Flags: Compacted without PrefixChanged", r.Name)
	}
	if (p.Pruned > 0 || p.Offloaded > 0 || p.Compacted) && p.Unchanged {
		t.Errorf("%s: Flags: Unchanged with edits (pruned %d, offloaded %d, compacted %v)", r.Name, p.Pruned, p.Offloaded, p.Compacted)
	}
}

// checkSources checks that what p says of its messages (Sources, Facts)
// is true, given the encodings of the request's messages (in) and of the
// prepared ones (out).
func checkSources(t *testing.T, name string, in, out [][]byte, p *proxy.Prepared) {
	t.Helper()
	if p.Sources != nil {
		if len(p.Sources) != len(out) {
			t.Errorf("%s: Sources: %d sources for %d messages", name, len(p.Sources), len(out))
		} else {
			last := -1
			for j, k := range p.Sources {
				switch {
				case k < 0:
					continue
				case k >= len(in):
					t.Errorf("%s: Sources: message %d is said to be request message %d of %d", name, j, k, len(in))
				case k <= last:
					t.Errorf("%s: Sources: message %d is said to be request message %d, after message %d was %d (out of order)", name, j, k, j-1, last)
				case !bytes.Equal(in[k], out[j]):
					x, y := around(in[k], out[j])
					t.Errorf("%s: Sources: message %d is said to be request message %d, unchanged, but encodes otherwise:\nrequest  %s\nprepared %s", name, j, k, x, y)
				}
				last = max(last, k)
			}
		}
	}
	if p.Facts != nil {
		if len(p.Facts) != len(out) {
			t.Errorf("%s: Facts: %d facts for %d messages", name, len(p.Facts), len(out))
			return
		}
		for j, f := range p.Facts {
			if f.Encoding != nil && !bytes.Equal(f.Encoding, out[j]) {
				x, y := around(f.Encoding, out[j])
				t.Errorf("%s: Facts: message %d's Encoding is not its encoding:\nfacts    %s\nprepared %s", name, j, x, y)
			}
			if !f.Hash.IsZero() && f.Hash != agentctx.HashEncoding(out[j]) {
				t.Errorf("%s: Facts: message %d's Hash %v is not its encoding's (%v)", name, j, f.Hash, agentctx.HashEncoding(out[j]))
			}
			if f.Tokens < 0 {
				t.Errorf("%s: Facts: message %d has %d tokens", name, j, f.Tokens)
			}
		}
	}
}

// checkLastTurn checks that the open turn survives in out.
func checkLastTurn(t *testing.T, name string, in, out []agentctx.Message) {
	t.Helper()
	if len(in) == 0 {
		return
	}
	if len(out) == 0 {
		t.Errorf("%s: LastTurn: the prepared list is empty", name)
		return
	}
	li, lo := in[len(in)-1], out[len(out)-1]
	if li.Role != lo.Role {
		t.Errorf("%s: LastTurn: last role %q, want %q", name, lo.Role, li.Role)
	}
	// The text the user wrote (a tool message's text is its result, which
	// an Engine may offload).
	if a, b := texts(li), texts(lo); li.Role != agentctx.RoleTool && a != b {
		t.Errorf("%s: LastTurn: last message's text changed:\n got %.200q\nwant %.200q", name, b, a)
	}
	if a, b := resultIDs(in[len(in)-1:]), resultIDs(out[len(out)-1:]); a != b {
		t.Errorf("%s: LastTurn: last message answers %q, want %q", name, b, a)
	}
	// The calls of the last assistant message (the pending pairs) are all
	// still sent.
	sent := map[string]bool{}
	for u := range agentctx.ToolUses(out) {
		sent[u.ID] = true
	}
	for i := len(in) - 1; i >= 0; i-- {
		if in[i].Role != "assistant" {
			continue
		}
		for u := range agentctx.ToolUses(in[i : i+1]) {
			if !sent[u.ID] {
				t.Errorf("%s: LastTurn: the pending call %s is not sent", name, u.ID)
			}
		}
		break
	}
}

func texts(m agentctx.Message) string {
	if m.Content.IsText() {
		return m.Content.Text()
	}
	var b strings.Builder
	for _, bl := range m.Content.Blocks() {
		if bl.Type == agentctx.BlockText || bl.Type == "input_text" {
			b.WriteString(bl.Text)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func resultIDs(msgs []agentctx.Message) string {
	var ids []string
	for r := range agentctx.ToolResults(msgs) {
		ids = append(ids, r.ID)
	}
	return strings.Join(ids, ",")
}

func encodeAll(t *testing.T, msgs []agentctx.Message) [][]byte {
	t.Helper()
	out := make([][]byte, len(msgs))
	for i, m := range msgs {
		b, err := m.AppendJSON(nil)
		if err != nil {
			t.Fatalf("encode message %d: %v", i, err)
		}
		out[i] = b
	}
	return out
}

func equalLists(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func equalHeader(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if strings.Join(v, "\x00") != strings.Join(b[k], "\x00") {
			return false
		}
	}
	return true
}

// firstDiff returns the index of the first message where a and b differ,
// or -1.
func firstDiff(a, b [][]byte) int {
	for i := range min(len(a), len(b)) {
		if !bytes.Equal(a[i], b[i]) {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// ---- rules over a whole session ----

// session walks the scripted session, request by request, each the
// previous one's history grown by one turn (the client's own history, as
// a client that does not see the proxy's edits sends it).
func (s *suite) session(t *testing.T) {
	e := s.engine(t)
	edited := false
	var pruned, offloaded, compacted, sourced, kept int
	for _, r := range Script(s.api, "conf-session", s.o.Turns, s.o.ResultChars) {
		p := s.prepare(t, e, r)
		if p.Sources != nil {
			sourced++
			for _, k := range p.Sources {
				if k >= 0 {
					kept++
				}
			}
		}
		if !p.Unchanged && firstDiff(encodeAll(t, r.Messages), encodeAll(t, p.Messages)) >= 0 {
			edited = true
		}
		pruned += p.Pruned
		offloaded += p.Offloaded
		if p.Compacted {
			compacted++
		}
	}
	t.Logf("pruned %d, offloaded %d, compactions %d; sources given for %d requests, %d messages said kept", pruned, offloaded, compacted, sourced, kept)
	if s.o.ExpectEdits && !edited {
		t.Errorf("Edits: no request of %d turns of %d-character results was edited: the Engine's options do not exercise it", s.o.Turns, s.o.ResultChars)
	}
}

func (s *suite) idempotent(t *testing.T) {
	e := s.engine(t)
	for _, r := range Script(s.api, "conf-idem", s.o.Turns, s.o.ResultChars) {
		p1 := s.prepare(t, e, r)
		p2 := s.prepare(t, e, r)
		a, b := encodeAll(t, p1.Messages), encodeAll(t, p2.Messages)
		if i := firstDiff(a, b); i >= 0 {
			x, y := around(at(a, i), at(b, i))
			t.Fatalf("%s: prepared twice, the lists differ from message %d:\nfirst  %s\nsecond %s", r.Name, i, x, y)
		}
		if p2.PrefixChanged || p2.Compacted {
			t.Errorf("%s: the repeated request claims a prefix change (%v) or compaction (%v)", r.Name, p2.PrefixChanged, p2.Compacted)
		}
	}
}

func at(l [][]byte, i int) []byte {
	if i < len(l) {
		return l[i]
	}
	return []byte("(none)")
}

// around returns a and b from a little before their first differing byte.
func around(a, b []byte) (string, string) {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-80)
	cut := func(x []byte) string {
		return fmt.Sprintf("…%s", x[from:min(len(x), i+160)])
	}
	return cut(a), cut(b)
}

func (s *suite) sticky(t *testing.T) {
	e := s.engine(t)
	var prev [][]byte
	for _, r := range Script(s.api, "conf-sticky", s.o.Turns, s.o.ResultChars) {
		p := s.prepare(t, e, r)
		cur := encodeAll(t, p.Messages)
		if prev != nil && !p.PrefixChanged && !p.Compacted {
			if i := firstDiff(prev, cur[:min(len(prev), len(cur))]); i >= 0 || len(cur) < len(prev) {
				x, y := around(at(prev, i), at(cur, i))
				t.Errorf("%s: no prefix change claimed, but message %d of what was sent before changed:\nbefore %s\nnow    %s", r.Name, i, x, y)
			}
		}
		prev = cur
	}
}

// retry walks the session with a second client that sends, beside each
// request, another one of the session out of order: ahead of the first
// client, or behind it (a retry after a timeout, a regenerate, a second
// agent on the same session).
func (s *suite) retry(t *testing.T) {
	e := s.engine(t)
	script := Script(s.api, "conf-retry", s.o.Turns, s.o.ResultChars)
	for i, r := range script {
		s.prepare(t, e, r)
		old := *script[(i*7)%len(script)]
		old.Name += fmt.Sprintf(" (sent after request %d)", i)
		s.prepare(t, e, &old)
	}
}

func (s *suite) behind(t *testing.T) {
	e := s.engine(t)
	script := Script(s.api, "conf-behind", s.o.Turns, s.o.ResultChars)
	compacted := -1
	for i, r := range script {
		if s.prepare(t, e, r).Compacted {
			compacted = i
			break
		}
	}
	if compacted < 0 {
		t.Skip("the Engine did not compact the scripted session")
	}
	for _, i := range []int{compacted - 1, compacted, compacted - 2} {
		if i < 0 {
			continue
		}
		r := *script[i]
		r.Name += " (retried behind the compaction)"
		s.prepare(t, e, &r)
	}
	if compacted+1 < len(script) {
		s.prepare(t, e, script[compacted+1])
	}
}

func (s *suite) edited(t *testing.T) {
	e := s.engine(t)
	script := Script(s.api, "conf-edited", s.o.Turns, s.o.ResultChars)
	half := len(script) / 2
	for _, r := range script[:half] {
		s.prepare(t, e, r)
	}
	for _, r := range script[half:] {
		r2 := r.EditFirstText("Actually: " + taskText)
		s.prepare(t, e, r2)
	}
}

func (s *suite) sessions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "engine")
	a := Script(s.api, "conf-a", s.o.Turns, s.o.ResultChars)
	b := Script(s.api, "conf-b", s.o.Turns, s.o.ResultChars)
	// Session a alone on an Engine, then on a fresh Engine over the same
	// (emptied) directory among session b's requests.
	alone, closeAlone := s.engineIn(t, dir)
	var want [][][]byte
	for _, r := range a {
		want = append(want, encodeAll(t, s.prepare(t, alone, r).Messages))
	}
	closeAlone()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	mixed, _ := s.engineIn(t, dir)
	for i := range a {
		s.prepare(t, mixed, b[i])
		got := encodeAll(t, s.prepare(t, mixed, a[i]).Messages)
		if j := firstDiff(want[i], got); j >= 0 {
			x, y := around(at(want[i], j), at(got, j))
			t.Fatalf("%s: prepared beside another session, message %d differs from the session alone:\nalone %s\nmixed %s", a[i].Name, j, x, y)
		}
	}
}

func (s *suite) concurrent(t *testing.T) {
	e := s.engine(t)
	const sessions, clients = 3, 2
	var wg sync.WaitGroup
	for k := range sessions {
		script := Script(s.api, fmt.Sprintf("conf-conc-%d", k), s.o.Turns, s.o.ResultChars)
		// The clients of a session send each request at the same time,
		// and the next once both have their answer; the sessions run
		// side by side.
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, r := range script {
				var step sync.WaitGroup
				for range clients {
					step.Add(1)
					go func() {
						defer step.Done()
						p, err := e.Prepare(t.Context(), r.Request())
						if err != nil {
							t.Errorf("%s: Prepare: %v", r.Name, err)
							return
						}
						s.check(t, r, p)
					}()
				}
				step.Wait()
			}
		}()
	}
	wg.Wait()
}

func (s *suite) canceled(t *testing.T) {
	e := s.engine(t)
	script := Script(s.api, "conf-cancel", s.o.Turns, s.o.ResultChars)
	for i, r := range script {
		if i%3 == 1 {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			done := make(chan struct{})
			var p *proxy.Prepared
			var err error
			go func() {
				defer close(done)
				p, err = e.Prepare(ctx, r.Request())
			}()
			select {
			case <-done:
			case <-time.After(s.o.Timeout):
				t.Fatalf("%s: Prepare with a canceled context did not return within %v", r.Name, s.o.Timeout)
			}
			switch {
			case err == nil && p == nil:
				t.Fatalf("%s: canceled Prepare returned neither a result nor an error", r.Name)
			case err == nil:
				s.check(t, r, p)
			}
		}
		s.prepare(t, e, r)
	}
}

func (s *suite) observe(t *testing.T) {
	e := s.engine(t)
	script := Script(s.api, "conf-observe", s.o.Turns, s.o.ResultChars)
	observe := func(key string, u pricing.Usage) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			e.Observe(t.Context(), key, u, 0)
		}()
		select {
		case <-done:
		case <-time.After(s.o.Timeout):
			t.Fatalf("Observe(%s) did not return within %v", key, s.o.Timeout)
		}
	}
	observe("conf-never-seen", pricing.Usage{Uncached: 10})
	for i, r := range script {
		p := s.prepare(t, e, r)
		// A plausible report: the provider counts a little more than the
		// Engine estimated.
		observe(r.SessionKey, pricing.Usage{Uncached: p.TokensAfter + p.TokensAfter/10 + i, Output: 50})
	}
}

// ---- scripted sessions ----

// taskText is the user's task of every scripted session.
const taskText = "Find why the build fails and fix it. Report what you changed."

// Req is one request of a scripted session.
type Req struct {
	Name       string
	API        proxy.API
	SessionKey string
	Model      string
	// Items are the wire messages (Anthropic, Chat) or input items
	// (Responses) of the request, and Messages what the proxy decodes
	// from them: the messages themselves, or ResponsesMessages of the items.
	Items    [][]byte
	Messages []agentctx.Message
	System   json.RawMessage
	Tools    json.RawMessage
}

// Request returns a fresh proxy.Request for r, its Document decoded anew
// (as the proxy decodes each request).
func (r *Req) Request() *proxy.Request {
	doc := &agentctx.Document{Format: agentctx.FormatArray, Messages: decode(r.API, r.Items)}
	return &proxy.Request{
		API: r.API, SessionKey: r.SessionKey, Model: r.Model,
		Header:   http.Header{"Content-Type": {"application/json"}, "User-Agent": {"enginetest"}},
		Document: doc, System: r.System, Tools: r.Tools,
		Received: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

// EditFirstText returns a copy of r whose first user message says text.
func (r *Req) EditFirstText(text string) *Req {
	c := *r
	c.Name += " (first message edited)"
	c.Items = append([][]byte{userText(r.API, text)}, r.Items[1:]...)
	c.Messages = decode(r.API, c.Items)
	return &c
}

// decode decodes a request's items as the proxy does.
func decode(api proxy.API, items [][]byte) []agentctx.Message {
	if api == proxy.APIResponses {
		msgs, _, err := proxy.ResponsesMessages(items)
		if err != nil {
			panic(fmt.Sprintf("enginetest: bad scripted items: %v", err))
		}
		return msgs
	}
	msgs := make([]agentctx.Message, len(items))
	for i, raw := range items {
		m, err := agentctx.DecodeMessage(raw)
		if err != nil {
			panic(fmt.Sprintf("enginetest: bad scripted message %s: %v", raw, err))
		}
		msgs[i] = m
	}
	return msgs
}

// Script returns the requests of a scripted session of the API: a task,
// then turns tool calls, each answered by a result of about resultChars
// characters (every fourth one three times that) (distinct lines a model would read: paths, errors, numbers);
// request k carries the first k turns and asks for the next.
func Script(api proxy.API, key string, turns, resultChars int) []*Req {
	items := [][]byte{userText(api, taskText)}
	var out []*Req
	model, system, tools := "claude-sonnet-4-5", json.RawMessage(`"You are a coding agent."`), json.RawMessage(`[{"name":"Bash","description":"Run a command","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}]`)
	switch api {
	case proxy.APIResponses:
		model = "gpt-5"
		tools = json.RawMessage(`[{"type":"function","name":"shell","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}]`)
	case proxy.APIChat:
		model, system = "gpt-5", nil
		tools = json.RawMessage(`[{"type":"function","function":{"name":"shell","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}}]`)
	}
	for k := 0; k <= turns; k++ {
		its := append([][]byte(nil), items...)
		out = append(out, &Req{
			Name: fmt.Sprintf("%s request %d", key, k), API: api, SessionKey: key, Model: model,
			Items: its, Messages: decode(api, its), System: system, Tools: tools,
		})
		id := fmt.Sprintf("call_%s_%02d", strings.ReplaceAll(key, "-", ""), k)
		cmd := fmt.Sprintf("go test ./pkg%d/...", k)
		n := resultChars
		if k%4 == 3 {
			n *= 3 // now and then a big one
		}
		items = append(items, toolCall(api, id, cmd), toolResult(api, id, ResultText(k, n)))
	}
	return out
}

// ResultText is a tool result of about n characters for turn k: distinct
// lines, as a compiler or test run prints them.
func ResultText(k, n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "pkg%d/file%03d.go:%d: check %d of turn %d: value %d differs from %d\n", k, i%97, 10+i, i, k, i*k+7, i*k+9)
	}
	return b.String()
}

func userText(api proxy.API, text string) []byte {
	switch api {
	case proxy.APIResponses:
		return fmt.Appendf(nil, `{"type":"message","role":"user","content":[{"type":"input_text","text":%s}]}`, jsonString(text))
	case proxy.APIChat:
		return fmt.Appendf(nil, `{"role":"user","content":%s}`, jsonString(text))
	}
	return fmt.Appendf(nil, `{"role":"user","content":[{"type":"text","text":%s}]}`, jsonString(text))
}

func toolCall(api proxy.API, id, cmd string) []byte {
	args, _ := json.Marshal(map[string]string{"cmd": cmd})
	switch api {
	case proxy.APIAnthropic:
		in, _ := json.Marshal(map[string]string{"command": cmd})
		return fmt.Appendf(nil, `{"role":"assistant","content":[{"type":"text","text":"Running %s."},{"type":"tool_use","id":%q,"name":"Bash","input":%s}]}`, cmd, id, in)
	case proxy.APIResponses:
		return fmt.Appendf(nil, `{"type":"function_call","call_id":%q,"name":"shell","arguments":%s}`, id, jsonString(string(args)))
	}
	return fmt.Appendf(nil, `{"role":"assistant","content":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":"shell","arguments":%s}}]}`, id, jsonString(string(args)))
}

func toolResult(api proxy.API, id, text string) []byte {
	switch api {
	case proxy.APIAnthropic:
		return fmt.Appendf(nil, `{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":%s}]}`, id, jsonString(text))
	case proxy.APIResponses:
		return fmt.Appendf(nil, `{"type":"function_call_output","call_id":%q,"output":%s}`, id, jsonString(text))
	}
	return fmt.Appendf(nil, `{"role":"tool","tool_call_id":%q,"content":%s}`, id, jsonString(text))
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
