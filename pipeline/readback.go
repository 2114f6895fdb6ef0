package pipeline

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/prune"
	"github.com/agentctx/agentctx/workspace"
)

// ReadBack says how a prepared request lets the model read back what was
// replaced by a reference (an offloaded result, a pruned result's
// original).
type ReadBack string

// ReadBack modes.
const (
	// ReadBackTools declares the workspace's read tools
	// (get_knowledge_by_id, ...) in the request body's "tools" when the
	// prepared messages name one and the body does not declare them yet,
	// so that the request can be sent as it is (WithReadTools). The agent
	// loop answers their calls with workspace.Workspace.Execute.
	ReadBackTools ReadBack = "tools"
	// ReadBackPaths adds to each reference the absolute path of the
	// artifact's content file, for agents that read files with their own
	// tool (WithPaths); the store must keep files (a directory store).
	ReadBackPaths ReadBack = "paths"
	// ReadBackNone leaves the request as the steps made it.
	ReadBackNone ReadBack = "none"
)

// ParseReadBack returns the ReadBack mode named s ("" is ReadBackTools).
func ParseReadBack(s string) (ReadBack, error) {
	switch ReadBack(s) {
	case "":
		return ReadBackTools, nil
	case ReadBackTools, ReadBackPaths, ReadBackNone:
		return ReadBack(s), nil
	}
	return "", fmt.Errorf("%w: unknown read-back mode %q (want tools, paths or none)", ErrInvalidOption, s)
}

// NamesReadTool reports whether msgs tell the model to call a read tool:
// a reference, a pruned result's placeholder or a summary naming
// get_knowledge_by_id.
func NamesReadTool(msgs []agentctx.Message) bool {
	call := workspace.ToolGetKnowledgeByID + "("
	for _, m := range msgs {
		if m.Content.IsText() {
			if strings.Contains(m.Content.Text(), call) {
				return true
			}
			continue
		}
		for _, b := range m.Content.Blocks() {
			if strings.Contains(b.Text, call) || b.Type == agentctx.BlockToolResult && strings.Contains(b.Content.AsText(), call) {
				return true
			}
		}
	}
	return false
}

