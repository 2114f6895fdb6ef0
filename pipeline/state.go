package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/bufpool"
	"github.com/agentctx/agentctx/pricing"
	"github.com/agentctx/agentctx/session"
)

// stateSchema is the version of the session state's JSON layout.
const stateSchema = 1

// state is what the session engine remembers of a conversation between
// calls (SPEC §9): every decision, so that later calls re-apply it byte for
// byte. It is stored as JSON in a session.Store.
type state struct {
	Schema   int `json:"schema"`
	Requests int `json:"requests"`
	// Results holds the decisions on the tool results of the live part of
	// the history (after the compaction), keyed by resultKey.
	Results map[string]*resultState `json:"results"`
	// Compaction is the summary that stands for the start of the history.
	Compaction *compactionState `json:"compaction,omitempty"`
	// Crossed is set when the history is over the trigger and this
	// crossing was already handled (compacted, or found impossible to
	// compact): it is our count of the list then. No new compaction until
	// the list goes below the trigger, or grows from that count by a tail's
	// worth of tokens (there is then something new to summarize). 0 when
	// below the trigger.
	Crossed int `json:"crossed,omitempty"`
	// RetryAt is the request count from which a compaction whose summary
	// failed may be tried again in the same crossing (see retryAfterFailure
	// for the whole rule): a request over the limit tries at once, and a
	// failed archive sets no RetryAt. 0 once a compaction succeeds or the
	// list goes below the trigger.
	RetryAt int `json:"retry_at,omitempty"`
	// Usage is the provider's last reported usage and the calibration.
	Usage *usageState `json:"usage,omitempty"`
	// Counted is the count of the last prepared request as sent (system,
	// tools and messages): what a usage report without its own count
	// refers to.
	Counted int `json:"counted"`
	// Compactions and Breaks count the compactions made and the calls that
	// changed what an earlier call had sent (a new prune batch, a
	// compaction), for reports.
	Compactions int `json:"compactions"`
	Breaks      int `json:"breaks"`
	// Colds counts the requests that found the prompt cache cold (sent
	// after a gap longer than its lifetime): the plan expects that share
	// of the requests to come to write their whole prefix again.
	Colds int `json:"colds,omitempty"`
	// LastAt is the time of the last prepared request: after a gap longer
	// than the prompt cache's lifetime the cache is cold, and an edit
	// costs nothing more.
	LastAt time.Time `json:"last_at,omitzero"`
	// CacheAt is when a request the client did not send last refreshed
	// the provider's cache of the session's last request (a keep-warm
	// request: Pipeline.CacheRefreshed); the cache's lifetime runs from
	// the later of LastAt and CacheAt.
	CacheAt time.Time `json:"cache_at,omitzero"`
	// Intact reports that the last prepared request sent the prefix the
	// one before it left, on a warm cache: its usage measures the cache
	// (usageState.Hit).
	Intact bool `json:"intact,omitempty"`
	// Thinking is the memory of signed thinking blocks (thinking.go,
	// Pipeline.Record): kept in the state so that every process serving
	// the session agrees. Never modified once set (a Record sets a new
	// one), so a clone shares it.
	Thinking *ThinkingMemory `json:"thinking,omitempty"`

	// The priced policy's model of the session (plan.go), in our counts:
	// Length is the history's length at the last request and
	// ForwardedGrowth the mean tokens a request adds as forwarded (its
	// new messages, large results as references; see observeForwarded);
	// After is the request a compaction left and SummaryTokens its
	// summary; Removed counts the results taken out of what is sent
	// (cleared, replaced by references, summarized) and ReadBacks the
	// reads of stored content back the model made.
	Length          int     `json:"length,omitempty"`
	ForwardedGrowth float64 `json:"forwarded_growth,omitempty"`
	Forwarded       int     `json:"forwarded_requests,omitempty"` // requests ForwardedGrowth is the mean of
	After           int     `json:"after,omitempty"`
	SummaryTokens   int     `json:"summary_tokens,omitempty"`
	Removed         int     `json:"removed,omitempty"`
	ReadBacks       int     `json:"read_backs,omitempty"`
	// Stale is the tokens the stale results already sent and not
	// cleared would free, after the last request's decision, and
	// StaleGrowth the mean tokens a request adds to them.
	Stale       int     `json:"stale,omitempty"`
	StaleGrowth float64 `json:"stale_growth,omitempty"`

	// TerminalTools are the tools outside the prune step's list whose
	// output counted as terminal by its shape, in the order they were
	// learned: each was logged once (logTerminal). Never modified once
	// set (a call sets a new slice), so a clone shares it.
	TerminalTools []string `json:"terminal_tools,omitempty"`
	// SavedPaths are the files results said the client saved output to
	// (noteSaved), oldest first: a read of one is never offloaded. Never
	// modified once set, as TerminalTools.
	SavedPaths []string `json:"saved_paths,omitempty"`
}

