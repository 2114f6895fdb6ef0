package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentctx/agentctx/pricing"
)

// MaxThinking bounds each part of a session's thinking memory (the blocks
// produced, the blocks sent): the oldest entries go first.
const MaxThinking = 512

// ThinkingEntry is what the session state remembers of one signed thinking
// block: Key identifies the block (a caller's stable digest of its
// signature, or of the data of a redacted_thinking block) and Prefix the
// messages before it (a caller's stable running hash of them). Both are
// opaque to the pipeline; they must not depend on the process (no random
// seeds), or two processes serving one session would disagree.
type ThinkingEntry struct {
	Key, Prefix uint64
}

// Observation is what a caller learned from a provider's answer to a
// request this Pipeline prepared: the usage it reported (for the request
// counted as Counted), and, for signed
// thinking (Anthropic's prefix checks), the blocks
// it produced (Known: the prefix each was produced after) and the blocks
// the request sent whole (Sent: the prefix each was sent after). A replica
// that serves the session's next request reads them from the session
// state (Pipeline.Thinking).
type Observation struct {
	Usage *pricing.Usage // nil: none reported
	// Counted is our count of the request the usage is for: the
	// Report.TokensAfter of its preparation (or its TokensBefore when the
	// usage is of the request as the agent sent it, as in Replay); 0
	// means the request of the last Prepare as sent.
	Counted int
	Known   []ThinkingEntry
	Sent    []ThinkingEntry
}

// Record saves an Observation in the session state, in one
// compare-and-swap (see Observe; no Load when this Pipeline saved the
// state last). An empty Observation saves nothing. Record does nothing for
// a Stateless Pipeline.
func (p *Pipeline) Record(ctx context.Context, o Observation) error {
	if p.opts.Stateless || o.Usage == nil && len(o.Known) == 0 && len(o.Sent) == 0 {
		return nil
	}
	return p.recordState(ctx, func(st *state) {
		if o.Usage != nil {
			st.observe(*o.Usage, o.Counted, p.opts.EstimateRatio)
		}
		if len(o.Known) > 0 || len(o.Sent) > 0 {
			st.Thinking = st.Thinking.with(o.Known, o.Sent)
		}
	})
}

// ThinkingMemory is the session state's memory of signed thinking blocks,
// as a Pipeline last loaded or saved it (Pipeline.Thinking). It is never
// modified: a Record makes a new one. The zero value and nil remember
// nothing.
type ThinkingMemory struct {
	known, sent thinkingList
}

// Known returns the prefix the block with key was produced after.
func (m *ThinkingMemory) Known(key uint64) (uint64, bool) {
	if m == nil {
		return 0, false
	}
	return m.known.get(key)
}

// Sent returns the prefix the block with key was last sent after.
func (m *ThinkingMemory) Sent(key uint64) (uint64, bool) {
	if m == nil {
		return 0, false
	}
	return m.sent.get(key)
}

// Len returns the number of blocks produced and sent that m remembers.
func (m *ThinkingMemory) Len() (known, sent int) {
	if m == nil {
		return 0, 0
	}
	return len(m.known.order), len(m.sent.order)
}

// Thinking returns the thinking memory of the session state this Pipeline
// loaded or saved last (its last Prepare's, or a Record's since): the
// state a request was prepared with. nil when it remembers nothing.
func (p *Pipeline) Thinking() *ThinkingMemory {
	m := &p.stateMemo
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.st == nil {
		return nil
	}
	return m.st.Thinking
}

// with returns m with the entries added (an entry replaces the one of the
// same key), each part bounded by MaxThinking.
func (m *ThinkingMemory) with(known, sent []ThinkingEntry) *ThinkingMemory {
	var c ThinkingMemory
	if m != nil {
		c = *m
	}
	c.known = c.known.with(known)
	c.sent = c.sent.with(sent)
	return &c
}

// thinkingList is entries in the order they were added, with an index.
type thinkingList struct {
	order []ThinkingEntry
	at    map[uint64]int // key → index in order
}

func (l thinkingList) get(key uint64) (uint64, bool) {
	i, ok := l.at[key]
	if !ok {
		return 0, false
	}
	return l.order[i].Prefix, true
}

// with returns a new list with the entries added: a key already there is
// updated in place, a new one appended; the oldest go beyond MaxThinking.
func (l thinkingList) with(add []ThinkingEntry) thinkingList {
	if len(add) == 0 {
		return l
	}
	order := make([]ThinkingEntry, len(l.order), len(l.order)+len(add))
	copy(order, l.order)
	at := make(map[uint64]int, len(l.order)+len(add))
	for i, e := range order {
		at[e.Key] = i
	}
	for _, e := range add {
		if i, ok := at[e.Key]; ok {
			order[i].Prefix = e.Prefix
			continue
		}
		at[e.Key] = len(order)
		order = append(order, e)
	}
	if n := len(order) - MaxThinking; n > 0 {
		order = order[n:]
		clear(at)
		for i, e := range order {
			at[e.Key] = i
		}
	}
	return thinkingList{order: order, at: at}
}

// thinkingJSON is how a ThinkingMemory is stored: each entry as a string
// of the key and the prefix in hex, "key:prefix", oldest first.
type thinkingJSON struct {
	Known []string `json:"known,omitempty"`
	Sent  []string `json:"sent,omitempty"`
}

// MarshalJSON implements json.Marshaler.
func (m *ThinkingMemory) MarshalJSON() ([]byte, error) {
	var j thinkingJSON
	if m != nil {
		j.Known, j.Sent = m.known.strings(), m.sent.strings()
	}
	return json.Marshal(j)
}

// UnmarshalJSON implements json.Unmarshaler.
func (m *ThinkingMemory) UnmarshalJSON(data []byte) error {
	var j thinkingJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	known, err := parseThinking(j.Known)
	if err != nil {
		return err
	}
	sent, err := parseThinking(j.Sent)
	if err != nil {
		return err
	}
	*m = ThinkingMemory{known: thinkingList{}.with(known), sent: thinkingList{}.with(sent)}
	return nil
}

func (l thinkingList) strings() []string {
	if len(l.order) == 0 {
		return nil
	}
	out := make([]string, len(l.order))
	for i, e := range l.order {
		b := make([]byte, 0, 33)
		b = strconv.AppendUint(b, e.Key, 16)
		b = append(b, ':')
		b = strconv.AppendUint(b, e.Prefix, 16)
		out[i] = string(b)
	}
	return out
}

var errThinkingEntry = errors.New("pipeline: thinking memory: want \"key:prefix\" in hex")

func parseThinking(list []string) ([]ThinkingEntry, error) {
	out := make([]ThinkingEntry, 0, len(list))
	for _, s := range list {
		key, prefix, ok := strings.Cut(s, ":")
		k, err1 := strconv.ParseUint(key, 16, 64)
		pfx, err2 := strconv.ParseUint(prefix, 16, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%w: %q", errThinkingEntry, s)
		}
		out = append(out, ThinkingEntry{Key: k, Prefix: pfx})
	}
	return out, nil
}
