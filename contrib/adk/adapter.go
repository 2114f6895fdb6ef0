// Package agentctxadk runs agentctx's pipeline inside an adk-go agent
// (google.golang.org/adk): a BeforeModelCallback that prepares the contents
// of every model request (prune, offload large function responses to the
// workspace, compact).
//
//	p, _ := pipeline.New(pipeline.Options{SessionID: "s1"})
//	agent, _ := llmagent.New(llmagent.Config{
//		Model:                model,
//		BeforeModelCallbacks: []llmagent.BeforeModelCallback{agentctxadk.BeforeModelCallback(p, nil)},
//		...
//	})
//
// The callback replaces the request's Contents only: the session's events,
// the history the agent keeps, are never modified. It is a module of its
// own, so that the agentctx module does not depend on adk-go.
package agentctxadk

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	"google.golang.org/genai"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/pipeline"
)

// Preparer runs the pipeline on a conversation: *pipeline.Pipeline
// implements it.
type Preparer interface {
	Prepare(ctx context.Context, msgs []agentctx.Message) (*pipeline.Result, error)
}

// Options configure the callback. The zero value means: a model request
// whose contents cannot be prepared fails with the error.
type Options struct {
	// OnResult, when set, is called with the result of every preparation.
	OnResult func(ctx context.Context, res *pipeline.Result)
	// FailOpen sends the contents unchanged when they cannot be prepared,
	// after logging why.
	FailOpen bool
	// Logger receives a record per failure; nil discards them.
	Logger *slog.Logger
}

// BeforeModelCallback returns the callback that prepares the contents of
// every model request with p. opts may be nil.
func BeforeModelCallback(p Preparer, opts *Options) llmagent.BeforeModelCallback {
	var o Options
	if opts != nil {
		o = *opts
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return func(ctx agent.CallbackContext, req *model.LLMRequest) (*model.LLMResponse, error) {
		out, res, err := PrepareContents(ctx, p, req.Contents)
		if err != nil {
			if !o.FailOpen {
				return nil, fmt.Errorf("agentctx: prepare model request: %w", err)
			}
			log.LogAttrs(ctx, slog.LevelWarn, "agentctx: model request sent unprepared", slog.String("error", err.Error()))
			return nil, nil
		}
		if o.OnResult != nil {
			o.OnResult(ctx, res)
		}
		req.Contents = out
		return nil, nil // go on with the model call
	}
}

// indexField ties a converted message to its original content.
const indexField = "agentctx_adk_index"

// PrepareContents runs p on genai contents and returns the contents to
// send: the original *genai.Content values where the pipeline kept a
// message, copies where it replaced a function response (its response
// becomes {"result": <reference>}, or keeps its one key), and new user
// contents for summaries. in is never modified.
func PrepareContents(ctx context.Context, p Preparer, in []*genai.Content) ([]*genai.Content, *pipeline.Result, error) {
	msgs, ids := Messages(in)
	for i := range msgs {
		var err error
		if msgs[i], err = msgs[i].WithField(indexField, i); err != nil {
			return nil, nil, err
		}
	}
	res, err := p.Prepare(ctx, msgs)
	if err != nil {
		return nil, nil, err
	}
	out := make([]*genai.Content, 0, len(res.Messages))
	for _, pm := range res.Messages {
		raw, ok := pm.Field(indexField)
		i, err := strconv.Atoi(string(raw))
		if !ok || err != nil || i < 0 || i >= len(in) {
			out = append(out, &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{Text: pm.Content.AsText()}}})
			continue
		}
		out = append(out, rebuild(in[i], msgs[i], pm, ids[i]))
	}
	res.Messages = agentctx.StripMetadata(res.Messages, indexField)
	return out, res, nil
}