// resultState is the decision on one tool result.
type resultState struct {
	// FirstSeen is when a call first saw the result; it stands in for a
	// missing timestamp.
	FirstSeen time.Time `json:"first_seen"`
	// Artifact is the workspace artifact holding the original.
	Artifact string `json:"artifact,omitempty"`
	// Action is what replaced the result in what is sent: actionOffloaded
	// (a reference), actionPruned (a placeholder) or "" (kept whole).
	Action string `json:"action,omitempty"`
	// At is when the action was decided.
	At time.Time `json:"at,omitzero"`
	// Content is the exact replacement sent since then.
	Content string `json:"content,omitempty"`
	// Chars is the length of the original in characters (for reports),
	// once a replacement was made; 0 when not known yet.
	Chars int `json:"chars,omitempty"`
	// Behind is set while only requests behind the session (behind.go)
	// have seen the result: it is not the longer history's.
	Behind bool `json:"behind,omitempty"`
	// Swept is set when the cold-cache sweep offloaded the result (a
	// decision that depends on the request: the most recent results are
	// kept), not the offload step (one that depends on the result alone).
	Swept bool `json:"swept,omitempty"`
}

const (
	actionOffloaded = "offloaded"
	actionPruned    = "pruned"
)

// compactionState is a compaction: the first N messages of the history
// (after the Head leading system messages, which are kept) are replaced by
// Summary. Digest is the hash of the history's first N messages, so the
// summary is only used for the very messages it stands for. Marks are the
// digests of the shorter prefixes of those messages, the last maxMarks of
// them (see prefixMarks): a request they match is behind the session, not a
// history that went another way.
type compactionState struct {
	Head    int       `json:"head"`
	N       int       `json:"n"`
	Digest  string    `json:"digest"`
	Marks   []string  `json:"marks,omitempty"`
	Summary string    `json:"summary"`
	Archive string    `json:"archive,omitempty"`
	At      time.Time `json:"at"`
	Chars   int       `json:"chars"` // of the summarized messages
}

// usageState is the last usage a provider reported and the calibration
// drawn from the reports so far: the next request is estimated as Tokens +
// Ratio × (its count − Counted).
type usageState struct {
	Tokens  int     `json:"tokens"`  // input + cache read + cache creation tokens
	Counted int     `json:"counted"` // our count of the request it was for
	Ratio   float64 `json:"ratio"`   // provider tokens per counted token
	N       int     `json:"n"`       // reports seen
	// Cached counts the reports that read from or wrote to the prompt
	// cache: a provider whose reports never do caches nothing, and an
	// edit then costs no rewrite.
	Cached int `json:"cached,omitempty"`
	// Hit is the share of the prefix the request before left that the
	// provider reported read from its cache, on requests that sent that
	// prefix unchanged on a warm cache (an exponentially weighted mean of
	// HitN such reports): the cache model's calibration (issue 45). A
	// client whose breakpoints miss, or a provider that evicts early,
	// reads less than the model assumes, and an edit then loses less.
	Hit  float64 `json:"hit,omitempty"`
	HitN int     `json:"hit_n,omitempty"`
}

// hit returns the calibrated share of an intact prefix read from the
// cache: 1 until three reports measured it.
func (u *usageState) hit() float64 {
	if u == nil || u.HitN < 3 {
		return 1
	}
	return u.Hit
}

// contentDigest is the stored hash of a result's content: the first 12
// bytes of its SHA-256, in hex.
func contentDigest(text string) string {
	var b [digestLen]byte
	return string(appendDigest(b[:0], text))
}

// digestLen is the length of a contentDigest.
const digestLen = 24

// appendDigest appends contentDigest(text) to dst. The text is hashed
// where it is (never copied) and the sum kept on the stack: a result's key
// is one allocation, not four (issue 24 item 7: 50,000 results).
func appendDigest(dst []byte, text string) []byte {
	sum := sha256.Sum256(unsafe.Slice(unsafe.StringData(text), len(text))) // read, never written
	return hex.AppendEncode(dst, sum[:digestLen/2])
}

