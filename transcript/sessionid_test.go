package transcript_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/transcript"
)

func TestSessionID(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"claude code", `{"type":"user","sessionId":"abc-1","uuid":"u1","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"hi"}}
{"type":"assistant","sessionId":"abc-1","uuid":"u2","parentUuid":"u1","timestamp":"2026-01-01T00:00:01Z","message":{"role":"assistant","id":"m1","content":[{"type":"text","text":"yo"}]}}
`, "abc-1"},
		{"claude code without one", `{"type":"user","uuid":"u1","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"hi"}}
`, ""},
		{"openai messages", `[{"role":"user","content":"hi","sessionId":"x"}]`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := transcript.ReadDocument(context.Background(), strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if got := transcript.SessionID(doc); got != tt.want {
				t.Errorf("SessionID = %q, want %q", got, tt.want)
			}
		})
	}
}
