// Package respcompact applies agentctx's compactions through OpenAI's
// Responses compaction (POST /v1/responses/compact), for the proxy's and
// the SDK middleware's native mode: agentctx decides when and what to
// compact (the pipeline's compaction, which stores every original and
// lists where in the summary's pointer section); the provider writes the
// summary, as its opaque compaction item.
//
// The facts relied on (OpenAI's compaction guide,
// https://developers.openai.com/api/docs/guides/compaction, and the API
// reference as openai-go v3.96.0 encodes it, ResponseService.Compact):
//
//   - POST /responses/compact takes model (required), input (a string or
//     input items), instructions, previous_response_id, prompt_cache_key,
//     and returns a CompactedResponse: object "response.compaction",
//     output "a list of all user messages, followed by a single
//     compaction item", and usage (input_tokens with
//     input_tokens_details.cached_tokens, output_tokens, total_tokens),
//     the compaction pass's, billed.
//   - The compaction item is {"type":"compaction","id":...,
//     "encrypted_content":...}; it "is opaque and not intended to be
//     human-interpretable". For stateless input-array chaining (store
//     false, the whole input each time: what Codex sends) the output items
//     go into the next input, where the compaction item "carries forward
//     key prior state and reasoning into the next run using fewer tokens".
//   - Server-side compaction (context_management [{"type":"compaction",
//     "compact_threshold":N}] on POST /responses) is the alternative: the
//     server decides, at its threshold, and the compaction item arrives
//     in the answer, to the client. It is not used: agentctx keeps the
//     decision (its trigger, its batching, its stored originals), and the
//     client's history stays the client's own; the proxy holds the
//     compacted window in the session state, as it holds its own
//     summaries.
//
// The compacted window travels inside the summary message the pipeline
// keeps (Summary): the summary's text holds the window's output items
// between Marker and MarkerEnd; where the message is sent (Split), the
// items go in its place, followed by the summary's text without them (the
// title, a note, and the pointers to the stored originals). A summary
// message is kept by the session and sent again on every later request,
// so the same window is sent with the same bytes, and a later compaction
// hands it back to the provider (Items), which folds it into the new one.
package respcompact

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/base/secret"
)

// Path is the standalone compaction endpoint, under the API's base URL.
const Path = "/v1/responses/compact"

// Marker and MarkerEnd enclose, in a summary's text, the JSON array of
// the compacted window's items.
const (
	Marker    = "<agentctx-provider-compaction>"
	MarkerEnd = "</agentctx-provider-compaction>"
)

// Note says, in the summary the model reads, where the earlier
// conversation went.
const Note = "The earlier conversation was compacted by the provider (OpenAI Responses compaction): the compaction item just before this message carries its state."

// Summary returns the summary text for a compacted window: the title, the
// window's items between the markers, and the note.
func Summary(window []json.RawMessage) (string, error) {
	b, err := json.Marshal(window)
	if err != nil {
		return "", err
	}
	return compact.SummaryTitle + "\n\n" + Marker + string(b) + MarkerEnd + "\n\n" + Note, nil
}

// Split returns the window items a summary's text holds and the text
// without them; ok is false when text holds no (valid) window.
func Split(text string) (items []json.RawMessage, rest string, ok bool) {
	i := strings.Index(text, Marker)
	if i < 0 {
		return nil, text, false
	}
	j := strings.Index(text[i:], MarkerEnd)
	if j < 0 {
		return nil, text, false
	}
	j += i
	if err := json.Unmarshal([]byte(text[i+len(Marker):j]), &items); err != nil || !hasCompaction(items) {
		return nil, text, false
	}
	rest = strings.TrimSpace(text[:i]) + "\n\n" + strings.TrimSpace(text[j+len(MarkerEnd):])
	return items, strings.TrimSpace(rest), true
}

// Strip returns msgs with every window removed from their text (for a
// summarizer that writes text: the encrypted content is nothing to it).
// msgs itself is returned when none holds one.
func Strip(msgs []agentctx.Message) []agentctx.Message {
	var out []agentctx.Message
	for i := range msgs {
		if msgs[i].Role != agentctx.RoleUser || !msgs[i].Content.IsText() {
			continue
		}
		if _, rest, ok := Split(msgs[i].Content.Text()); ok {
			if out == nil {
				out = append([]agentctx.Message(nil), msgs...)
			}
			out[i] = agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(rest))
		}
	}
	if out == nil {
		return msgs
	}
	return out
}

func hasCompaction(items []json.RawMessage) bool {
	for _, it := range items {
		var v struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(it, &v) == nil && v.Type == "compaction" {
			return true
		}
	}
	return false
}

type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type inputItem struct {
	Type      string        `json:"type"`
	Role      string        `json:"role,omitempty"`
	Content   []contentPart `json:"content,omitempty"`
	CallID    string        `json:"call_id,omitempty"`
	Name      string        `json:"name,omitempty"`
	Arguments *string       `json:"arguments,omitempty"`
	Output    *string       `json:"output,omitempty"`
}

