package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/pipeline"
)

// now is the clock of the tests.
var now = time.Date(2026, 1, 31, 2, 0, 0, 0, time.UTC)

func user(text string, at time.Time) agentctx.Message {
	return agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(text)).WithTimestamp(at)
}

func say(text string, at time.Time) agentctx.Message {
	return agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.TextBlock(text))).WithTimestamp(at)
}

// exchange is an assistant call and the user message answering it.
func exchange(id, tool, command, output string, isError bool, at time.Time) []agentctx.Message {
	in, _ := json.Marshal(map[string]string{"command": command})
	return []agentctx.Message{
		agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.ToolUseBlock(id, tool, in))).WithTimestamp(at.Add(-time.Second)),
		agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock(id, agentctx.Text(output), isError))).WithTimestamp(at),
	}
}

// history builds a conversation from parts.
func history(parts ...any) []agentctx.Message {
	var out []agentctx.Message
	for _, p := range parts {
		switch v := p.(type) {
		case agentctx.Message:
			out = append(out, v)
		case []agentctx.Message:
			out = append(out, v...)
		default:
			panic(fmt.Sprintf("history: %T", p))
		}
	}
	return out
}

// options returns options that write under a test directory, with the
// test clock.
func options(t *testing.T) pipeline.Options {
	dir := t.TempDir()
	return pipeline.Options{
		WorkspaceDir: filepath.Join(dir, "workspace"),
		Compact:      compact.Options{Dir: filepath.Join(dir, "archive")},
		Now:          func() time.Time { return now },
	}
}

func newPipeline(t *testing.T, o pipeline.Options) *pipeline.Pipeline {
	t.Helper()
	p, err := pipeline.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// prepare runs Prepare and fails the test if the input changed in any way.
func prepare(t *testing.T, p *pipeline.Pipeline, msgs []agentctx.Message) (*pipeline.Result, error) {
	t.Helper()
	before, err := agentctx.MarshalMessages(msgs)
	if err != nil {
		t.Fatal(err)
	}
	clones := make([]agentctx.Message, len(msgs))
	for i := range msgs {
		clones[i] = msgs[i].Clone()
	}
	res, perr := p.Prepare(context.Background(), msgs)
	after, _ := agentctx.MarshalMessages(msgs)
	if !bytes.Equal(before, after) {
		t.Fatalf("Prepare modified its input:\nbefore %s\nafter  %s", before, after)
	}
	for i := range msgs {
		a, _ := clones[i].MarshalJSON()
		b, _ := msgs[i].MarshalJSON()
		if !bytes.Equal(a, b) {
			t.Fatalf("Prepare modified input message %d", i)
		}
	}
	return res, perr
}

func mustPrepare(t *testing.T, p *pipeline.Pipeline, msgs []agentctx.Message) *pipeline.Result {
	t.Helper()
	res, err := prepare(t, p, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Report.Valid {
		t.Fatalf("output unpaired: %v", res.Report.Step(pipeline.StepValidate).Pairing.Issues)
	}
	// The report is the output's, also when it is the input's (the input
	// validated once, by the repair step).
	if got, want := *res.Report.Step(pipeline.StepValidate).Pairing, agentctx.ValidatePairing(res.Messages); !reflect.DeepEqual(got, want) {
		t.Fatalf("the validate step reports %+v, the output is %+v", got, want)
	}
	return res
}

// countingSummarizer writes a short summary and counts its calls.
type countingSummarizer struct {
	calls atomic.Int32
	fail  bool
}

func (s *countingSummarizer) Summarize(ctx context.Context, req compact.Request) (string, error) {
	n := s.calls.Add(1)
	if s.fail {
		return "", fmt.Errorf("model unavailable (attempt %d)", n)
	}
	return fmt.Sprintf("%s\n\nsummary %d of %d messages", compact.SummaryTitle, n, len(req.Messages)), nil
}

// resultText returns the text content of the tool result with id.
func resultText(msgs []agentctx.Message, id string) string {
	for r := range agentctx.ToolResults(msgs) {
		if r.ID == id {
			return r.Content.AsText()
		}
	}
	return "<missing>"
}

func stepNames(r *pipeline.Report) string {
	var names []string
	for _, s := range r.Steps {
		names = append(names, string(s.Step))
	}
	return strings.Join(names, ",")
}

// sharedTranscripts holds the project's development transcripts, outside
// the repository; tests that use it skip when it is absent.
const sharedTranscripts = "../../shared/transcripts"
