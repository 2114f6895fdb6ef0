package anthropicsum_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/compact/anthropicsum"
)

func ExampleNew() {
	// A stand-in for the Anthropic API; leave BaseURL empty for the real one.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5",
			"content":[{"type":"text","text":"## Goals and key decisions\n- Greet the user."}],
			"stop_reason":"end_turn","usage":{"input_tokens":50,"output_tokens":9}}`)
	}))
	defer srv.Close()

	sum, err := anthropicsum.New(anthropicsum.Options{APIKey: "sk-ant-example", BaseURL: srv.URL})
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