// digestMemo remembers contentDigest by a 128-bit fingerprint of the text
// (two independently seeded maphash sums) and its length, so that the
// results a session sends again on every request are hashed with SHA-256
// once. It keeps no text, and its memory is bounded: when the current
// generation is full it becomes the previous one.
type digestMemo struct {
	mu        sync.Mutex
	s1, s2    maphash.Seed
	cur, prev map[fingerprint]string
}

type fingerprint struct {
	a, b uint64
	n    int
}

// maxDigests bounds a generation of the memo.
const maxDigests = 1 << 14

func newDigestMemo() *digestMemo {
	return &digestMemo{s1: maphash.MakeSeed(), s2: maphash.MakeSeed(), cur: map[fingerprint]string{}}
}

// resultKey identifies a tool result across calls: the id of the call it
// answers and a hash of its content (contentDigest), so that a reused id
// with other content is another result.
func (m *digestMemo) resultKey(id string, c agentctx.Content) string {
	if c.IsText() {
		return m.keyOf(id, c.Text())
	}
	// Blocks: their text written into a pooled buffer, not a new string
	// for each result (4 MB for a 10 MB request of a coding agent's turns).
	bp := bufpool.Get()
	*bp = c.AppendText(*bp)
	k := m.keyOf(id, unsafe.String(unsafe.SliceData(*bp), len(*bp))) // keyOf keeps no part of it
	bufpool.Put(bp)
	return k
}

// keyOf is resultKey of a result whose text is text.
func (m *digestMemo) keyOf(id, text string) string {
	if len(text) < 256 {
		var b [digestLen]byte
		return id + "\x00" + string(appendDigest(b[:0], text))
	}
	f := fingerprint{maphash.String(m.s1, text), maphash.String(m.s2, text), len(text)}
	m.mu.Lock()
	d, ok := m.cur[f]
	if !ok {
		if d, ok = m.prev[f]; ok {
			m.put(f, d)
		}
	}
	m.mu.Unlock()
	if !ok {
		d = contentDigest(text)
		m.mu.Lock()
		m.put(f, d)
		m.mu.Unlock()
	}
	return id + "\x00" + d
}

func (m *digestMemo) put(f fingerprint, d string) {
	if len(m.cur) >= maxDigests {
		m.prev, m.cur = m.cur, make(map[fingerprint]string, maxDigests/4)
	}
	m.cur[f] = d
}

func newState() *state {
	return &state{Schema: stateSchema, Results: map[string]*resultState{}}
}

// loadState reads the session's state; a missing session is a new state.
// A state written by a newer schema, or unreadable, is an error rather than
// a silent reset: its decisions would be lost.
//
// results is the JSON of the state's Results when known (the state came
// from the memo), else nil.
func (p *Pipeline) loadState(ctx context.Context) (st *state, v int64, results *resultsJSON, err error) {
	if p.opts.Stateless {
		return newState(), 0, nil, nil
	}
	sctx, cancel := p.storeCtx(ctx)
	data, v, err := p.sessions.Load(sctx, p.namespace, p.sessionID)
	err = storeErr(ctx, sctx, err)
	cancel()
	if errors.Is(err, session.ErrNotFound) {
		return newState(), 0, nil, nil
	}
	if err != nil {
		return nil, 0, nil, fmt.Errorf("pipeline: load session %q: %w", p.sessionID, err)
	}
	if st, results := p.memoStateJSONAt(data, v); st != nil {
		return st, v, results, nil
	}
	st = newState()
	if err := json.Unmarshal(data, st); err != nil {
		return nil, 0, nil, fmt.Errorf("pipeline: session %q: unreadable state: %w", p.sessionID, err)
	}
	if st.Schema > stateSchema {
		return nil, 0, nil, fmt.Errorf("pipeline: session %q: state schema %d is newer than this program's %d", p.sessionID, st.Schema, stateSchema)
	}
	if st.Results == nil {
		st.Results = map[string]*resultState{}
	}
	p.rememberStateJSON(data, nil, st, v)
	return st, v, nil, nil
}

