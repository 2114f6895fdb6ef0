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
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/openaix"
	"github.com/agentctx/agentctx/pipeline"
)

// An agent loop on the Responses API (store false, the whole input each
// time) in native mode: the pipeline's compactions of Responses requests
// would be written by OpenAI's /v1/responses/compact. Here the 50,000-
// character result of the program's bash tool goes to the model as a
// reference, and the model (a fake server) reads the error line back with
// grep_knowledge, dispatched by ExecuteResponsesTool.
func Example_responses() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "openaix-example-")
	defer os.RemoveAll(dir)

	p, err := pipeline.New(pipeline.Options{SessionID: "s1", WorkspaceDir: filepath.Join(dir, "ws"),
		Compact: compact.Options{Dir: filepath.Join(dir, "archive"), Summarizer: openaix.NativeSummarizer(openaix.NativeSummarizerOptions{})}})
	if err != nil {
		panic(err)
	}
	defer p.Close()
	api := httptest.NewServer(http.HandlerFunc(fakeResponses))
	defer api.Close()

	client := openai.NewClient(option.WithBaseURL(api.URL), option.WithAPIKey("not-needed"),
		openaix.WithPipelineNative(p, openaix.Options{}))
	tools := append([]responses.ToolUnionParam{responses.ToolParamOfFunction("bash", map[string]any{"type": "object"}, false)},
		openaix.ResponsesTools(p.Workspace())...)
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("Why did the build fail?", responses.EasyInputMessageRoleUser)}
	for {
		res, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-test", Store: openai.Bool(false), Tools: tools,
			Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}})
		if err != nil {
			panic(err)
		}
		calls := 0
		for _, item := range res.Output {
			input = append(input, param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(item.RawJSON())))
			if item.Type != "function_call" {
				continue
			}
			calls++
			call := item.AsFunctionCall()
			if out, handled := openaix.ExecuteResponsesTool(ctx, p.Workspace(), call); handled {
				input = append(input, out)
				continue
			}
			log := strings.Repeat("compile ok\n", 4_500) + "error: undefined: Foo\n" // the program's own tool
			input = append(input, responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
				CallID: openai.String(call.CallID), Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String(log)}}})
		}
		if calls == 0 {
			fmt.Println(res.OutputText())
			return
		}
	}
	// Output:
	// The build fails at line 4501: error: undefined: Foo
}

// fakeResponses is the model: it runs bash, then greps the reference it
// is given, then reports the line it read back.
func fakeResponses(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Input []map[string]any `json:"input"`
	}
	json.Unmarshal(body, &req)
	last := req.Input[len(req.Input)-1]
	item := `{"type":"message","id":"m1","role":"assistant","status":"completed","content":[{"type":"output_text","text":%q,"annotations":[]}]}`
	var out string
	switch output, _ := last["output"].(string); {
	case last["type"] != "function_call_output":
		out = `{"type":"function_call","id":"fc1","call_id":"call_1","name":"bash","arguments":"{}","status":"completed"}`
	case strings.Contains(output, "<knowledge_list>"):
		out = `{"type":"function_call","id":"fc2","call_id":"call_2","name":"grep_knowledge","arguments":"{\"artifact_id\":\"tool_result_call_1\",\"pattern\":\"error\"}","status":"completed"}`
	default:
		line, text, _ := strings.Cut(strings.TrimSpace(output), ":")
		out = fmt.Sprintf(item, "The build fails at line "+line+": "+text)
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"resp_1","object":"response","status":"completed","model":"gpt-test","output":[%s],"usage":{"input_tokens":100,"output_tokens":10,"total_tokens":110}}`, out)
}