// Items returns messages as Responses input items: a system message as a
// developer message, user and assistant text as message items, an
// assistant's tool calls as function_call items, a tool message as a
// function_call_output; a summary holding a window as the window's items
// and its text. When maxChars > 0 and the texts (outputs and messages)
// exceed it, the longest are cut in their middle to one length, so that
// they fit: the originals are stored, and the summary's pointers say
// where.
func Items(msgs []agentctx.Message, maxChars int) ([]json.RawMessage, error) {
	type entry struct {
		raw  json.RawMessage
		item *inputItem
	}
	var es []entry
	var texts []*string
	add := func(it inputItem) {
		es = append(es, entry{item: &it})
		switch {
		case it.Output != nil:
			texts = append(texts, it.Output)
		case len(it.Content) > 0:
			texts = append(texts, &it.Content[0].Text)
		}
	}
	for i := range msgs {
		m := &msgs[i]
		text := textOf(m)
		switch m.Role {
		case agentctx.RoleTool:
			add(inputItem{Type: "function_call_output", CallID: m.ToolCallID, Output: &text})
			continue
		case agentctx.RoleUser:
			if items, rest, ok := Split(text); ok {
				for _, it := range items {
					es = append(es, entry{raw: it})
				}
				text = rest
			}
		}
		role, part := m.Role, "input_text"
		switch role {
		case agentctx.RoleSystem:
			role = "developer"
		case agentctx.RoleAssistant:
			part = "output_text"
		}
		if strings.TrimSpace(text) != "" {
			add(inputItem{Type: "message", Role: role, Content: []contentPart{{Type: part, Text: text}}})
		}
		for _, tc := range m.ToolCalls {
			args := tc.Function.Arguments
			add(inputItem{Type: "function_call", CallID: tc.ID, Name: tc.Function.Name, Arguments: &args})
		}
		for _, b := range m.Content.Blocks() {
			switch b.Type {
			case agentctx.BlockToolUse:
				args := string(b.Input)
				add(inputItem{Type: "function_call", CallID: b.ID, Name: b.Name, Arguments: &args})
			case agentctx.BlockToolResult:
				res := b.Content.AsText()
				add(inputItem{Type: "function_call_output", CallID: b.ToolUseID, Output: &res})
			}
		}
	}
	fit(texts, maxChars)
	out := make([]json.RawMessage, 0, len(es))
	for _, e := range es {
		if e.raw != nil {
			out = append(out, e.raw)
			continue
		}
		b, err := json.Marshal(e.item)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// fit cuts the longest texts in their middle to one length so that all
// of them hold at most max characters (bytes) in all; nothing when max
// <= 0 or they fit.
func fit(texts []*string, max int) {
	total := 0
	for _, t := range texts {
		total += len(*t)
	}
	if max <= 0 || total <= max {
		return
	}
	// The largest length L with sum(min(len, L)) <= max.
	lo, hi := 0, max
	for lo < hi {
		mid := (lo + hi + 1) / 2
		n := 0
		for _, t := range texts {
			n += min(len(*t), mid)
		}
		if n <= max {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	for _, t := range texts {
		if len(*t) > lo {
			*t = cutMiddle(*t, lo)
		}
	}
}

// cutMiddle keeps about n bytes of s, its head and tail, on rune
// boundaries, with a note of what was left out.
func cutMiddle(s string, n int) string {
	head, tail := n*2/3, n/3
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail > 0 && !utf8.RuneStart(s[len(s)-tail]) {
		tail--
	}
	return s[:head] + fmt.Sprintf("\n[... %d characters left out here; the original is stored ...]\n", len(s)-head-tail) + s[len(s)-tail:]
}

// textOf returns a message's text: its string content, or its text blocks
// joined.
func textOf(m *agentctx.Message) string {
	if m.Content.IsText() {
		return m.Content.Text()
	}
	var parts []string
	for _, b := range m.Content.Blocks() {
		if b.Type == agentctx.BlockText && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Request is one compaction call.
type Request struct {
	// BaseURL is the API's base URL without /v1, as the proxy's upstream
	// (https://api.openai.com): Path is appended.
	BaseURL string
	// Header holds the headers to send: the client's credentials
	// (Authorization, OpenAI-Organization, OpenAI-Project) and whatever
	// else the caller chooses. Content-Type is set.
	Header http.Header
	// Model is the client's model.
	Model string
	// Input is the items to compact.
	Input []json.RawMessage
}

// Result is a compaction's answer.
type Result struct {
	// Window is the answer's output: the user messages, then the
	// compaction item.
	Window []json.RawMessage
	// Body is the whole answer, its usage included.
	Body []byte
}

// Error is an answer other than 200; Body is its start (a provider's
// error, which holds no credentials).
type Error struct {
	StatusCode int
	Body       string
}

func (e *Error) Error() string {
	return fmt.Sprintf("responses compaction: upstream answered %d: %s", e.StatusCode, e.Body)
}

// ErrNoCompaction is returned for an answer without a compaction item.
var ErrNoCompaction = errors.New("responses compaction: the answer holds no compaction item")

// Compact calls POST /v1/responses/compact with client and returns the
// compacted window. ctx bounds the call.
func Compact(ctx context.Context, client *http.Client, r Request) (*Result, error) {
	if client == nil {
		client = http.DefaultClient
	}
	body, err := json.Marshal(struct {
		Model string            `json:"model"`
		Input []json.RawMessage `json:"input"`
	}{r.Model, r.Input})
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(r.BaseURL, "/")+Path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range r.Header {
		hr.Header[k] = append([]string(nil), vs...)
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(hr)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		body := secret.Scrub(string(data), r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
		return nil, &Error{StatusCode: resp.StatusCode, Body: fmt.Sprintf("%.200s", body)}
	}
	var v struct {
		Output []json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("responses compaction: reading the answer: %w", err)
	}
	if !hasCompaction(v.Output) {
		return nil, ErrNoCompaction
	}
	return &Result{Window: v.Output, Body: data}, nil
}
