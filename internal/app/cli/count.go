package cli

import (
	"github.com/spf13/cobra"

	"github.com/agentctx/agentctx/tokens"
)

type countOutput struct {
	Tokens   int    `json:"tokens"`   // tokens of the messages, plus a request body's system prompt and tool definitions
	Messages int    `json:"messages"` // messages read
	Encoding string `json:"encoding"` // the tokenizer: o200k_base or cl100k_base
}

func newCountCmd(e *env) *cobra.Command {
	var encoding string
	cmd := &cobra.Command{
		Use:   "count [FILE]",
		Short: "Count the tokens of a conversation",
		Long: `count prints the number of tokens of the messages: text, tool calls (name
and input JSON), tool results, thinking; images and documents by estimate.
Counts are exact for OpenAI's o200k_base (default) and cl100k_base; for
Claude models they are an estimate. The top-level "system" and "tools" of
a request body are counted too, the tool definitions in their canonical
JSON (no whitespace between tokens), so re-indenting a file does not
change its count.`,
		Example: `  agentctx count session.jsonl
  agentctx count --encoding cl100k_base < messages.json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if encoding != tokens.O200kBaseName && encoding != tokens.Cl100kBaseName {
				_, err := tokens.Get(encoding)
				return usagef("--encoding: %v", err)
			}
			// Build the encoding's tables while the input is read and parsed.
			ready := make(chan *tokens.Encoding, 1)
			go func() {
				enc, _ := tokens.Get(encoding)
				ready <- enc
			}()
			ctx := cmd.Context()
			doc, err := e.readInput(ctx, args)
			if err != nil {
				return err
			}
			enc := <-ready
			mc := tokens.NewMessageCounter(tokens.MessageOptions{Counter: enc, CacheSize: -1, Logger: e.logger, Parallelism: -1})
			e.logger.Debug("counting", "messages", len(doc.Messages), "encoding", enc.Name())
			n, err := mc.CountContext(ctx, doc.Messages)
			if err != nil {
				return err
			}
			n += mc.CountRequestExtras(doc) // a request body's system prompt and tools are sent too
			return e.writeJSON(ctx, countOutput{Tokens: n, Messages: len(doc.Messages), Encoding: enc.Name()})
		},
	}
	cmd.Flags().StringVar(&encoding, "encoding", tokens.O200kBaseName, "tokenizer: o200k_base or cl100k_base")
	return cmd
}
