package openaisum

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/tokens"
)

// Defaults.
const (
	// DefaultModel is the model used when Options.Model is empty: fast,
	// inexpensive, and it accepts temperature 0.
	DefaultModel = "gpt-4.1-mini"
	// DefaultMaxTokens bounds the length of each answer (max_tokens).
	DefaultMaxTokens = 8192
)

// Provider is the APIError.Provider of this package's errors.
const Provider = "openai"

// ErrNoAPIKey is returned by New and NewModel when no key is given for the
// OpenAI API itself (no Options.APIKey, no OPENAI_API_KEY, and no other
// base URL).
var ErrNoAPIKey = errors.New("openaisum: no API key: set OPENAI_API_KEY, or a base URL for a server that needs none")

// Options configure New and NewModel. The zero value uses the defaults and
// the environment.
type Options struct {
	// APIKey is the API key. Empty means OPENAI_API_KEY.
	APIKey string
	// BaseURL is the API's address, such as http://localhost:8080/v1.
	// Empty means OPENAI_BASE_URL, else https://api.openai.com/v1.
	BaseURL string
	// Model names the model. Empty means DefaultModel.
	Model string
	// MaxTokens bounds each answer. Zero means DefaultMaxTokens.
	MaxTokens int
	// HTTPClient makes the requests. Nil means the SDK's default client.
	HTTPClient *http.Client
	// RequestOptions are passed to the SDK client after all others.
	RequestOptions []option.RequestOption

	// InputTokens, MaxResultChars and Counter configure the
	// compact.ModelSummarizer that New returns (zero: its defaults). Set
	// InputTokens below a local model's context window.
	InputTokens    int
	MaxResultChars int
	Counter        tokens.Counter
	// Logger receives debug lines per call (never a key). Nil discards.
	Logger *slog.Logger
}

// Model is a compact.Model that calls a Chat Completions API. It is safe
// for concurrent use.
type Model struct {
	client    openai.Client
	model     string
	maxTokens int64
	log       *slog.Logger
}

var _ compact.Model = (*Model)(nil)

// NewModel returns a Model for opts.
func NewModel(opts Options) (*Model, error) {
	if opts.MaxTokens < 0 {
		return nil, fmt.Errorf("openaisum: MaxTokens %d is negative", opts.MaxTokens)
	}
	if opts.APIKey == "" && os.Getenv("OPENAI_API_KEY") == "" && opts.BaseURL == "" && os.Getenv("OPENAI_BASE_URL") == "" {
		return nil, ErrNoAPIKey
	}
	ro := []option.RequestOption{option.WithMaxRetries(0)}
	if opts.APIKey != "" {
		ro = append(ro, option.WithAPIKey(opts.APIKey))
	}
	if opts.BaseURL != "" {
		ro = append(ro, option.WithBaseURL(opts.BaseURL))
	}
	if opts.HTTPClient != nil {
		ro = append(ro, option.WithHTTPClient(opts.HTTPClient))
	}
	ro = append(ro, opts.RequestOptions...)
	m := &Model{
		client:    openai.NewClient(ro...),
		model:     opts.Model,
		maxTokens: int64(opts.MaxTokens),
		log:       opts.Logger,
	}
	if m.model == "" {
		m.model = DefaultModel
	}
	if m.maxTokens == 0 {
		m.maxTokens = DefaultMaxTokens
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	return m, nil
}

// New returns a compact.ModelSummarizer backed by a Model for opts.
func New(opts Options) (*compact.ModelSummarizer, error) {
	m, err := NewModel(opts)
	if err != nil {
		return nil, err
	}
	return &compact.ModelSummarizer{
		Model:          m,
		Counter:        opts.Counter,
		InputTokens:    opts.InputTokens,
		MaxResultChars: opts.MaxResultChars,
		Logger:         opts.Logger,
	}, nil
}

// Name returns the model's name.
func (m *Model) Name() string { return m.model }

// Complete sends one chat completion request: a system and a user message,
// temperature 0, max_tokens, no tools. It returns the content of the first
// choice ("" when there is none), or an error wrapped in a
// *compact.APIError.
func (m *Model) Complete(ctx context.Context, system, prompt string) (string, error) {
	start := time.Now()
	resp, err := m.client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: m.model,
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage(system),
			openai.UserMessage(prompt),
		},
		Temperature: openai.Float(0),
		MaxTokens:   openai.Int(m.maxTokens),
	})
	if err != nil {
		return "", wrap(err)
	}
	if len(resp.Choices) == 0 {
		return "", nil
	}
	c := resp.Choices[0]
	m.log.Debug("openaisum: answer", "model", m.model, "took", time.Since(start),
		"prompt_tokens", resp.Usage.PromptTokens, "completion_tokens", resp.Usage.CompletionTokens, "finish_reason", c.FinishReason)
	if c.FinishReason == "length" {
		m.log.Warn("openaisum: the summary was cut at MaxTokens", "max_tokens", m.maxTokens)
	}
	if c.Message.Content == "" && c.Message.Refusal != "" {
		return "", &compact.APIError{Provider: Provider, Err: fmt.Errorf("the model refused: %s", c.Message.Refusal)}
	}
	return c.Message.Content, nil
}

// wrap turns an SDK error into a *compact.APIError with the status and
// Retry-After of the answer, if there was one.
func wrap(err error) error {
	ae := &compact.APIError{Provider: Provider, Err: err}
	var se *openai.Error
	if errors.As(err, &se) {
		ae.StatusCode = se.StatusCode
		if se.Response != nil {
			ae.RetryAfter = compact.ParseRetryAfter(se.Response.Header, time.Now())
		}
	}
	return ae
}