// stateMemo is the last state this Pipeline read or wrote, with its JSON:
// a session's calls mostly find what the call before saved, and a copy of
// it is cheaper than decoding it again. results is the JSON of its Results
// within data, when known; v is the version data was loaded or saved as (0
// when not known), which lets Observe save without loading first
// (observe.go). st is never modified once remembered: it is copied out;
// neither is results, whose entries the next save copies for the results
// left as they were (encodeResults).
type stateMemo struct {
	mu      sync.Mutex
	data    []byte
	st      *state
	results *resultsJSON
	v       int64
}

// resultsJSON is the JSON of a state's Results (json.Marshal's: an object
// with its keys sorted) and where each entry is in it: keys[i] (sorted) is
// written at data[spans[i].start:spans[i].end], as "key":{...}. keys and
// spans are nil when not known (the entries are then encoded anew).
type resultsJSON struct {
	data  []byte
	keys  []string
	spans []span
}

type span struct{ start, end int }

// memoState returns a copy of the remembered state if data is its JSON.
func (p *Pipeline) memoState(data []byte) *state {
	st, _ := p.memoStateJSON(data)
	return st
}

// memoStateJSON is memoState, with the JSON of the state's Results when
// known.
func (p *Pipeline) memoStateJSON(data []byte) (*state, *resultsJSON) {
	return p.memoStateJSONAt(data, 0)
}

// memoStateJSONAt is memoStateJSON for data loaded as version v (0: not
// known), which the memo then takes as its version.
func (p *Pipeline) memoStateJSONAt(data []byte, v int64) (*state, *resultsJSON) {
	m := &p.stateMemo
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.st == nil || !bytes.Equal(m.data, data) {
		return nil, nil
	}
	if v != 0 {
		m.v = v
	}
	return m.st.clone(), m.results
}

// rememberState remembers st (a copy of it) as the state data encodes.
func (p *Pipeline) rememberState(data []byte, st *state) {
	p.rememberStateJSON(data, nil, st, 0)
}

// rememberStateJSON is rememberState with results, the JSON of st.Results
// within data (nil when not known), and v, the version data was loaded or
// saved as (0 when not known).
func (p *Pipeline) rememberStateJSON(data []byte, results *resultsJSON, st *state, v int64) {
	p.rememberStateOwned(data, results, st.clone(), v)
}

// rememberStateOwned is rememberStateJSON for a st that nothing modifies
// afterwards: it is kept as it is, not copied.
func (p *Pipeline) rememberStateOwned(data []byte, results *resultsJSON, st *state, v int64) {
	m := &p.stateMemo
	m.mu.Lock()
	defer m.mu.Unlock()
	m.data, m.results, m.st, m.v = data, results, st, v
}

// clone returns a deep copy of st. The copies of the results are
// allocated together: a state is cloned on every load and save, and a long
// session holds hundreds of results.
func (st *state) clone() *state {
	c := *st
	c.Results = make(map[string]*resultState, len(st.Results))
	rs := make([]resultState, 0, len(st.Results))
	for k, r := range st.Results {
		if r == nil {
			c.Results[k] = nil
			continue
		}
		rs = append(rs, *r)
		c.Results[k] = &rs[len(rs)-1]
	}
	if st.Compaction != nil {
		cc := *st.Compaction
		cc.Marks = slices.Clone(cc.Marks)
		c.Compaction = &cc
	}
	if st.Usage != nil {
		u := *st.Usage
		c.Usage = &u
	}
	return &c
}

// saveState stores st, which nothing modifies afterwards, if the session
// is still at version v; the error matches session.ErrConflict when
// another writer got there first. results, when not nil, is the JSON of
// st.Results (see encodeState).
func (p *Pipeline) saveState(ctx context.Context, st *state, v int64, results *resultsJSON) (int64, error) {
	if p.opts.Stateless {
		return 0, nil
	}
	var prev *state
	var prevJSON *resultsJSON
	if results == nil {
		// The entries the last state remembered holds as they are are
		// copied from its JSON, not encoded again.
		m := &p.stateMemo
		m.mu.Lock()
		prev, prevJSON = m.st, m.results
		m.mu.Unlock()
	}
	data, results, err := encodeStateFrom(st, results, prev, prevJSON)
	if err != nil {
		return 0, err
	}
	sctx, cancel := p.storeCtx(ctx)
	nv, err := p.sessions.Save(sctx, p.namespace, p.sessionID, data, v)
	err = storeErr(ctx, sctx, err)
	cancel()
	if err == nil {
		// st is the state update's fn made, dropped once saved: the memo
		// keeps it as it is (a copy of a state of 50,000 results was 7 MB
		// more on every save; a load copies what the memo keeps).
		p.rememberStateOwned(data, results, st, nv)
	}
	return nv, err
}

