package openaix_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentctx/agentctx/openaix"
	"github.com/agentctx/agentctx/pipeline"
)

// An agent loop on openai-go with the pipeline in the client: every Chat
// Completions request is prepared (here a 50,000-character tool result is
// replaced by a reference), and the model reads the result back with the
// read-back tools, dispatched by ExecuteTool. The model is a fake server
// that asks for grep_knowledge once it sees the reference.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "openaix-example-")
	defer os.RemoveAll(dir)

	p, err := pipeline.New(pipeline.Options{SessionID: "s1", WorkspaceDir: filepath.Join(dir, "ws")})
	if err != nil {
		panic(err)
	}
	defer p.Close()
	api := httptest.NewServer(http.HandlerFunc(fakeChat))
	defer api.Close()

	client := openai.NewClient(option.WithBaseURL(api.URL), option.WithAPIKey("not-needed"),
		openaix.WithPipeline(p)) // every request prepared
	params := openai.ChatCompletionNewParams{
		Model:    "gpt-test",
		Tools:    openaix.Tools(p.Workspace()), // the read-back tools (add the program's own)
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Why did the build fail?")},
	}
	for {
		res, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			panic(err)
		}
		msg := res.Choices[0].Message
		params.Messages = append(params.Messages, msg.ToParam())
		if len(msg.ToolCalls) == 0 {
			fmt.Println("assistant:", msg.Content)
			break
		}
		for _, call := range msg.ToolCalls {
			if out, handled := openaix.ExecuteTool(ctx, p.Workspace(), call); handled {
				fmt.Printf("%s → %s\n", call.Function.Name, out.OfTool.Content.OfString.Value)
				params.Messages = append(params.Messages, out)
				continue
			}
			// The program's own tool: a long build log.
			log := strings.Repeat("ok   compiling package\n", 2200) + "main.go:12: undefined: Foo\n"
			params.Messages = append(params.Messages, openai.ToolMessage(log, call.ID))
		}
	}
	// Output:
	// grep_knowledge → 2201:main.go:12: undefined: Foo
	// assistant: main.go uses Foo, which is not defined.
}

// fakeChat answers Chat Completions requests by looking at the last message
// it was sent.
func fakeChat(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	body, _ := io.ReadAll(r.Body)
	json.Unmarshal(body, &req)
	last := fmt.Sprint(req.Messages[len(req.Messages)-1].Content)
	message := `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"build","arguments":"{}"}}]}`
	switch {
	case strings.Contains(last, `<knowledge id="tool_result_call_1"`):
		message = `{"role":"assistant","content":null,"tool_calls":[{"id":"call_2","type":"function","function":{"name":"grep_knowledge","arguments":"{\"artifact_id\":\"tool_result_call_1\",\"pattern\":\"undefined\"}"}}]}`
	case strings.Contains(last, "undefined: Foo"):
		message = `{"role":"assistant","content":"main.go uses Foo, which is not defined."}`
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":%s}]}`, message)
}
