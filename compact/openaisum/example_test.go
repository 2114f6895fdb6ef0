package openaisum_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/compact/openaisum"
)

func ExampleNew() {
	// A stand-in for the OpenAI API (or a local server); a local server needs no key.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"qwen3:8b",
			"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"## Goals and key decisions\n- Greet the user."}}]}`)
	}))
	defer srv.Close()

	sum, err := openaisum.New(openaisum.Options{BaseURL: srv.URL + "/v1", Model: "qwen3:8b"})
	if err != nil {
		fmt.Println(err)
		return
	}
	msgs := []agentctx.Message{
		agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("Say hello.")),
		agentctx.NewMessage(agentctx.RoleAssistant, agentctx.Text("Hello!")),
	}
	res, err := compact.Compact(context.Background(), msgs, compact.Options{
		Summarizer: sum, Force: true, NoArchive: true, TailRatio: -1,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Compacted)
	fmt.Println(res.Summary)
	// Output:
	// true
	// # Summary of the earlier conversation
	//
	// ## Goals and key decisions
	// - Greet the user.
}
