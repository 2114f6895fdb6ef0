// Package agentctxeino runs agentctx's pipeline inside an eino
// ChatModelAgent (github.com/cloudwego/eino/adk): a ChatModelAgentMiddleware
// that prepares the messages of every model call (prune, offload large tool
// results to the workspace, compact).
//
//	p, _ := pipeline.New(pipeline.Options{SessionID: "s1"})
//	agent, _ := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
//		Model:    chatModel,
//		Handlers: []adk.ChatModelAgentMiddleware{agentctxeino.New(p, nil)},
//		...
//	})
//
// The middleware works in WrapModel, on the messages passed to the model,
// and leaves the agent's state alone: the history the agent keeps is never
// modified (BeforeModelRewriteState would persist the prepared list as the
// history). It is a module of its own, so that the agentctx module does not
// depend on eino.
package agentctxeino

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/pipeline"
)

// Preparer runs the pipeline on a conversation: *pipeline.Pipeline
// implements it.
type Preparer interface {
	Prepare(ctx context.Context, msgs []agentctx.Message) (*pipeline.Result, error)
}

// Options configure the middleware. The zero value means: a model call
// whose messages cannot be prepared fails with the error.
type Options struct {
	// OnResult, when set, is called with the result of every preparation.
	OnResult func(ctx context.Context, res *pipeline.Result)
	// FailOpen passes the messages unchanged to the model when they cannot
	// be prepared, after logging why.
	FailOpen bool
	// Logger receives a record per failure; nil discards them.
	Logger *slog.Logger
}

// Middleware is an eino ChatModelAgentMiddleware. Build it with New.
type Middleware struct {
	*adk.BaseChatModelAgentMiddleware
	p    Preparer
	opts Options
	log  *slog.Logger
}

var _ adk.ChatModelAgentMiddleware = (*Middleware)(nil)

// New returns the middleware preparing every model call with p. opts may
// be nil.
func New(p Preparer, opts *Options) *Middleware {
	m := &Middleware{BaseChatModelAgentMiddleware: &adk.BaseChatModelAgentMiddleware{}, p: p}
	if opts != nil {
		m.opts = *opts
	}
	m.log = m.opts.Logger
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	return m
}

// WrapModel returns the model wrapped so that every call prepares its
// input messages first.
func (m *Middleware) WrapModel(_ context.Context, base model.BaseModel[*schema.Message], _ *adk.ModelContext) (model.BaseModel[*schema.Message], error) {
	return &preparedModel{base: base, m: m}, nil
}

type preparedModel struct {
	base model.BaseModel[*schema.Message]
	m    *Middleware
}

func (pm *preparedModel) Generate(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.Message, error) {
	out, err := pm.m.prepare(ctx, in)
	if err != nil {
		return nil, err
	}
	return pm.base.Generate(ctx, out, opts...)
}

func (pm *preparedModel) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	out, err := pm.m.prepare(ctx, in)
	if err != nil {
		return nil, err
	}
	return pm.base.Stream(ctx, out, opts...)
}

func (m *Middleware) prepare(ctx context.Context, in []*schema.Message) ([]*schema.Message, error) {
	out, res, err := PrepareMessages(ctx, m.p, in)
	if err != nil {
		if !m.opts.FailOpen {
			return nil, fmt.Errorf("agentctx: prepare model input: %w", err)
		}
		m.log.LogAttrs(ctx, slog.LevelWarn, "agentctx: model input sent unprepared", slog.String("error", err.Error()))
		return in, nil
	}
	if m.opts.OnResult != nil {
		m.opts.OnResult(ctx, res)
	}
	return out, nil
}

// indexField is the member that ties a converted message to its original.
const indexField = "agentctx_eino_index"

// PrepareMessages runs p on eino messages and returns the list to send: the
// original *schema.Message values where the pipeline kept a message, copies
// with the new content where it changed one (a tool result replaced by a
// reference, a pruned output), and new user messages for summaries. in is
// never modified.
func PrepareMessages(ctx context.Context, p Preparer, in []*schema.Message) ([]*schema.Message, *pipeline.Result, error) {
	msgs, err := Messages(in)
	if err != nil {
		return nil, nil, err
	}
	for i := range msgs {
		if msgs[i], err = msgs[i].WithField(indexField, i); err != nil {
			return nil, nil, err
		}
	}
	res, err := p.Prepare(ctx, msgs)
	if err != nil {
		return nil, nil, err
	}
	out := make([]*schema.Message, 0, len(res.Messages))
	for _, pm := range res.Messages {
		raw, ok := pm.Field(indexField)
		i, err := strconv.Atoi(string(raw))
		if !ok || err != nil || i < 0 || i >= len(in) {
			out = append(out, &schema.Message{Role: schema.RoleType(pm.Role), Content: pm.Content.AsText()})
			continue
		}
		orig := in[i]
		if text := pm.Content.AsText(); text != msgs[i].Content.AsText() {
			c := *orig
			c.Content = text
			c.MultiContent, c.UserInputMultiContent = nil, nil
			orig = &c
		}
		out = append(out, orig)
	}
	res.Messages = agentctx.StripMetadata(res.Messages, indexField)
	return out, res, nil
}

// Messages converts eino messages to agentctx messages in the OpenAI chat
// shape (role, content, tool_calls, tool_call_id). Multimodal parts are left
// out: a message's text is its Content.
func Messages(in []*schema.Message) ([]agentctx.Message, error) {
	out := make([]agentctx.Message, len(in))
	for i, m := range in {
		if m == nil {
			return nil, fmt.Errorf("agentctxeino: message %d is nil", i)
		}
		content := agentctx.Text(m.Content)
		if m.Role == schema.Assistant && m.Content == "" && len(m.ToolCalls) > 0 {
			content = agentctx.Null()
		}
		a := agentctx.NewMessage(string(m.Role), content)
		a.ToolCallID = m.ToolCallID
		for _, tc := range m.ToolCalls {
			typ := tc.Type
			if typ == "" {
				typ = "function"
			}
			a.ToolCalls = append(a.ToolCalls, agentctx.ToolCall{ID: tc.ID, Type: typ,
				Function: agentctx.FunctionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
		}
		out[i] = a
	}
	return out, nil
}