// resultsNull is the Results member of a state encoded without results.
var resultsNull = []byte(`"results":null`)

// encodeState returns json.Marshal(st) and the JSON of st.Results within
// it. results, when not nil, is that JSON, encoded by an earlier call for
// the very same Results: the results are most of a long session's state,
// and a call that leaves them alone (Observe) does not encode them again.
// The JSON returned is a part of data (its spans unchanged).
func encodeState(st *state, results *resultsJSON) (data []byte, res *resultsJSON, err error) {
	return encodeStateFrom(st, results, nil, nil)
}

// encodeStateFrom is encodeState encoding the results (when results is
// nil) in place in the state's JSON, from prev and prevJSON as
// encodeResults does: a long session's results are not encoded apart
// only to be copied in (4.6 MB for 50,000 results).
func encodeStateFrom(st *state, results *resultsJSON, prev *state, prevJSON *resultsJSON) (data []byte, res *resultsJSON, err error) {
	rs := st.Results
	st.Results = nil
	head, err := json.Marshal(st)
	st.Results = rs
	if err != nil {
		return nil, nil, err
	}
	// Only numbers come before the member (schema, requests): its first
	// occurrence is the member.
	i := bytes.Index(head, resultsNull)
	if i < 0 {
		return nil, nil, errors.New("pipeline: encode state: no results member")
	}
	at := i + len(resultsNull) - len("null")
	tail := head[i+len(resultsNull):]
	var keys []string
	var spans []span
	if results != nil {
		data = make([]byte, 0, at+len(results.data)+len(tail))
		data = append(data, head[:at]...)
		data = append(data, results.data...)
		keys, spans = results.keys, results.spans
	} else {
		data = make([]byte, 0, at+resultsSize(rs, prev, prevJSON)+len(tail))
		data = append(data, head[:at]...)
		if data, keys, spans, err = appendResults(data, rs, prev, prevJSON); err != nil {
			return nil, nil, err
		}
	}
	end := len(data)
	data = append(data, tail...)
	res = &resultsJSON{data: data[at:end:end], keys: keys, spans: spans}
	return data, res, nil
}

// encodeResults returns json.Marshal(rs) with where each entry is in it.
// prev is a state never modified and prevJSON the JSON of its Results
// (either may be nil): an entry of rs equal to prev's under the same key
// is copied from prevJSON rather than encoded again. A long session's
// results change a few at a time, and their encoding (times, escaped
// replacement texts) is most of the cost of saving its state.
func encodeResults(rs map[string]*resultState, prev *state, prevJSON *resultsJSON) (*resultsJSON, error) {
	out, keys, spans, err := appendResults(make([]byte, 0, resultsSize(rs, prev, prevJSON)), rs, prev, prevJSON)
	if err != nil {
		return nil, err
	}
	return &resultsJSON{data: out, keys: keys, spans: spans}, nil
}

// usablePrev returns prev and prevJSON, or nils when prevJSON is not the
// JSON of prev's results.
func usablePrev(prev *state, prevJSON *resultsJSON) (*state, *resultsJSON) {
	if prev == nil || prevJSON == nil || len(prevJSON.keys) != len(prevJSON.spans) || len(prevJSON.keys) != len(prev.Results) {
		return nil, nil
	}
	return prev, prevJSON
}

// resultsSize is about the length of encodeResults' JSON of rs, for its
// buffer (sized, not grown: 50,000 results made 20 MB of garbage).
func resultsSize(rs map[string]*resultState, prev *state, prevJSON *resultsJSON) int {
	if rs == nil {
		return len("null")
	}
	if _, pj := usablePrev(prev, prevJSON); pj != nil {
		return len(pj.data) + 256
	}
	size := 2
	for k, r := range rs {
		size += len(k) + 110
		if r != nil {
			size += len(r.Artifact) + len(r.Action) + len(r.Content)
		}
	}
	return size
}

