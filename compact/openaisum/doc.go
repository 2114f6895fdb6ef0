// Package openaisum summarizes the middle of a conversation through an
// OpenAI-compatible Chat Completions API (openai-go), for compact.Compact:
// OpenAI itself, or a local or self-hosted server (llama.cpp, Ollama, vLLM,
// LM Studio, ...) at another base URL.
//
//	sum, err := openaisum.New(openaisum.Options{
//		BaseURL: "http://localhost:11434/v1", // a local server needs no key
//		Model:   "qwen3:8b",
//	})
//	if err != nil {
//		return err
//	}
//	res, err := compact.Compact(ctx, msgs, compact.Options{Summarizer: sum})
//
// Each call sends compact.SystemPrompt as the system message and the
// summary prompt of package compact (the user's requests verbatim, goals
// and decisions, file operations, key identifiers, tool calls, errors and
// fixes, current state and next steps; paths and identifiers kept verbatim;
// tool calls rendered as readable calls, not JSON) as one user message, with
// temperature 0, max_tokens, and no tools (models that refuse a temperature,
// such as OpenAI's reasoning models, are not suited). A conversation larger
// than the input budget is summarized in parts and merged (see
// compact.ModelSummarizer). The SDK's own retries are off: compact.Compact
// retries, honouring Retry-After, and gives up early on answers that will
// not change (400, 401, 403, 404).
//
// The key comes from Options.APIKey, else OPENAI_API_KEY; the base URL from
// Options.BaseURL, else OPENAI_BASE_URL, else https://api.openai.com/v1. A
// key is required only for the default base URL. Keys are never logged.
package openaisum
