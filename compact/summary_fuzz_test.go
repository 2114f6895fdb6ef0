package compact_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
)

func FuzzFormatCall(f *testing.F) {
	for _, s := range []string{`{"command":"ls"}`, `{"a":[{"b":"c\nd"}],"e":null}`, `[1,2]`, `"x"`, `{"a":`, ``, `{"":{"":[[]]}}`} {
		f.Add("Bash", s)
	}
	f.Fuzz(func(t *testing.T, name, input string) {
		got := compact.FormatCall(name, []byte(input), 50)
		if !strings.HasPrefix(got, name) {
			t.Errorf("FormatCall(%q, %q) = %q does not start with the name", name, input, got)
		}
	})
}

// FuzzExtractive summarizes any message list the decoder accepts: never a
// panic, always the title, the same bytes twice, and a score.
func FuzzExtractive(f *testing.F) {
	f.Add(session)
	f.Add(`[{"role":"user","content":"a_b c.d /x/y.go"},{"role":"assistant","content":[{"type":"tool_use","id":"1","name":"Edit","input":{"file_path":"/x/y.go","old_string":"a","new_string":"b"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"1","content":"此命令返回内容已过时"}]}]`)
	f.Fuzz(func(t *testing.T, data string) {
		msgs, err := agentctx.UnmarshalMessages([]byte(data))
		if err != nil {
			return
		}
		s1, err := compact.Extractive{MaxTokens: 500}.Summarize(context.Background(), compact.Request{Messages: msgs})
		if err != nil {
			t.Fatal(err)
		}
		s2, _ := compact.Extractive{MaxTokens: 500}.Summarize(context.Background(), compact.Request{Messages: msgs})
		if s1 != s2 || !strings.HasPrefix(s1, compact.SummaryTitle) {
			t.Errorf("summary not deterministic or untitled:\n%s", s1)
		}
		_ = compact.ScoreSummary(s1, msgs, msgs, compact.ScoreOptions{})
	})
}
