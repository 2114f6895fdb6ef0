// Package agentctxadk runs agentctx's pipeline inside an adk-go agent
// (google.golang.org/adk): a BeforeModelCallback that prepares the contents
// of every model request (prune, offload large function responses to the
// workspace, compact), an AfterModelCallback that feeds the usage of every
// response back, and the read-back tools with which the model reads an
// offloaded response again.
//
//	p, _ := pipeline.New(pipeline.Options{SessionID: "s1"})
//	agent, _ := llmagent.New(llmagent.Config{
//		Model:                model,
//		Tools:                append(myTools, agentctxadk.ReadBackTools(p.Workspace())...),
//		BeforeModelCallbacks: []llmagent.BeforeModelCallback{agentctxadk.BeforeModelCallback(p, agentctxadk.Options{})},
//		AfterModelCallbacks:  []llmagent.AfterModelCallback{agentctxadk.AfterModelCallback(p, agentctxadk.Options{})},
//		...
//	})
//
// # What the callbacks do
//
// The before callback replaces the request's Contents only: the session's
// events, the history the agent keeps, are never modified. A large
// function response is sent as a <knowledge_list> reference naming its
// artifact; ReadBackTools (get_knowledge_by_id, get_knowledge_by_lines,
// grep_knowledge, ...) answer from the pipeline's workspace, so give them
// to the agent whenever the pipeline offloads.
//
// Every request is counted as it is sent: its contents, its system
// instruction (Config.SystemInstruction) and its tool declarations
// (Config.Tools), which count toward the compaction trigger as a request
// body's "system" and "tools" do. The after callback feeds the usage of
// the response (UsageMetadata: PromptTokenCount, of which
// CachedContentTokenCount were cached) back to the pipeline
// (Pipeline.Observe), so that the session's estimates rest on the
// provider's own count.
//
// It is a module of its own, so that the agentctx module does not depend
// on adk-go.
package agentctxadk

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	"google.golang.org/genai"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pricing"
)

// Preparer runs the pipeline on a request read as a document: its
// contents and what is sent besides them (the system instruction, the tool
// declarations), which count toward the compaction trigger.
// *pipeline.Pipeline implements it.
type Preparer interface {
	PrepareDocument(ctx context.Context, doc *agentctx.Document) (*pipeline.Result, error)
}

// Observer is told the usage the provider reported for a request the
// callbacks prepared, so that the session's later estimates start from it.
// *pipeline.Pipeline implements it; it is an optional ability of a
// Preparer, or set in Options.
type Observer interface {
	Observe(ctx context.Context, u pricing.Usage, counted int) error
}

// Options configure the callbacks. The zero value means: a model request
// whose contents cannot be prepared fails with the error; usage is fed
// back when the Preparer is an Observer.
type Options struct {
	// OnResult, when set, is called with the result of every preparation.
	OnResult func(ctx context.Context, res *pipeline.Result)
	// Observer receives the usage of every response that reports one
	// (LLMResponse.UsageMetadata); nil means the Preparer when it
	// implements Observer.
	Observer Observer
	// FailOpen sends the contents unchanged when they cannot be prepared,
	// after logging why.
	FailOpen bool
	// Logger receives a record per failure; nil discards them.
	Logger *slog.Logger
}

