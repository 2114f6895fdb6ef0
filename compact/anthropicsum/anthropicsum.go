package anthropicsum

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/tokens"
)

// Defaults.
const (
	// DefaultModel is the model used when Options.Model is empty: fast,
	// inexpensive, and good at faithful summaries.
	DefaultModel = string(anthropic.ModelClaudeHaiku4_5)
	// DefaultMaxTokens bounds the length of each answer.
	DefaultMaxTokens = 8192
)

// Provider is the APIError.Provider of this package's errors.
const Provider = "anthropic"

// Options configure New and NewModel. The zero value uses the defaults and
// the environment.
type Options struct {
	// APIKey is the API key. Empty means the SDK's sources
	// (ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, profiles).
	APIKey string
	// BaseURL is the API's address, for proxies and compatible servers.
	// Empty means ANTHROPIC_BASE_URL, else https://api.anthropic.com.
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
	// compact.ModelSummarizer that New returns (zero: its defaults).
	InputTokens    int
	MaxResultChars int
	Counter        tokens.Counter
	// Logger receives debug lines per call (never a key). Nil discards.
	Logger *slog.Logger
}

// Model is a compact.Model that calls the Anthropic Messages API. It is
// safe for concurrent use.
type Model struct {
	client    anthropic.Client
	model     string
	maxTokens int64
	log       *slog.Logger
}

var _ compact.Model = (*Model)(nil)

// NewModel returns a Model for opts.
func NewModel(opts Options) (*Model, error) {
	if opts.MaxTokens < 0 {
		return nil, fmt.Errorf("anthropicsum: MaxTokens %d is negative", opts.MaxTokens)
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
		client:    anthropic.NewClient(ro...),
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

// Complete sends one Messages request: system, one user message, temperature
// 0, no tools. It returns the text of the answer ("" when it has none), or
// an error wrapped in a *compact.APIError.
func (m *Model) Complete(ctx context.Context, system, prompt string) (string, error) {
	start := time.Now()
	msg, err := m.client.Messages.New(ctx, anthropic.MessageNewParams{
		Model:       anthropic.Model(m.model),
		MaxTokens:   m.maxTokens,
		System:      []anthropic.TextBlockParam{{Text: system}},
		Messages:    []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
		Temperature: anthropic.Float(0),
	})
	if err != nil {
		return "", wrap(err)
	}
	var b strings.Builder
	for _, c := range msg.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	m.log.Debug("anthropicsum: answer", "model", m.model, "took", time.Since(start),
		"input_tokens", msg.Usage.InputTokens, "output_tokens", msg.Usage.OutputTokens, "stop_reason", string(msg.StopReason))
	if msg.StopReason == anthropic.StopReasonMaxTokens {
		m.log.Warn("anthropicsum: the summary was cut at MaxTokens", "max_tokens", m.maxTokens)
	}
	return b.String(), nil
}

// wrap turns an SDK error into a *compact.APIError with the status and
// Retry-After of the answer, if there was one.
func wrap(err error) error {
	ae := &compact.APIError{Provider: Provider, Err: err}
	var se *anthropic.Error
	if errors.As(err, &se) {
		ae.StatusCode = se.StatusCode
		if se.Response != nil {
			ae.RetryAfter = compact.ParseRetryAfter(se.Response.Header, time.Now())
		}
		return ae
	}
	if strings.HasPrefix(err.Error(), "no Anthropic credentials") || strings.Contains(err.Error(), ": no Anthropic credentials") {
		ae.Final = true
	}
	return ae
}