// appendResults is encodeResults appending the JSON to out: the spans it
// returns are from the start of that JSON.
func appendResults(out []byte, rs map[string]*resultState, prev *state, prevJSON *resultsJSON) ([]byte, []string, []span, error) {
	if rs == nil {
		return append(out, "null"...), nil, nil, nil
	}
	prev, prevJSON = usablePrev(prev, prevJSON)
	keys := sortedKeys(rs, prev, prevJSON)
	base := len(out)
	spans := make([]span, len(keys))
	out = append(out, '{')
	j := 0 // the first of prevJSON's keys not before keys[i]
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		start := len(out)
		r := rs[k]
		reused := false
		if prevJSON != nil && r != nil {
			for j < len(prevJSON.keys) && prevJSON.keys[j] < k {
				j++
			}
			if j < len(prevJSON.keys) && prevJSON.keys[j] == k {
				if pr := prev.Results[k]; pr != nil && *pr == *r {
					sp := prevJSON.spans[j]
					out = append(out, prevJSON.data[sp.start:sp.end]...)
					reused = true
				}
			}
		}
		if !reused {
			var err error
			if out, err = appendResult(out, k, r); err != nil {
				return nil, nil, nil, err
			}
		}
		spans[i] = span{start - base, len(out) - base}
	}
	out = append(out, '}')
	return out, keys, spans, nil
}

// sortedKeys returns the keys of rs in order, as encoding/json writes a
// map: the ones prevJSON, the encoding of prev.Results, holds (whose keys
// are in order) taken in its order, and the few others sorted among them,
// rather than sorting every key of a long session's results on every save.
func sortedKeys(rs map[string]*resultState, prev *state, prevJSON *resultsJSON) []string {
	keys := make([]string, 0, len(rs))
	if prevJSON == nil {
		for k := range rs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return keys
	}
	for _, k := range prevJSON.keys {
		if _, ok := rs[k]; ok {
			keys = append(keys, k)
		}
	}
	if len(keys) == len(rs) {
		return keys
	}
	var added []string
	for k := range rs {
		if _, ok := prev.Results[k]; !ok {
			added = append(added, k)
		}
	}
	slices.Sort(added)
	out := make([]string, 0, len(rs))
	i, j := 0, 0
	for i < len(keys) || j < len(added) {
		if j == len(added) || i < len(keys) && keys[i] < added[j] {
			out = append(out, keys[i])
			i++
		} else {
			out = append(out, added[j])
			j++
		}
	}
	return out
}

// appendResult appends the entry "k":r of a Results object as
// encoding/json writes it, without reflection: a state of 50,000 results
// made 530 bytes of garbage per result through json.Marshal (26 MB per
// save; issue 24). An entry json.Marshal would fail on (a time outside
// years 0–9999) goes through it for its error.
func appendResult(out []byte, k string, r *resultState) ([]byte, error) {
	if r == nil || !jsonTime(r.FirstSeen) || !r.At.IsZero() && !jsonTime(r.At) {
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		vb, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		out = append(out, kb...)
		out = append(out, ':')
		return append(out, vb...), nil
	}
	out = appendJSONString(out, k)
	out = append(out, `:{"first_seen":"`...)
	out = r.FirstSeen.AppendFormat(out, time.RFC3339Nano)
	out = append(out, '"')
	if r.Artifact != "" {
		out = appendJSONString(append(out, `,"artifact":`...), r.Artifact)
	}
	if r.Action != "" {
		out = appendJSONString(append(out, `,"action":`...), r.Action)
	}
	if !r.At.IsZero() {
		out = r.At.AppendFormat(append(out, `,"at":"`...), time.RFC3339Nano)
		out = append(out, '"')
	}
	if r.Content != "" {
		out = appendJSONString(append(out, `,"content":`...), r.Content)
	}
	if r.Chars != 0 {
		out = strconv.AppendInt(append(out, `,"chars":`...), int64(r.Chars), 10)
	}
	if r.Behind {
		out = append(out, `,"behind":true`...)
	}
	if r.Swept {
		out = append(out, `,"swept":true`...)
	}
	return append(out, '}'), nil
}

// jsonTime reports whether t.MarshalJSON writes t as RFC 3339 with
// nanoseconds, quoted (it fails outside years 0 to 9999, and on a zone
// offset of a fraction of a minute or beyond a day).
func jsonTime(t time.Time) bool {
	if y := t.Year(); y < 0 || y > 9999 {
		return false
	}
	_, off := t.Zone()
	return off%60 == 0 && off > -24*3600 && off < 24*3600
}