func (o Options) resolve(p Preparer) Options {
	c := o
	if c.Observer == nil {
		c.Observer, _ = p.(Observer)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// BeforeModelCallback returns the callback that prepares the contents of
// every model request with p, counting the request's system instruction
// (Config.SystemInstruction) and tool declarations (Config.Tools) with
// them. The zero Options are the defaults.
func BeforeModelCallback(p Preparer, opts Options) llmagent.BeforeModelCallback {
	o := opts.resolve(p)
	return func(ctx agent.CallbackContext, req *model.LLMRequest) (*model.LLMResponse, error) {
		out, res, err := PrepareContents(ctx, p, req.Contents, req.Config)
		if err != nil {
			if !o.FailOpen {
				return nil, fmt.Errorf("agentctx: prepare model request: %w", err)
			}
			o.Logger.LogAttrs(ctx, slog.LevelWarn, "agentctx: model request sent unprepared", slog.String("error", err.Error()))
			return nil, nil
		}
		if o.OnResult != nil {
			o.OnResult(ctx, res)
		}
		req.Contents = out
		return nil, nil // go on with the model call
	}
}

// AfterModelCallback returns the callback that feeds the usage of every
// model response (UsageMetadata) back to the pipeline, for the request the
// BeforeModelCallback over the same pipeline prepared last: register both.
// A streamed response is observed once, on its final (not Partial)
// response. The response itself is left alone. The zero Options are the
// defaults.
func AfterModelCallback(p Preparer, opts Options) llmagent.AfterModelCallback {
	o := opts.resolve(p)
	return func(ctx agent.CallbackContext, resp *model.LLMResponse, respErr error) (*model.LLMResponse, error) {
		if o.Observer == nil || respErr != nil || resp == nil || resp.Partial || resp.UsageMetadata == nil || resp.UsageMetadata.PromptTokenCount <= 0 {
			return nil, nil
		}
		if err := o.Observer.Observe(ctx, Usage(resp.UsageMetadata), 0); err != nil { // of the last request prepared
			o.Logger.LogAttrs(ctx, slog.LevelWarn, "agentctx: cannot record usage", slog.String("error", err.Error()))
		}
		return nil, nil
	}
}

// Usage converts a response's usage metadata: PromptTokenCount holds
// every input token, cached content included (CachedContentTokenCount),
// which are cache reads.
func Usage(u *genai.GenerateContentResponseUsageMetadata) pricing.Usage {
	return pricing.OpenAIUsage(int(u.PromptTokenCount), int(u.CachedContentTokenCount), int(u.CandidatesTokenCount))
}

// indexField ties a converted message to its original content.
const indexField = "agentctx_adk_index"

// PrepareContents runs p on genai contents sent with config and returns
// the contents to send: the original *genai.Content values where the
// pipeline kept a message, copies where it replaced a function response
// (its response becomes {"result": <reference>}, or keeps its one key),
// and new user contents for summaries. The system instruction and the tool
// declarations of config are counted with the contents (as RequestTokens
// counts a request body's "system" and "tools"); config may be nil. in is
// never modified.
func PrepareContents(ctx context.Context, p Preparer, in []*genai.Content, config *genai.GenerateContentConfig) ([]*genai.Content, *pipeline.Result, error) {
	msgs, ids := Messages(in)
	for i := range msgs {
		var err error
		if msgs[i], err = msgs[i].WithField(indexField, i); err != nil {
			return nil, nil, err
		}
	}
	doc, err := requestDocument(ctx, msgs, config)
	if err != nil {
		return nil, nil, err
	}
	res, err := p.PrepareDocument(ctx, doc)
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

// requestDocument returns msgs as the document of a request that sends
// config's system instruction (its text) and tools (their JSON) too.
func requestDocument(ctx context.Context, msgs []agentctx.Message, config *genai.GenerateContentConfig) (*agentctx.Document, error) {
	var body struct {
		System   string          `json:"system,omitempty"`
		Tools    []*genai.Tool   `json:"tools,omitempty"`
		Messages json.RawMessage `json:"messages"`
	}
	body.Messages = json.RawMessage("[]")
	if config != nil {
		body.Tools = config.Tools
		if si := config.SystemInstruction; si != nil {
			var texts []string
			for _, part := range si.Parts {
				if part != nil && part.Text != "" {
					texts = append(texts, part.Text)
				}
			}
			body.System = strings.Join(texts, "\n")
		}
	}
	b, err := json.Marshal(&body)
	if err != nil {
		return nil, fmt.Errorf("agentctxadk: system instruction and tools: %w", err)
	}
	doc, err := agentctx.ParseDocument(ctx, b)
	if err != nil {
		return nil, err
	}
	return doc.WithMessages(msgs), nil
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
