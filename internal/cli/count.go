package cli

import (
	"github.com/spf13/cobra"

	"github.com/agentctx/agentctx/tokens"
)

type countOutput struct {
	Tokens   int    `json:"tokens"`
	Messages int    `json:"messages"`
	Encoding string `json:"encoding"`
}

func newCountCmd(e *env) *cobra.Command {
	var encoding string
	cmd := &cobra.Command{
		Use:   "count [FILE]",
		Short: "Count the tokens of a conversation",
		Long: `count prints the number of tokens of the messages: text, tool calls (name
and input JSON), tool results, thinking; images and documents by estimate.
Counts are exact for OpenAI's o200k_base (default) and cl100k_base; for
Claude models they are an estimate.`,
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
			doc, err := e.readInput(cmd.Context(), args)
			if err != nil {
				return err
			}
			enc := <-ready
			mc := tokens.NewMessageCounter(tokens.MessageOptions{Counter: enc, CacheSize: -1, Logger: e.logger, Parallelism: -1})
			n := mc.Count(doc.Messages)
			if sys, ok := doc.System(); ok {
				n += mc.CountContent(sys)
			}
			return e.writeJSON(countOutput{Tokens: n, Messages: len(doc.Messages), Encoding: enc.Name()})
		},
	}
	cmd.Flags().StringVar(&encoding, "encoding", tokens.O200kBaseName, "tokenizer: o200k_base or cl100k_base")
	return cmd
}