// appendJSONString appends s as encoding/json writes a string: ASCII
// written here (quotes and backslashes escaped, HTML characters and
// controls as \u00XX, newlines, returns and tabs as \n, \r, \t), a
// string holding anything else (\b, \f, non-ASCII: U+2028, invalid
// UTF-8) through json.Marshal. A result's key holds a NUL.
func appendJSONString(out []byte, s string) []byte {
	const hex = "0123456789abcdef"
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x7f || c == '\b' || c == '\f' {
			b, _ := json.Marshal(s) // a string always encodes
			return append(out, b...)
		}
	}
	out = append(out, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			out = append(out, '\\', c)
		case c == '\n':
			out = append(out, '\\', 'n')
		case c == '\r':
			out = append(out, '\\', 'r')
		case c == '\t':
			out = append(out, '\\', 't')
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			out = append(out, c)
		}
	}
	return append(out, '"')
}

// maxAttempts bounds the load–prepare–save rounds of one call when other
// writers keep changing the session.
const maxAttempts = 32

// update runs fn on the session's state and saves it with compare-and-swap,
// loading and running fn again when another writer saved in between (after
// a short random wait that grows with the attempts, so racing writers
// spread out).
func (p *Pipeline) update(ctx context.Context, fn func(st *state) error) (int64, error) {
	return p.updateState(ctx, false, fn)
}

// updateState is update; keepResults says that fn leaves st.Results as
// loaded, so that their JSON is not encoded again when known.
func (p *Pipeline) updateState(ctx context.Context, keepResults bool, fn func(st *state) error) (int64, error) {
	for attempt := range maxAttempts {
		if attempt > 0 {
			wait := time.Duration(rand.Int64N(int64(time.Millisecond) << min(attempt, 6)))
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(wait):
			}
		}
		st, v, results, err := p.loadState(ctx)
		if err != nil {
			return 0, err
		}
		if err := fn(st); err != nil {
			return 0, err
		}
		if !keepResults {
			results = nil
		}
		nv, err := p.saveState(ctx, st, v, results)
		if errors.Is(err, session.ErrConflict) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("pipeline: save session %q: %w", p.sessionID, err)
		}
		return nv, nil
	}
	return 0, fmt.Errorf("pipeline: session %q: %w after %d attempts", p.sessionID, session.ErrConflict, maxAttempts)
}

// Calibration bounds: a ratio outside them is a measurement gone wrong.
const (
	minRatio = 0.5
	maxRatio = 3.0
	// minSlopeTokens is the smallest change in the count between two
	// reports that the ratio is fitted on; smaller changes are noise.
	minSlopeTokens = 200
)

// observe records a usage report in the calibration: u is the usage of
// the request counted as counted (0: the last one prepared).
func (st *state) observe(u pricing.Usage, counted int, initial float64) {
	if counted <= 0 {
		counted = st.Counted
	}
	total := u.Input()
	if total <= 0 || counted <= 0 {
		return
	}
	prev := st.Usage
	next := &usageState{Tokens: total, Counted: counted, Ratio: initial, N: 1}
	if prev != nil {
		next.Ratio, next.N, next.Cached, next.Hit, next.HitN = prev.Ratio, prev.N+1, prev.Cached, prev.Hit, prev.HitN
		if st.Intact && counted == st.Counted && prev.Tokens > 0 {
			// The request sent the prefix the one before it left, on a
			// warm cache: the model expects it read whole.
			h := min(1, float64(u.CacheRead)/float64(min(prev.Tokens, total)))
			if next.HitN == 0 {
				next.Hit = h
			} else {
				next.Hit = 0.7*next.Hit + 0.3*h
			}
			next.HitN++
		}
		if d := counted - prev.Counted; d >= minSlopeTokens || d <= -minSlopeTokens {
			slope := float64(total-prev.Tokens) / float64(d)
			if slope >= minRatio && slope <= maxRatio {
				if prev.N == 1 && prev.Ratio == initial {
					next.Ratio = slope
				} else {
					next.Ratio = 0.7*prev.Ratio + 0.3*slope
				}
			}
		}
	}
	if u.CacheRead > 0 || u.CacheWrite() > 0 {
		next.Cached++
	}
	st.Usage = next
}

// estimate returns the provider's likely count for a request we count as
// counted: anchored on the last usage report when there is one, else the
// count times the initial ratio.
func (st *state) estimate(counted int, initial float64) int {
	if u := st.Usage; u != nil {
		return max(0, u.Tokens+int(math.Round(u.Ratio*float64(counted-u.Counted))))
	}
	return int(math.Round(initial * float64(counted)))
}
