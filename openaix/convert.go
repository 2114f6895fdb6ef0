package openaix

import (
	"encoding/json"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"

	"github.com/agentctx/agentctx"
)

// Messages converts SDK message params to agentctx messages, for programs
// that call the pipeline themselves. Messages with string content (and
// assistant messages with function tool calls) are converted field by
// field; any other message goes through its JSON.
func Messages(params []openai.ChatCompletionMessageParamUnion) ([]agentctx.Message, error) {
	out := make([]agentctx.Message, len(params))
	for i, p := range params {
		m, ok := direct(p)
		if !ok {
			raw, err := json.Marshal(p)
			if err == nil {
				m, err = agentctx.DecodeMessage(raw)
			}
			if err != nil {
				return nil, fmt.Errorf("openaix: message %d: %w", i, err)
			}
		}
		out[i] = m
	}
	return out, nil
}

func direct(p openai.ChatCompletionMessageParamUnion) (agentctx.Message, bool) {
	switch {
	case p.OfSystem != nil && param.IsOmitted(p.OfSystem.Name) && !param.IsOmitted(p.OfSystem.Content.OfString):
		return agentctx.NewMessage(agentctx.RoleSystem, agentctx.Text(p.OfSystem.Content.OfString.Value)), true
	case p.OfDeveloper != nil && param.IsOmitted(p.OfDeveloper.Name) && !param.IsOmitted(p.OfDeveloper.Content.OfString):
		return agentctx.NewMessage("developer", agentctx.Text(p.OfDeveloper.Content.OfString.Value)), true
	case p.OfUser != nil && param.IsOmitted(p.OfUser.Name) && !param.IsOmitted(p.OfUser.Content.OfString):
		return agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(p.OfUser.Content.OfString.Value)), true
	case p.OfTool != nil && !param.IsOmitted(p.OfTool.Content.OfString):
		m := agentctx.NewMessage(agentctx.RoleTool, agentctx.Text(p.OfTool.Content.OfString.Value))
		m.ToolCallID = p.OfTool.ToolCallID
		return m, true
	case p.OfAssistant != nil:
		a := p.OfAssistant
		if !param.IsOmitted(a.Name) || !param.IsOmitted(a.Refusal) || !param.IsOmitted(a.Audio) || !param.IsOmitted(a.FunctionCall) ||
			len(a.Content.OfArrayOfContentParts) > 0 {
			return agentctx.Message{}, false
		}
		var content agentctx.Content // absent
		if !param.IsOmitted(a.Content.OfString) {
			content = agentctx.Text(a.Content.OfString.Value)
		}
		m := agentctx.NewMessage(agentctx.RoleAssistant, content)
		for _, c := range a.ToolCalls {
			if c.OfFunction == nil {
				return agentctx.Message{}, false
			}
			m.ToolCalls = append(m.ToolCalls, agentctx.ToolCall{ID: c.OfFunction.ID, Type: "function",
				Function: agentctx.FunctionCall{Name: c.OfFunction.Function.Name, Arguments: c.OfFunction.Function.Arguments}})
		}
		return m, true
	}
	return agentctx.Message{}, false
}

// MessageParams converts agentctx messages (a prepared list, for example)
// to SDK message params. Messages with string content and plain function
// tool calls are built field by field; any other message goes through its
// JSON. Metadata (timestamp, messageStatus) is left out.
func MessageParams(msgs []agentctx.Message) ([]openai.ChatCompletionMessageParamUnion, error) {
	msgs = agentctx.StripMetadata(msgs)
	out := make([]openai.ChatCompletionMessageParamUnion, len(msgs))
	for i, m := range msgs {
		p, ok := directParam(m)
		if !ok {
			raw, err := m.MarshalJSON()
			if err == nil {
				err = json.Unmarshal(raw, &p)
			}
			if err != nil {
				return nil, fmt.Errorf("openaix: message %d: %w", i, err)
			}
		}
		out[i] = p
	}
	return out, nil
}

func directParam(m agentctx.Message) (openai.ChatCompletionMessageParamUnion, bool) {
	for _, k := range []string{"name", "refusal", "audio", "function_call"} {
		if _, ok := m.Field(k); ok {
			return openai.ChatCompletionMessageParamUnion{}, false
		}
	}
	text, isText := m.Content.Text(), m.Content.IsText()
	switch m.Role {
	case agentctx.RoleSystem:
		if isText && len(m.ToolCalls) == 0 {
			return openai.SystemMessage(text), true
		}
	case "developer":
		if isText && len(m.ToolCalls) == 0 {
			return openai.DeveloperMessage(text), true
		}
	case agentctx.RoleUser:
		if isText && len(m.ToolCalls) == 0 {
			return openai.UserMessage(text), true
		}
	case agentctx.RoleTool:
		if isText {
			return openai.ToolMessage(text, m.ToolCallID), true
		}
	case agentctx.RoleAssistant:
		a := &openai.ChatCompletionAssistantMessageParam{}
		switch m.Content.Kind() {
		case agentctx.ContentText:
			a.Content.OfString = openai.String(text)
		case agentctx.ContentNull, agentctx.ContentNone:
		default:
			return openai.ChatCompletionMessageParamUnion{}, false
		}
		for _, c := range m.ToolCalls {
			if c.Type != "" && c.Type != "function" {
				return openai.ChatCompletionMessageParamUnion{}, false
			}
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID: c.ID, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Function.Name, Arguments: c.Function.Arguments}}})
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: a}, true
	}
	return openai.ChatCompletionMessageParamUnion{}, false
}

// Message converts a reply of the model (a choice's message) to an
// agentctx message, every member as the API sent it.
func Message(m *openai.ChatCompletionMessage) (agentctx.Message, error) {
	raw := m.RawJSON()
	if raw == "" {
		b, err := json.Marshal(m)
		if err != nil {
			return agentctx.Message{}, err
		}
		raw = string(b)
	}
	return agentctx.DecodeMessage([]byte(raw))
}
