package anthropicx_test

import (
	"context"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/agentctx/agentctx/anthropicx"
	"github.com/agentctx/agentctx/pipeline"
)

// The adoption in an agent loop: the pipeline in the client, the read-back
// tools in the tool list, their calls dispatched by ExecuteTool. The loop's
// history stays the SDK's own. (examples/agentloop runs this loop against
// a fake model.)
func Example() {
	ctx := context.Background()
	p, err := pipeline.New(pipeline.Options{SessionID: "s1"})
	if err != nil {
		panic(err)
	}
	defer p.Close()
	client := anthropic.NewClient(anthropicx.WithPipeline(p)) // reads ANTHROPIC_API_KEY

	params := anthropic.MessageNewParams{
		Model:     anthropic.ModelClaudeSonnet4_5,
		MaxTokens: 4096,
		Tools:     anthropicx.Tools(p.Workspace()), // plus the program's own tools
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Why did the nightly job fail?"))},
	}
	for {
		msg, err := client.Messages.New(ctx, params)
		if err != nil {
			panic(err)
		}
		params.Messages = append(params.Messages, msg.ToParam())
		var results []anthropic.ContentBlockParamUnion
		for _, block := range msg.Content {
			u, ok := block.AsAny().(anthropic.ToolUseBlock)
			if !ok {
				continue
			}
			if res, handled := anthropicx.ExecuteTool(ctx, p.Workspace(), u); handled {
				results = append(results, res)
				continue
			}
			results = append(results, anthropic.NewToolResultBlock(u.ID, runOwnTool(u), false))
		}
		if len(results) == 0 {
			return
		}
		params.Messages = append(params.Messages, anthropic.NewUserMessage(results...))
	}
}

func runOwnTool(anthropic.ToolUseBlock) string { return "" }
