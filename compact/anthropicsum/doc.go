// Package anthropicsum summarizes the middle of a conversation with a
// Claude model through the Anthropic Messages API (anthropic-sdk-go), for
// compact.Compact.
//
//	sum, err := anthropicsum.New(anthropicsum.Options{}) // ANTHROPIC_API_KEY from the environment
//	if err != nil {
//		return err
//	}
//	res, err := compact.Compact(ctx, msgs, compact.Options{Summarizer: sum})
//
// Each call sends the summary prompt of package compact (the user's
// requests verbatim, goals and decisions, file operations, key identifiers,
// tool calls, errors and fixes, current state and next steps; paths and
// identifiers kept verbatim; the conversation rendered with tool calls as
// readable calls, not JSON) as one user message under compact.SystemPrompt, with temperature 0 and no
// tools. A conversation larger than the input budget is summarized in parts
// and merged (see compact.ModelSummarizer). The SDK's own retries are off:
// compact.Compact retries, honouring Retry-After, and gives up early on
// answers that will not change (400, 401, 403, 404).
//
// Credentials come from Options.APIKey, else from the SDK's usual sources
// (ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, profiles); the base URL from
// Options.BaseURL, else ANTHROPIC_BASE_URL, else the public API. Keys are
// never logged.
package anthropicsum
