// Package agentctxeino runs agentctx's pipeline inside an eino
// ChatModelAgent (github.com/cloudwego/eino/adk): a ChatModelAgentMiddleware
// that prepares the messages of every model call (prune, offload large tool
// results to the workspace, compact), and the read-back tools with which
// the model reads an offloaded result again.
//
//	p, _ := pipeline.New(pipeline.Options{SessionID: "s1"})
//	agent, _ := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
//		Model:    chatModel,
//		Handlers: []adk.ChatModelAgentMiddleware{agentctxeino.New(p, agentctxeino.Options{})},
//		ToolsConfig: adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{
//			Tools: append(myTools, agentctxeino.ReadBackTools(p.Workspace())...),
//		}},
//		...
//	})
//
// # What the middleware does
//
// It works in WrapModel, on the messages passed to the model, and leaves
// the agent's state alone: the history the agent keeps is never modified
// (BeforeModelRewriteState would persist the prepared list as the
// history). A large tool result is sent as a <knowledge_list> reference
// naming its artifact; ReadBackTools (get_knowledge_by_id,
// get_knowledge_by_lines, grep_knowledge, ...) answer from the pipeline's
// workspace, so give them to the agent whenever the pipeline offloads.
//
// Every call is counted as it is sent: its messages (the system message
// among them) and the tool definitions it carries (the agent's tools, which
// it passes as a model.WithTools option), which count toward the compaction
// trigger as a request body's "tools" do. The usage of the response
// (Message.ResponseMeta.Usage, when the model reports it; at the end of a
// stream) is fed back to the pipeline (Pipeline.Observe), so that the
// session's estimates rest on the provider's own count.
//
// Outside a ChatModelAgent, NewChatModel wraps a ToolCallingChatModel the
// same way, the tools bound with WithTools counted.
//
// It is a module of its own, so that the agentctx module does not depend
// on eino.
package agentctxeino

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
	"github.com/eino-contrib/jsonschema"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pricing"
)

// Preparer runs the pipeline on a request read as a document: its
// messages and what is sent besides them (the tool definitions), which
// count toward the compaction trigger. *pipeline.Pipeline implements it.
type Preparer interface {
	PrepareDocument(ctx context.Context, doc *agentctx.Document) (*pipeline.Result, error)
}

// Observer is told the usage the provider reported for a request the
// middleware prepared, so that the session's later estimates start from
// it. *pipeline.Pipeline implements it; it is an optional ability of a
// Preparer, or set in Options.
type Observer interface {
	Observe(ctx context.Context, u pricing.Usage, counted int) error
}

// Options configure the middleware. The zero value means: a model call
// whose messages cannot be prepared fails with the error; usage is fed
// back when the Preparer is an Observer.
type Options struct {
	// OnResult, when set, is called with the result of every preparation.
	OnResult func(ctx context.Context, res *pipeline.Result)
	// Observer receives the usage of every response that reports one
	// (Message.ResponseMeta.Usage); nil means the Preparer when it
	// implements Observer.
	Observer Observer
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

// New returns the middleware preparing every model call with p. The zero
// Options are the defaults.
func New(p Preparer, opts Options) *Middleware {
	m := &Middleware{BaseChatModelAgentMiddleware: &adk.BaseChatModelAgentMiddleware{}, p: p, opts: opts}
	if m.opts.Observer == nil {
		m.opts.Observer, _ = p.(Observer)
	}
	m.log = m.opts.Logger
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	return m
}

// WrapModel returns the model wrapped so that every call prepares its
// input messages first, counting the tools the call carries (the agent
// passes them as a model.WithTools option), and feeds the usage of its
// response back.
func (m *Middleware) WrapModel(_ context.Context, base model.BaseModel[*schema.Message], _ *adk.ModelContext) (model.BaseModel[*schema.Message], error) {
	return &preparedModel{base: base, m: m}, nil
}

// NewChatModel wraps a tool-calling chat model for use outside a
// ChatModelAgent (a compose graph, a loop of one's own): every call
// prepares its input messages first, counting the tools bound with
// WithTools or passed with model.WithTools, and feeds the usage of its
// response back. The zero Options are the defaults.
func NewChatModel(p Preparer, base model.ToolCallingChatModel, opts Options) model.ToolCallingChatModel {
	return &chatModel{preparedModel{base: base, m: New(p, opts)}, base}
}

type chatModel struct {
	preparedModel
	tc model.ToolCallingChatModel
}

// WithTools binds tools to the wrapped model and returns it wrapped again,
// the tools counted with every call.
func (c *chatModel) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	bound, err := c.tc.WithTools(tools)
	if err != nil {
		return nil, err
	}
	return &chatModel{preparedModel{base: bound, m: c.m, tools: tools}, bound}, nil
}

type preparedModel struct {
	base  model.BaseModel[*schema.Message]
	m     *Middleware
	tools []*schema.ToolInfo // bound with WithTools; a call's model.WithTools wins
}

func (pm *preparedModel) Generate(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.Message, error) {
	out, res, err := pm.m.prepare(ctx, in, pm.callTools(opts))
	if err != nil {
		return nil, err
	}
	msg, err := pm.base.Generate(ctx, out, opts...)
	if err == nil && msg != nil && msg.ResponseMeta != nil {
		pm.m.observe(ctx, res, msg.ResponseMeta.Usage)
	}
	return msg, err
}