// WithReadTools returns doc, a request body, with the workspace's read
// tools added to its "tools" member when msgs name one (NamesReadTool) and
// the body does not declare get_knowledge_by_id yet: in the OpenAI Chat
// Completions shape when the body's tools or messages are OpenAI's, else
// in the Anthropic shape. added reports whether anything was added; doc
// is returned as it is otherwise (and for a document that is not a JSON
// object). doc is not modified.
func WithReadTools(doc *agentctx.Document, msgs []agentctx.Message) (out *agentctx.Document, added bool, err error) {
	if doc.Format != agentctx.FormatObject || !NamesReadTool(msgs) {
		return doc, false, nil
	}
	raw, _ := doc.Member("tools")
	var list []json.RawMessage
	if len(raw) > 0 && rawjson.Kind(raw) == '[' {
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, false, fmt.Errorf("pipeline: read tools: the body's tools: %w", err)
		}
	} else if len(raw) > 0 && string(raw) != "null" {
		return nil, false, fmt.Errorf("%w: the body's tools is not a list", agentctx.ErrInvalidInput)
	}
	openai := false
	for _, t := range list {
		var d struct {
			Name     string `json:"name"`
			Type     string `json:"type"`
			Function *struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(t, &d) != nil {
			continue
		}
		if d.Function != nil {
			openai, d.Name = true, d.Function.Name
		}
		if d.Name == workspace.ToolGetKnowledgeByID {
			return doc, false, nil
		}
	}
	if len(list) == 0 {
		for _, m := range msgs {
			if m.Role == agentctx.RoleTool || len(m.ToolCalls) > 0 {
				openai = true
				break
			}
		}
	}
	for _, d := range workspace.Tools() {
		var b []byte
		if openai {
			b, err = json.Marshal(d.OpenAI())
		} else {
			b, err = json.Marshal(d)
		}
		if err != nil {
			return nil, false, err
		}
		list = append(list, b)
	}
	b, err := json.Marshal(list)
	if err != nil {
		return nil, false, err
	}
	out, err = doc.WithMember("tools", b)
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// fileMark starts what WithPaths adds to a reference.
const fileMark = "\n<file>"

// WithPaths returns msgs with, after each reference to an offloaded result
// and each pruned result's placeholder that names its stored original, the
// absolute path of the artifact's content file, for an agent that reads
// files with its own tool. It adds nothing when the Pipeline's store keeps
// no files (workspace.Pather), or for an artifact whose file does not
// exist. The paths depend on the artifacts alone, so every request of a
// session gets the same bytes. msgs is not modified (it is returned
// itself when nothing is added).
func (p *Pipeline) WithPaths(msgs []agentctx.Message) []agentctx.Message {
	out, _ := p.withPaths(msgs)
	return out
}

// AddPaths returns res with WithPaths applied to its Messages, and its
// Sources and Facts saying which messages that changed (a message it
// changed has Source -1 and the Facts of its new encoding, without a
// token count): res itself when it changed none. res is not modified.
//
// A session's requests repeat the messages a path was added to: the
// Pipeline keeps, from one call to the next, each message it changed with
// its new encoding, by the hash of the message it was given, and gives the
// very same message and Facts when that message comes again.
func (p *Pipeline) AddPaths(res *Result) *Result {
	pather, ok := p.opts.Store.(workspace.Pather)
	if !ok || p.ws == nil {
		return res
	}
	var missed bool // a reference's file was not found (it may be later)
	add := p.pathAdder(pather, &missed)
	m := &p.pathed
	m.mu.Lock()
	defer m.mu.Unlock()
	results := 0
	for i := range res.Messages {
		if res.Messages[i].HoldsToolResult() {
			results++
		}
	}
	m.bound(results)
	var q *Result
	for i := range res.Messages {
		if !res.Messages[i].HoldsToolResult() {
			continue // nothing to add a path to: not remembered either
		}
		var h agentctx.Hash
		if i < len(res.Facts) {
			h = res.Facts[i].Hash
		}
		e, known := m.lookup(h)
		if !known {
			missed = false
			one, changed := mapToolResults(res.Messages[i:i+1], add)
			switch {
			case len(changed) > 0:
				hash, enc, err := agentctx.HashOf(one[0], nil)
				if err != nil {
					continue // the message as it was: it encoded before
				}
				// Kept as decoded from its new encoding: the message
				// mapToolResults made holds on to what its original
				// was decoded from (the text of a result a reference
				// replaced, say), which the memo must not keep.
				msg := one[0]
				if owned, err := agentctx.DecodeOwnedMessage(enc); err == nil {
					msg = owned
				}
				e = &pathedMsg{msg: msg, facts: agentctx.Facts{Encoding: enc, Hash: hash}}
			case missed:
				continue // looked at again next time
			}
			m.remember(h, e)
		}
		if e == nil {
			continue // left as it is
		}
		if q == nil {
			c := *res
			c.Messages = slices.Clone(res.Messages)
			c.Sources = slices.Clone(res.Sources)
			c.Facts = slices.Clone(res.Facts)
			q = &c
		}
		q.Messages[i] = e.msg
		if i < len(q.Sources) {
			q.Sources[i] = -1
		}
		if i < len(q.Facts) {
			q.Facts[i] = e.facts
		}
	}
	if q == nil {
		return res
	}
	return q
}

// pathedMemo holds what AddPaths did to the messages of a Pipeline's
// calls, by the hash of the message it was given: most of a session's
// messages come again in its next request. Most are left as they are:
// of those it keeps the hash alone.
type pathedMemo struct {
	mu      sync.Mutex
	same    map[agentctx.Hash]struct{}
	changed map[agentctx.Hash]*pathedMsg
}

// maxPathed bounds a pathedMemo beyond four times a call's messages: it
// starts again when past it.
const maxPathed = 4096

// pathedMsg is a message AddPaths made and the Facts of its encoding.
type pathedMsg struct {
	msg   agentctx.Message
	facts agentctx.Facts
}

// bound starts the memo again when it holds more than four times a
// call's n messages that hold a result, and maxPathed more; it is made
// for n. m.mu is held.
func (m *pathedMemo) bound(n int) {
	if m.same == nil || len(m.same)+len(m.changed) > 4*n+maxPathed {
		m.same = make(map[agentctx.Hash]struct{}, n)
		m.changed = make(map[agentctx.Hash]*pathedMsg)
	}
}

// lookup returns what AddPaths made of the message of hash h (nil: left
// as it is), and whether the memo knows. The zero hash is never known.
// m.mu is held.
func (m *pathedMemo) lookup(h agentctx.Hash) (*pathedMsg, bool) {
	if h.IsZero() {
		return nil, false
	}
	if _, ok := m.same[h]; ok {
		return nil, true
	}
	e, ok := m.changed[h]
	return e, ok
}

// remember keeps what AddPaths made of the message of hash h (nil: left
// as it is). m.mu is held.
func (m *pathedMemo) remember(h agentctx.Hash, e *pathedMsg) {
	switch {
	case h.IsZero():
	case e == nil:
		m.same[h] = struct{}{}
	default:
		m.changed[h] = e
	}
}

// withPaths is WithPaths, with the indices of the messages it changed.
func (p *Pipeline) withPaths(msgs []agentctx.Message) ([]agentctx.Message, []int) {
	pather, ok := p.opts.Store.(workspace.Pather)
	if !ok || p.ws == nil {
		return msgs, nil
	}
	return mapToolResults(msgs, p.pathAdder(pather, new(bool)))
}

// pathAdder returns the function that adds its path to a tool result
// that references a stored artifact (for mapToolResults); it sets *missed
// when the artifact's file was not found.
func (p *Pipeline) pathAdder(pather workspace.Pather, missed *bool) func(agentctx.ToolResult) (agentctx.Content, bool) {
	ns := p.ws.Namespace()
	placeholder := p.opts.Prune.Placeholder
	if placeholder == "" {
		placeholder = prune.DefaultPlaceholder
	}
	return func(r agentctx.ToolResult) (agentctx.Content, bool) {
		if !r.Content.IsText() {
			return agentctx.Content{}, false
		}
		text := r.Content.Text()
		id, what, ok := referencedArtifact(text, placeholder)
		if !ok || strings.Contains(text, fileMark) {
			return agentctx.Content{}, false
		}
		path, ok := p.paths.path(pather, ns, id)
		if !ok {
			*missed = true
			return agentctx.Content{}, false
		}
		return agentctx.Text(text + fileMark + path + "</file> (" + what + ": read it with your file tool)"), true
	}
}

// pathMemo remembers the absolute path of the content file of every
// artifact WithPaths found, so that a session's next request names it
// without asking the file system again: an artifact is written once and
// its file never changes, so a path found once stays the artifact's. (A
// file removed since by retention keeps its path in the requests that
// named it, as the provider's cache of those requests does.) It holds at
// most maxMemoPaths paths.
type pathMemo struct {
	mu    sync.Mutex
	paths map[string]string // namespace "\x00" id → absolute path
}

// maxMemoPaths bounds a pathMemo: it starts again when full.
const maxMemoPaths = 1 << 14

// path returns the absolute path of the content file of artifact id in
// namespace ns, and whether that file exists.
func (m *pathMemo) path(pather workspace.Pather, ns, id string) (string, bool) {
	key := ns + "\x00" + id
	m.mu.Lock()
	path, ok := m.paths[key]
	m.mu.Unlock()
	if ok {
		return path, true
	}
	path, err := pather.Path(ns, id)
	if err != nil {
		return "", false
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if _, err := os.Stat(path); err != nil {
		return "", false // not written yet, or gone: asked again next time
	}
	m.mu.Lock()
	if m.paths == nil || len(m.paths) >= maxMemoPaths {
		m.paths = make(map[string]string)
	}
	m.paths[key] = path
	m.mu.Unlock()
	return path, true
}

// knowledgeRef is how a workspace reference to an offloaded result starts.
const knowledgeRef = "<knowledge_list>\n<knowledge id=\""

// prunedRef is how a pruned result's placeholder names its artifact (see
// workspace.ReadCall).
const prunedRef = workspace.ToolGetKnowledgeByID + `(artifact_id="`

// referencedArtifact returns the artifact a reference or a pruned result's
// placeholder names, and what of it the artifact holds.
func referencedArtifact(text, placeholder string) (id, what string, ok bool) {
	switch {
	case strings.HasPrefix(text, placeholder+"\n") && strings.Contains(text, prunedRef):
		rest := text[strings.Index(text, prunedRef)+len(prunedRef):]
		end := strings.IndexByte(rest, '"')
		if end < 0 {
			return "", "", false
		}
		return rest[:end], "the original output", true
	case strings.HasPrefix(text, knowledgeRef):
		rest := text[len(knowledgeRef):]
		end := strings.IndexByte(rest, '"')
		if end < 0 {
			return "", "", false
		}
		return htmlUnescape(rest[:end]), "the whole content", true
	}
	return "", "", false
}

func htmlUnescape(s string) string {
	if !strings.Contains(s, "&") {
		return s
	}
	return strings.NewReplacer("&quot;", `"`, "&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}
