package transcript

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// OpenHands keeps a run as a list of events, not messages: actions (the
// agent runs a command, reads or edits a file, thinks, finishes; the user
// sends a message) and observations (what an action produced). Its
// evaluation output (output.jsonl) holds one record per benchmark instance,
// with the events in "history". importOpenHands turns the events into the
// OpenAI chat messages OpenHands sends to the model:
//
//   - the "system" action is a system message; a user "message" action is a
//     user message; an agent "message" action (and a "finish" without tool
//     call) is an assistant message;
//   - an action with tool_call_metadata is a call: the assistant message of
//     its model response (the response's text, and one tool_calls entry per
//     call of that response, with the arguments as the model sent them);
//   - an observation with tool_call_metadata is the role "tool" message
//     answering its call: its content (with the command's prefix and suffix
//     for command output), the tool's "name", and messageStatus "error" for
//     a failure (success false, a non-zero exit code, an "error"
//     observation, content starting with "ERROR:");
//   - an observation without a call (an error the agent caused without a
//     valid call, output of a command the user ran) is a user message;
//   - recall actions and observations, state changes and empty events are
//     skipped (Document.SkippedKinds counts them by action or observation).
//
// Every message keeps its event's "timestamp".

// isOpenHandsRecord reports whether the members are an OpenHands
// evaluation record (an object with a "history" of events) rather than a
// message or a Claude Code record.
func isOpenHandsRecord(ms []rawjson.Member) bool {
	h := findRaw(ms, "history")
	return findRaw(ms, "role") == nil && findRaw(ms, "type") == nil && rawjson.Kind(h) == '['
}

// isOpenHandsEvent reports whether an object is an OpenHands event.
func isOpenHandsEvent(v []byte) bool {
	ms, err := rawjson.Members(v)
	if err != nil || findRaw(ms, "role") != nil {
		return false
	}
	return findRaw(ms, "source") != nil && (findRaw(ms, "action") != nil || findRaw(ms, "observation") != nil)
}

