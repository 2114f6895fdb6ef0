// Package anthropic counts tokens exactly for Claude models by asking
// Anthropic's count_tokens endpoint (POST /v1/messages/count_tokens) through
// the official SDK, github.com/anthropics/anthropic-sdk-go.
//
// Claude's tokenizer is not public, so the offline counters of package
// tokens give an estimate for Claude; use this package when a count must be
// exact and a network call per count is acceptable. Tests use a local
// server: see the package tests.
package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/agentctx/agentctx"
)

// DefaultModel is the model counted for when Options.Model is empty.
const DefaultModel = "claude-sonnet-4-5"

// ErrOpenAIShape is returned for messages in the OpenAI shape (role "tool"
// or tool_calls), which the Anthropic endpoint does not accept.
var ErrOpenAIShape = errors.New("anthropic: count_tokens needs Anthropic-shaped messages (no role \"tool\" or tool_calls)")

// Options configure a Counter. The zero value uses the SDK's defaults: the
// API key from ANTHROPIC_API_KEY, the base URL from ANTHROPIC_BASE_URL (or
// Anthropic's), two retries, and DefaultModel.
type Options struct {
	Model      string       // model to count for; "" means DefaultModel
	APIKey     string       // "" means ANTHROPIC_API_KEY
	BaseURL    string       // "" means ANTHROPIC_BASE_URL or the SDK default
	HTTPClient *http.Client // nil means the SDK default
	MaxRetries int          // 0 means the SDK default (2); negative means none
	// RequestOptions are passed to the SDK after the ones above.
	RequestOptions []option.RequestOption
}

// Counter asks Anthropic for token counts. It is safe for concurrent use.
type Counter struct {
	client sdk.Client
	model  string
}

// New returns a Counter.
func New(opts Options) *Counter {
	var ro []option.RequestOption
	if opts.APIKey != "" {
		ro = append(ro, option.WithAPIKey(opts.APIKey))
	}
	if opts.BaseURL != "" {
		ro = append(ro, option.WithBaseURL(opts.BaseURL))
	}
	if opts.HTTPClient != nil {
		ro = append(ro, option.WithHTTPClient(opts.HTTPClient))
	}
	switch {
	case opts.MaxRetries > 0:
		ro = append(ro, option.WithMaxRetries(opts.MaxRetries))
	case opts.MaxRetries < 0:
		ro = append(ro, option.WithMaxRetries(0))
	}
	ro = append(ro, opts.RequestOptions...)
	model := opts.Model
	if model == "" {
		model = DefaultModel
	}
	return &Counter{client: sdk.NewClient(ro...), model: model}
}

type countResponse struct {
	InputTokens int `json:"input_tokens"`
}

// CountMessages returns the input tokens Anthropic counts for msgs (with
// system, if it is not absent, as the system prompt). Messages with role
// "system" in the list are folded into the system prompt, in order. Only
// role and content of each message are sent: metadata and reader fields
// (timestamp, Claude Code's id, usage, ...) are left out.
func (c *Counter) CountMessages(ctx context.Context, msgs []agentctx.Message, system agentctx.Content) (int, error) {
	body, err := c.requestBody(msgs, system)
	if err != nil {
		return 0, err
	}
	var res countResponse
	if err := c.client.Post(ctx, "v1/messages/count_tokens", body, &res); err != nil {
		return 0, fmt.Errorf("anthropic: count_tokens: %w", err)
	}
	return res.InputTokens, nil
}

// CountText returns the tokens Anthropic counts for text sent as one user
// message. The count includes the few tokens of the message framing.
func (c *Counter) CountText(ctx context.Context, text string) (int, error) {
	return c.CountMessages(ctx, []agentctx.Message{agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(text))}, agentctx.Content{})
}

func (c *Counter) requestBody(msgs []agentctx.Message, system agentctx.Content) ([]byte, error) {
	var sysBlocks []agentctx.Block
	addSystem := func(s agentctx.Content) {
		switch s.Kind() {
		case agentctx.ContentText:
			if s.Text() != "" {
				sysBlocks = append(sysBlocks, agentctx.TextBlock(s.Text()))
			}
		case agentctx.ContentBlocks:
			sysBlocks = append(sysBlocks, s.Blocks()...)
		}
	}
	addSystem(system)
	wire := make([]agentctx.Message, 0, len(msgs))
	for _, m := range msgs {
		if m.Role == agentctx.RoleTool || len(m.ToolCalls) > 0 {
			return nil, ErrOpenAIShape
		}
		if m.Role == agentctx.RoleSystem {
			addSystem(m.Content)
			continue
		}
		wire = append(wire, agentctx.NewMessage(m.Role, m.Content))
	}
	list, err := agentctx.MarshalMessages(wire)
	if err != nil {
		return nil, err
	}
	model, err := json.Marshal(c.model)
	if err != nil {
		return nil, err
	}
	out := append([]byte(`{"model":`), model...)
	out = append(out, `,"messages":`...)
	out = append(out, list...)
	if len(sysBlocks) > 0 {
		sys, err := agentctx.BlockList(sysBlocks...).MarshalJSON()
		if err != nil {
			return nil, err
		}
		out = append(out, `,"system":`...)
		out = append(out, sys...)
	}
	return append(out, '}'), nil
}
