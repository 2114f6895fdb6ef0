package anthropicx

import (
	"encoding/json"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/agentctx/agentctx"
)

// Messages converts SDK message params to agentctx messages, for programs
// that call the pipeline themselves. Text, tool_use and tool_result blocks
// made only of the fields agentctx models (no cache_control, citations,
// caller, ...) are converted field by field; any other block goes through
// its JSON. Tool inputs given as json.RawMessage keep their bytes; an
// is_error set to false is left out (it means the same as none).
func Messages(params []anthropic.MessageParam) ([]agentctx.Message, error) {
	out := make([]agentctx.Message, len(params))
	for i, m := range params {
		blocks := make([]agentctx.Block, len(m.Content))
		for j, c := range m.Content {
			b, err := block(c)
			if err != nil {
				return nil, fmt.Errorf("anthropicx: message %d, block %d: %w", i, j, err)
			}
			blocks[j] = b
		}
		out[i] = agentctx.NewMessage(string(m.Role), agentctx.BlockList(blocks...))
	}
	return out, nil
}

func block(c anthropic.ContentBlockParamUnion) (agentctx.Block, error) {
	switch {
	case c.OfText != nil && len(c.OfText.Citations) == 0 && param.IsOmitted(c.OfText.CacheControl):
		return agentctx.TextBlock(c.OfText.Text), nil
	case c.OfToolUse != nil && param.IsOmitted(c.OfToolUse.CacheControl) && param.IsOmitted(c.OfToolUse.Caller) && param.IsOmitted(c.OfToolUse.ToolsetName):
		in, err := jsonBytes(c.OfToolUse.Input)
		if err != nil {
			return agentctx.Block{}, err
		}
		return agentctx.ToolUseBlock(c.OfToolUse.ID, c.OfToolUse.Name, in), nil
	case c.OfToolResult != nil && param.IsOmitted(c.OfToolResult.CacheControl) && param.IsOmitted(c.OfToolResult.ToolsetName):
		r := c.OfToolResult
		parts := make([]agentctx.Block, len(r.Content))
		for k, p := range r.Content {
			if p.OfText == nil || len(p.OfText.Citations) > 0 || !param.IsOmitted(p.OfText.CacheControl) {
				return viaJSON(c)
			}
			parts[k] = agentctx.TextBlock(p.OfText.Text)
		}
		content := agentctx.BlockList(parts...)
		if len(parts) == 0 {
			content = agentctx.Text("")
		}
		b := agentctx.ToolResultBlock(r.ToolUseID, content, r.IsError.Value)
		if len(parts) == 0 && param.IsOmitted(r.Content) {
			b.Content = agentctx.Content{} // no content member
		}
		return b, nil
	}
	return viaJSON(c)
}

func viaJSON(c anthropic.ContentBlockParamUnion) (agentctx.Block, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return agentctx.Block{}, err
	}
	var b agentctx.Block
	if err := b.UnmarshalJSON(raw); err != nil {
		return agentctx.Block{}, err
	}
	return b, nil
}

// MessageParams converts agentctx messages (a prepared list, for example)
// to SDK message params. String content becomes one text block. Text,
// tool_use and tool_result blocks without other members are built field by
// field (tool inputs as json.RawMessage, bytes kept); any other block goes
// through its JSON. Metadata (timestamp, messageStatus) is left out.
func MessageParams(msgs []agentctx.Message) ([]anthropic.MessageParam, error) {
	out := make([]anthropic.MessageParam, len(msgs))
	for i, m := range msgs {
		var blocks []anthropic.ContentBlockParamUnion
		if m.Content.IsText() {
			blocks = []anthropic.ContentBlockParamUnion{anthropic.NewTextBlock(m.Content.Text())}
		} else {
			bs := m.Content.Blocks()
			blocks = make([]anthropic.ContentBlockParamUnion, len(bs))
			for j, b := range bs {
				p, err := blockParam(b)
				if err != nil {
					return nil, fmt.Errorf("anthropicx: message %d, block %d: %w", i, j, err)
				}
				blocks[j] = p
			}
		}
		out[i] = anthropic.MessageParam{Role: anthropic.MessageParamRole(m.Role), Content: blocks}
	}
	return out, nil
}

// plain reports whether a block has none of the members that the field by
// field conversion would drop.
func plain(b agentctx.Block, keys ...string) bool {
	for _, k := range keys {
		if _, ok := b.Field(k); ok {
			return false
		}
	}
	return true
}

func blockParam(b agentctx.Block) (anthropic.ContentBlockParamUnion, error) {
	switch {
	case b.Type == agentctx.BlockText && plain(b, "cache_control", "citations"):
		return anthropic.NewTextBlock(b.Text), nil
	case b.Type == agentctx.BlockToolUse && plain(b, "cache_control", "caller", "toolset_name"):
		return anthropic.ContentBlockParamUnion{OfToolUse: &anthropic.ToolUseBlockParam{
			ID: b.ID, Name: b.Name, Input: json.RawMessage(b.Input)}}, nil
	case b.Type == agentctx.BlockToolResult && plain(b, "cache_control", "toolset_name"):
		r := &anthropic.ToolResultBlockParam{ToolUseID: b.ToolUseID}
		if b.IsError {
			r.IsError = anthropic.Bool(true)
		}
		switch {
		case b.Content.IsText():
			r.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: b.Content.Text()}}}
		case b.Content.Kind() == agentctx.ContentBlocks:
			for _, p := range b.Content.Blocks() {
				if p.Type != agentctx.BlockText || !plain(p, "cache_control", "citations") {
					return blockViaJSON(b)
				}
				r.Content = append(r.Content, anthropic.ToolResultBlockParamContentUnion{OfText: &anthropic.TextBlockParam{Text: p.Text}})
			}
		case !b.Content.IsEmpty():
			return blockViaJSON(b)
		}
		return anthropic.ContentBlockParamUnion{OfToolResult: r}, nil
	}
	return blockViaJSON(b)
}

func blockViaJSON(b agentctx.Block) (anthropic.ContentBlockParamUnion, error) {
	raw, err := b.MarshalJSON()
	if err != nil {
		return anthropic.ContentBlockParamUnion{}, err
	}
	var p anthropic.ContentBlockParamUnion
	if err := json.Unmarshal(raw, &p); err != nil {
		return anthropic.ContentBlockParamUnion{}, err
	}
	return p, nil
}

// Message converts a reply of the model to an agentctx message with every
// content block as the API sent it (thinking signatures, citations, server
// tool blocks included); the reply's other members (id, model, usage, ...)
// are left out, as they are not part of a request.
func Message(m *anthropic.Message) (agentctx.Message, error) {
	blocks := make([]agentctx.Block, len(m.Content))
	for i, c := range m.Content {
		raw := c.RawJSON()
		if raw == "" {
			b, err := json.Marshal(c)
			if err != nil {
				return agentctx.Message{}, err
			}
			raw = string(b)
		}
		if err := blocks[i].UnmarshalJSON([]byte(raw)); err != nil {
			return agentctx.Message{}, fmt.Errorf("anthropicx: reply block %d: %w", i, err)
		}
	}
	role := string(m.Role)
	if role == "" {
		role = agentctx.RoleAssistant
	}
	return agentctx.NewMessage(role, agentctx.BlockList(blocks...)), nil
}
