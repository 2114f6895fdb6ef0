package transcript_test

import (
	"context"
	"fmt"

	"github.com/agentctx/agentctx/transcript"
)

// A Claude Code session that Claude Code compacted is read from its last
// compact boundary on; Notice says what was left out, so a caller can tell
// the user (agentctx prints it on stderr).
func ExampleReadOptions_ParseDocument() {
	const session = `{"type":"user","message":{"role":"user","content":"Fix the test."},"uuid":"u1"}
{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"Looking."}]},"uuid":"a1"}
{"type":"system","subtype":"compact_boundary","content":"Conversation compacted","compactMetadata":{"trigger":"auto","preTokens":150000},"uuid":"b1"}
{"type":"user","message":{"role":"user","content":"This session is being continued from a previous conversation..."},"isCompactSummary":true,"uuid":"s1"}
{"type":"progress","uuid":"p1"}
{"type":"assistant","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"Fixed."}]},"uuid":"a2"}
`
	doc, err := transcript.ParseDocument(context.Background(), []byte(session))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(doc.Format, len(doc.Messages), "messages")
	fmt.Printf("boundary: %+v\n", doc.Boundaries[0])
	fmt.Println(doc.Notice())

	whole, _ := transcript.ReadOptions{WholeHistory: true}.ParseDocument(context.Background(), []byte(session))
	fmt.Println("whole history:", len(whole.Messages), "messages")
	// Output:
	// claude-code 2 messages
	// boundary: {Line:3 Message:0 Trigger:auto PreTokens:150000}
	// 4 records skipped: before compact boundary 2, progress 1, system/compact_boundary 1; 1 compact boundary: the live context is read, from line 3 on
	// whole history: 4 messages
}
