package offload_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/offload"
)

func ExampleBatch() {
	dir, _ := os.MkdirTemp("", "offload-example-")
	defer os.RemoveAll(dir)

	msgs, _ := agentctx.UnmarshalMessages([]byte(`[
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_01abc","name":"read_file","input":{"path":"main.go"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01abc","content":"` + strings.Repeat("x", 120) + `"}]}
	]`))

	res, err := offload.Batch(context.Background(), msgs, offload.BatchOptions{Dir: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.OffloadedCount, res.FreedChars, filepath.Base(res.Files[0]))
	fmt.Println(res.Messages[1].Content.Blocks()[0].Content.Text())
	// Output:
	// 1 120 tool-result-toolu_01abc.md
	// [Content offloaded to: ./tool-result-toolu_01abc.md]
}

func ExampleMessage() {
	// Any FileWriter will do; this one prints instead of writing.
	w := offload.WriterFunc(func(_ context.Context, path string, data []byte) error {
		fmt.Printf("write %d bytes to %s\n", len(data), filepath.ToSlash(path))
		return nil
	})
	msg := agentctx.NewMessage(agentctx.RoleTool, agentctx.Text(strings.Repeat("y", 1000)))
	msg.ToolCallID = "toolu_xyz"

	res, err := offload.Message(context.Background(), msg, offload.MessageOptions{
		Dir:       "/var/offload",
		SessionID: "session-abc123",
		Writer:    w,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(filepath.ToSlash(res.Message.Content.Text()))
	fmt.Println(res.FreedChars)
	// Output:
	// write 1000 bytes to /var/offload/session-abc123/toolu_xyz.md
	// [Tool result offloaded to file: /var/offload/session-abc123/toolu_xyz.md]
	// 927
}