type ohEvent struct {
	ID          json.RawMessage `json:"id"`
	Timestamp   string          `json:"timestamp"`
	Source      string          `json:"source"`
	Message     string          `json:"message"`
	Action      string          `json:"action"`
	Observation string          `json:"observation"`
	Content     string          `json:"content"`
	Success     *bool           `json:"success"`
	Args        struct {
		Content      string `json:"content"`
		Thought      string `json:"thought"`
		FinalThought string `json:"final_thought"`
	} `json:"args"`
	Extras struct {
		Metadata *struct {
			ExitCode *int   `json:"exit_code"`
			Prefix   string `json:"prefix"`
			Suffix   string `json:"suffix"`
		} `json:"metadata"`
	} `json:"extras"`
	ToolCallMetadata *struct {
		FunctionName  string `json:"function_name"`
		ToolCallID    string `json:"tool_call_id"`
		ModelResponse *struct {
			ID      string `json:"id"`
			Choices []struct {
				Message struct {
					Content   json.RawMessage `json:"content"`
					ToolCalls []struct {
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"message"`
			} `json:"choices"`
		} `json:"model_response"`
	} `json:"tool_call_metadata"`
}

// ohMessage is the JSON of an imported message, members in wire order.
type ohMessage struct {
	Role          string       `json:"role"`
	Content       *string      `json:"content"`
	ToolCalls     []ohToolCall `json:"tool_calls,omitempty"`
	ToolCallID    string       `json:"tool_call_id,omitempty"`
	Name          string       `json:"name,omitempty"`
	Timestamp     string       `json:"timestamp,omitempty"`
	MessageStatus string       `json:"messageStatus,omitempty"`
}

type ohToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// parseOpenHands reads OpenHands evaluation records (JSON Lines, or one
// object) into one conversation per record.
func parseOpenHands(data []byte, values [][]byte) (*agentctx.Document, error) {
	convs := make([]*agentctx.Document, 0, len(values))
	for k, v := range values {
		var rec struct {
			InstanceID json.RawMessage   `json:"instance_id"`
			History    []json.RawMessage `json:"history"`
		}
		err := json.Unmarshal(v, &rec)
		if err != nil {
			return nil, agentctx.InputErrorAt(data, rawjson.Offset(data, v), fmt.Sprintf("OpenHands record %d: %v", k+1, err))
		}
		recordAt := rawjson.Offset(data, v)
		var conv *ohConv
		if elems, ok := messageHistory(v); ok {
			// A record whose history holds the messages themselves (the
			// SWE-agent shape, one trajectory per line).
			conv = &ohConv{src: &ohSource{messages: true}, msgs: make([]agentctx.Message, len(elems))}
			for j, el := range elems {
				if conv.msgs[j], err = agentctx.DecodeMessage(el); err != nil {
					return nil, agentctx.InputErrorAt(data, rawjson.Offset(data, el), fmt.Sprintf("message %d: %v", j, err))
				}
			}
		} else {
			conv, err = importOpenHands(data, rec.History, func(int) int64 { return recordAt })
			if err != nil {
				return nil, err
			}
		}
		conv.src.record = v
		c := conv.document()
		c.Name = fmt.Sprintf("record-%d", k+1)
		var id string
		if json.Unmarshal(rec.InstanceID, &id) == nil && id != "" {
			c.Name = id
		} else if k := rawjson.Kind(rec.InstanceID); k == '-' || k >= '0' && k <= '9' {
			c.Name = string(rec.InstanceID)
		}
		convs = append(convs, c)
	}
	if len(convs) == 1 {
		if len(convs[0].Messages) == 0 {
			convs[0].Messages = nil
		}
		return convs[0], nil
	}
	doc := agentctx.JoinConversations(FormatOpenHands, convs, ohFile{})
	for _, c := range convs {
		for kind, n := range c.SkippedKinds {
			for range n {
				skip(doc, kind)
			}
		}
	}
	return doc, nil
}

// ohConv is one conversation imported from OpenHands: its messages as the
// record holds them, the records it skipped, and its source.
type ohConv struct {
	msgs []agentctx.Message
	skip *agentctx.Document // counts the skipped events
	src  *ohSource
}

// document returns the conversation as a document written back by its
// source.
func (c *ohConv) document() *agentctx.Document {
	d := agentctx.NewDocument(FormatOpenHands, c.msgs, c.src)
	if c.skip != nil {
		d.Skipped, d.SkippedKinds = c.skip.Skipped, c.skip.SkippedKinds
	}
	return d
}

// messageHistory returns the elements of a record's "history" when they
// are messages (see isMessages).
func messageHistory(record []byte) ([][]byte, bool) {
	ms, err := rawjson.Members(record)
	if err != nil {
		return nil, false
	}
	h := findRaw(ms, "history")
	if !isMessages(h) {
		return nil, false
	}
	elems, err := rawjson.Elements(h)
	return elems, err == nil
}

// isMessages reports whether a JSON array holds messages rather than
// OpenHands events: more of its elements have a role than are events.
func isMessages(list []byte) bool {
	elems, err := rawjson.Elements(list)
	if err != nil {
		return false
	}
	msgs, events := 0, 0
	for _, el := range elems {
		switch {
		case isOpenHandsEvent(el):
			events++
		case rawjson.Kind(el) == '{' && objectHasKey(el, "role"):
			msgs++
		}
	}
	return msgs > events
}

// importOpenHands turns one list of events into a conversation. at gives
// the offset in data to report for a bad event k.
func importOpenHands(data []byte, events []json.RawMessage, at func(k int) int64) (*ohConv, error) {
	im := &ohImporter{doc: &agentctx.Document{}, lastCallAt: -1}
	evMsg := make([]int, len(events)) // the message each event became part of
	for k, raw := range events {
		var ev ohEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, agentctx.InputErrorAt(data, at(k), fmt.Sprintf("OpenHands event %d: %v", k, err))
		}
		evMsg[k] = im.event(&ev, raw)
	}
	out := []agentctx.Message{}
	for _, m := range im.msgs {
		raw, err := rawjson.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("OpenHands import: %w", err)
		}
		msg, err := agentctx.DecodeMessage(raw)
		if err != nil {
			return nil, fmt.Errorf("OpenHands import: %w", err)
		}
		out = append(out, msg)
	}
	src := &ohSource{events: make([][]byte, len(events)), evMsg: evMsg, msgs: slices.Clone(out)}
	for k, ev := range events {
		src.events[k] = ev
	}
	return &ohConv{msgs: out, skip: im.doc, src: src}, nil
}

// ohImporter turns OpenHands events into messages, one event at a time.
type ohImporter struct {
	doc        *agentctx.Document // counts the events skipped
	msgs       []ohMessage
	lastResp   string // model response id of the last assistant message with calls
	lastCallAt int    // its index in msgs; -1 for none
}

// textOf returns a pointer to s, for a message's content.
func textOf(s string) *string { return &s }

// event reads one event, raw as read, and returns the index in msgs of
// the message it became part of, or -1 when it was skipped.
func (im *ohImporter) event(ev *ohEvent, raw json.RawMessage) int {
	tcm := ev.ToolCallMetadata
	n := len(im.msgs)
	switch {
	case ev.Action == "system":
		im.msgs = append(im.msgs, ohMessage{Role: agentctx.RoleSystem, Content: textOf(firstNonEmpty(ev.Args.Content, ev.Message)), Timestamp: ev.Timestamp})
	case ev.Action == "recall" || ev.Observation == "recall":
		skip(im.doc, "openhands/recall")
	case ev.Action != "" && tcm != nil && tcm.ToolCallID != "":
		if at, ok := im.call(ev, raw); ok {
			return at
		}
	case ev.Observation != "" && tcm != nil && tcm.ToolCallID != "":
		im.msgs = append(im.msgs, toolResultOf(ev))
	case ev.Action == "message" && ev.Source == "user":
		im.msgs = append(im.msgs, ohMessage{Role: agentctx.RoleUser, Content: textOf(firstNonEmpty(ev.Args.Content, ev.Message)), Timestamp: ev.Timestamp})
	case ev.Action == "message" || ev.Action == "finish":
		s := firstNonEmpty(ev.Args.Content, ev.Args.FinalThought, ev.Args.Thought, ev.Message)
		if s == "" {
			skip(im.doc, "openhands/"+ev.Action+" without text")
			break
		}
		im.msgs = append(im.msgs, ohMessage{Role: agentctx.RoleAssistant, Content: textOf(s), Timestamp: ev.Timestamp})
	case ev.Observation != "" && ev.Observation != "null" && ev.Observation != "agent_state_changed" && firstNonEmpty(ev.Content, ev.Message) != "":
		m := ohMessage{Role: agentctx.RoleUser, Content: textOf(firstNonEmpty(ev.Content, ev.Message)), Timestamp: ev.Timestamp}
		if ev.Observation == "error" {
			m.MessageStatus = "error"
		}
		im.msgs = append(im.msgs, m)
	default:
		skip(im.doc, "openhands/"+cmp.Or(ev.Action, ev.Observation, "event"))
	}
	if len(im.msgs) > n {
		return n
	}
	return -1
}

// call reads an action with a tool call: a new assistant message, or, when
// it comes from the same model response as the assistant message just
// before, one more call of that message, whose index it returns with true.
func (im *ohImporter) call(ev *ohEvent, raw json.RawMessage) (int, bool) {
	tcm := ev.ToolCallMetadata
	call := ohToolCall{ID: tcm.ToolCallID, Type: "function"}
	call.Function.Name = tcm.FunctionName
	thought, respID := ev.Args.Thought, ""
	if mr := tcm.ModelResponse; mr != nil && len(mr.Choices) > 0 {
		respID = mr.ID
		m := mr.Choices[0].Message
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			thought = s
		}
		for _, tc := range m.ToolCalls {
			if tc.ID == tcm.ToolCallID {
				call.Function.Arguments = tc.Function.Arguments
				if call.Function.Name == "" {
					call.Function.Name = tc.Function.Name
				}
			}
		}
	}
	if call.Function.Arguments == "" {
		call.Function.Arguments = argumentsOf(raw)
	}
	if respID != "" && respID == im.lastResp && im.lastCallAt == len(im.msgs)-1 {
		im.msgs[im.lastCallAt].ToolCalls = append(im.msgs[im.lastCallAt].ToolCalls, call)
		return im.lastCallAt, true
	}
	m := ohMessage{Role: agentctx.RoleAssistant, ToolCalls: []ohToolCall{call}, Timestamp: ev.Timestamp}
	if thought != "" {
		m.Content = textOf(thought)
	}
	im.msgs = append(im.msgs, m)
	im.lastResp, im.lastCallAt = respID, len(im.msgs)-1
	return 0, false
}

// toolResultOf returns the tool message of an observation with a tool
// call: its content with the command's prefix and suffix, an error when
// the observation or the command failed.
func toolResultOf(ev *ohEvent) ohMessage {
	tcm := ev.ToolCallMetadata
	content := ev.Content
	failed := ev.Observation == "error" || ev.Success != nil && !*ev.Success || strings.HasPrefix(content, "ERROR:")
	if md := ev.Extras.Metadata; md != nil {
		content = md.Prefix + content + md.Suffix
		if md.ExitCode != nil && *md.ExitCode != 0 {
			failed = true
		}
	}
	m := ohMessage{Role: agentctx.RoleTool, Content: textOf(content), ToolCallID: tcm.ToolCallID, Name: tcm.FunctionName, Timestamp: ev.Timestamp}
	if failed {
		m.MessageStatus = "error"
	}
	return m
}

// argumentsOf returns an action's "args" without its "thought", as JSON
// text: the arguments of a call whose model response is not recorded.
func argumentsOf(raw json.RawMessage) string {
	var ev struct {
		Args map[string]json.RawMessage `json:"args"`
	}
	if json.Unmarshal(raw, &ev) != nil || ev.Args == nil {
		return "{}"
	}
	delete(ev.Args, "thought")
	b, err := rawjson.Marshal(ev.Args)
	if err != nil {
		return "{}"
	}
	return string(bytes.TrimSpace(b))
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
