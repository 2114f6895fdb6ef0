package agentctx_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
)

func readDoc(t *testing.T, path string) (*agentctx.Document, []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := agentctx.ParseDocument(context.Background(), append([]byte(nil), data...))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc, data
}

// TestParseDocumentAgentFiles: ParseDocument reads request formats; an
// agent's transcript is an input error that says where such files go
// (package transcript), not a document read wrong.
func TestParseDocumentAgentFiles(t *testing.T) {
	for _, path := range []string{
		"testdata/claude_code.jsonl",
		"testdata/openhands_output.jsonl",
		"testdata/swe_agent.traj",
	} {
		t.Run(path, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := agentctx.ParseDocument(context.Background(), data)
			if err == nil {
				t.Fatalf("read as %s with %d messages, want an error", doc.Format, len(doc.Messages))
			}
			if !errors.Is(err, agentctx.ErrInvalidInput) || !strings.Contains(err.Error(), "package transcript") {
				t.Errorf("error %q: want an input error naming package transcript", err)
			}
		})
	}
	// A request body, a list of messages and JSON Lines of messages read.
	for _, path := range []string{"testdata/anthropic_request.json", "testdata/openai_chat.json", "testdata/messages.jsonl"} {
		if doc, _ := readDoc(t, path); len(doc.Messages) == 0 {
			t.Errorf("%s: no messages", path)
		}
	}
}