func (pm *preparedModel) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	out, res, err := pm.m.prepare(ctx, in, pm.callTools(opts))
	if err != nil {
		return nil, err
	}
	sr, err := pm.base.Stream(ctx, out, opts...)
	if err != nil || res == nil || pm.m.opts.Observer == nil {
		return sr, err
	}
	// The chunks pass unchanged; the usage they carry is fed back when the
	// stream ends: the prompt tokens of the last chunk that reports them
	// (some providers report input in the first chunk, output in the
	// last), the completion tokens of the last.
	var u *schema.TokenUsage
	return schema.StreamReaderWithConvert(sr, func(c *schema.Message) (*schema.Message, error) {
		if c == nil || c.ResponseMeta == nil || c.ResponseMeta.Usage == nil {
			return c, nil
		}
		x := c.ResponseMeta.Usage
		if u == nil {
			u = new(schema.TokenUsage)
		}
		if x.PromptTokens > 0 {
			u.PromptTokens, u.PromptTokenDetails = x.PromptTokens, x.PromptTokenDetails
		}
		if x.CompletionTokens > 0 {
			u.CompletionTokens = x.CompletionTokens
		}
		return c, nil
	}, schema.WithOnEOF(func() (any, error) {
		pm.m.observe(ctx, res, u)
		return nil, io.EOF
	})), nil
}

// callTools returns the tools a call sends: its model.WithTools option,
// else the tools the model was given.
func (pm *preparedModel) callTools(opts []model.Option) []*schema.ToolInfo {
	return model.GetCommonOptions(&model.Options{Tools: pm.tools}, opts...).Tools
}

// prepare returns the messages to send and the result, nil when the
// messages are sent unprepared (FailOpen).
func (m *Middleware) prepare(ctx context.Context, in []*schema.Message, tools []*schema.ToolInfo) ([]*schema.Message, *pipeline.Result, error) {
	out, res, err := PrepareMessages(ctx, m.p, in, tools)
	if err != nil {
		if !m.opts.FailOpen {
			return nil, nil, fmt.Errorf("agentctx: prepare model input: %w", err)
		}
		m.log.LogAttrs(ctx, slog.LevelWarn, "agentctx: model input sent unprepared", slog.String("error", err.Error()))
		return in, nil, nil
	}
	if m.opts.OnResult != nil {
		m.opts.OnResult(ctx, res)
	}
	return out, res, nil
}

// observe feeds the usage of the response to a request prepared as res.
func (m *Middleware) observe(ctx context.Context, res *pipeline.Result, u *schema.TokenUsage) {
	if m.opts.Observer == nil || res == nil || u == nil || u.PromptTokens <= 0 {
		return
	}
	if err := m.opts.Observer.Observe(ctx, Usage(u), res.Report.TokensAfter); err != nil {
		m.log.LogAttrs(ctx, slog.LevelWarn, "agentctx: cannot record usage", slog.String("error", err.Error()))
	}
}

// Usage converts an eino response's token usage, OpenAI's shape:
// PromptTokens holds every input token, cached ones included
// (PromptTokenDetails.CachedTokens), which are cache reads.
func Usage(u *schema.TokenUsage) pricing.Usage {
	return pricing.OpenAIUsage(u.PromptTokens, u.PromptTokenDetails.CachedTokens, u.CompletionTokens)
}

// indexField is the member that ties a converted message to its original.
const indexField = "agentctx_eino_index"

// PrepareMessages runs p on eino messages sent with tools and returns the
// list to send: the original *schema.Message values where the pipeline kept
// a message, copies with the new content where it changed one (a tool
// result replaced by a reference, a pruned output), and new user messages
// for summaries. The tool definitions are counted with the messages (as
// RequestTokens counts a request body's "tools"); tools may be nil. in is
// never modified.
func PrepareMessages(ctx context.Context, p Preparer, in []*schema.Message, tools []*schema.ToolInfo) ([]*schema.Message, *pipeline.Result, error) {
	msgs, err := Messages(in)
	if err != nil {
		return nil, nil, err
	}
	for i := range msgs {
		if msgs[i], err = msgs[i].WithField(indexField, i); err != nil {
			return nil, nil, err
		}
	}
	doc, err := requestDocument(ctx, msgs, tools)
	if err != nil {
		return nil, nil, err
	}
	res, err := p.PrepareDocument(ctx, doc)
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

// function is a tool as a chat request sends it (OpenAI's shape), the form
// counted toward the trigger.
type function struct {
	Type     string `json:"type"`
	Function struct {
		Name        string             `json:"name"`
		Description string             `json:"description,omitempty"`
		Parameters  *jsonschema.Schema `json:"parameters,omitempty"`
	} `json:"function"`
}

// requestDocument returns msgs as the document of a request that sends
// tools too.
func requestDocument(ctx context.Context, msgs []agentctx.Message, tools []*schema.ToolInfo) (*agentctx.Document, error) {
	var body struct {
		Tools    []function      `json:"tools,omitempty"`
		Messages json.RawMessage `json:"messages"`
	}
	body.Messages = json.RawMessage("[]")
	for _, t := range tools {
		if t == nil {
			continue
		}
		var f function
		f.Type, f.Function.Name, f.Function.Description = "function", t.Name, t.Desc
		if t.ParamsOneOf != nil {
			s, err := t.ParamsOneOf.ToJSONSchema()
			if err != nil {
				return nil, fmt.Errorf("agentctxeino: tool %s: %w", t.Name, err)
			}
			f.Function.Parameters = s
		}
		body.Tools = append(body.Tools, f)
	}
	b, err := json.Marshal(&body)
	if err != nil {
		return nil, fmt.Errorf("agentctxeino: tools: %w", err)
	}
	doc, err := agentctx.ParseDocument(ctx, b)
	if err != nil {
		return nil, err
	}
	return doc.WithMessages(msgs), nil
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