// rebuild returns orig, or a copy with the function responses whose
// content the pipeline changed.
func rebuild(orig *genai.Content, before, after agentctx.Message, ids map[int]string) *genai.Content {
	changed := map[string]string{}
	prev := map[string]agentctx.Content{}
	for _, b := range before.Content.Blocks() {
		if b.Type == agentctx.BlockToolResult {
			prev[b.ToolUseID] = b.Content
		}
	}
	for _, b := range after.Content.Blocks() {
		if b.Type == agentctx.BlockToolResult && !b.Content.Equal(prev[b.ToolUseID]) {
			changed[b.ToolUseID] = b.Content.AsText()
		}
	}
	if len(changed) == 0 {
		return orig
	}
	c := *orig
	c.Parts = make([]*genai.Part, len(orig.Parts))
	for k, part := range orig.Parts {
		c.Parts[k] = part
		text, ok := changed[ids[k]]
		if part == nil || part.FunctionResponse == nil || !ok {
			continue
		}
		fr := *part.FunctionResponse
		key := "result"
		if k, _, ok := singleString(fr.Response); ok {
			key = k
		}
		fr.Response = map[string]any{key: text}
		np := *part
		np.FunctionResponse = &fr
		c.Parts[k] = &np
	}
	return &c
}

// singleString returns the key and value of a response made of one string.
func singleString(m map[string]any) (string, string, bool) {
	if len(m) != 1 {
		return "", "", false
	}
	for k, v := range m {
		s, ok := v.(string)
		return k, s, ok
	}
	return "", "", false
}

// Messages converts genai contents to agentctx messages in the Anthropic
// shape: role "model" becomes "assistant"; text parts are text blocks,
// function calls tool_use blocks, function responses tool_result blocks
// whose content is the response's one string (as {"result": "..."}) or its
// JSON. Other parts (inline data, files, code) are left out. Calls and
// responses without an id are paired by name, in order, under synthetic
// ids. ids[i][k] is the tool id of part k of content i.
func Messages(in []*genai.Content) (msgs []agentctx.Message, ids []map[int]string) {
	msgs = make([]agentctx.Message, len(in))
	ids = make([]map[int]string, len(in))
	pending := map[string][]string{} // name -> synthetic ids of calls without an id
	for i, c := range in {
		ids[i] = map[int]string{}
		if c == nil {
			msgs[i] = agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList())
			continue
		}
		role := c.Role
		if role == genai.RoleModel {
			role = agentctx.RoleAssistant
		}
		var blocks []agentctx.Block
		for k, part := range c.Parts {
			switch {
			case part == nil:
			case part.FunctionCall != nil:
				fc := part.FunctionCall
				id := fc.ID
				if id == "" {
					id = fmt.Sprintf("adk_call_%d_%d", i, k)
					pending[fc.Name] = append(pending[fc.Name], id)
				}
				args, err := json.Marshal(fc.Args)
				if err != nil || fc.Args == nil {
					args = []byte("{}")
				}
				ids[i][k] = id
				blocks = append(blocks, agentctx.ToolUseBlock(id, fc.Name, args))
			case part.FunctionResponse != nil:
				fr := part.FunctionResponse
				id := fr.ID
				if id == "" {
					if q := pending[fr.Name]; len(q) > 0 {
						id, pending[fr.Name] = q[0], q[1:]
					} else {
						id = fmt.Sprintf("adk_response_%d_%d", i, k)
					}
				}
				text, err := responseText(fr.Response)
				if err != nil {
					text = fmt.Sprint(fr.Response)
				}
				ids[i][k] = id
				blocks = append(blocks, agentctx.ToolResultBlock(id, agentctx.Text(text), false))
			case part.Text != "" && part.Thought:
				blocks = append(blocks, agentctx.Block{Type: agentctx.BlockThinking, Thinking: part.Text})
			case part.Text != "":
				blocks = append(blocks, agentctx.TextBlock(part.Text))
			}
		}
		msgs[i] = agentctx.NewMessage(role, agentctx.BlockList(blocks...))
	}
	return msgs, ids
}

func responseText(m map[string]any) (string, error) {
	if _, s, ok := singleString(m); ok {
		return s, nil
	}
	b, err := json.Marshal(m)
	return string(b), err
}
