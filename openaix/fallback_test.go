package openaix_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/openaix"
	"github.com/agentctx/agentctx/pipeline"
)

// A provider compaction that hangs past its deadline falls back to the
// client-side summary on a deadline of its own, through the SDK
// middleware: the request is compacted, not sent over the limit (issue
// 49.3: the fallback got the expired context and returned at once). The
// deadline is the compaction's AttemptTimeout or the summarizer's own
// Timeout.
func TestNativeCompactionTimeoutFallsBack(t *testing.T) {
	for _, c := range []struct {
		name             string
		attempt, timeout time.Duration
	}{
		{"attempt-timeout", 200 * time.Millisecond, 0},
		{"summarizer-timeout", 0, 200 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			pl, err := pipeline.New(pipeline.Options{SessionID: "s1", WorkspaceDir: filepath.Join(dir, "ws"), NoPrune: true, Trigger: pipeline.TriggerThreshold,
				Compact: compact.Options{Dir: filepath.Join(dir, "archive"), Limit: 3000, MaxRetries: -1, AttemptTimeout: c.attempt,
					Summarizer: openaix.NativeSummarizer(openaix.NativeSummarizerOptions{Timeout: c.timeout})}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { pl.Close() })
			fake := fakeupstream.New(fakeupstream.Options{})
			release := make(chan struct{})
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == fakeupstream.CompactPath {
					io.Copy(io.Discard, r.Body)
					select { // hangs until its client gives up
					case <-r.Context().Done():
					case <-release:
					}
					return
				}
				fake.ServeHTTP(w, r)
			}))
			t.Cleanup(up.Close)
			t.Cleanup(func() { close(release) })
			cl := openai.NewClient(option.WithBaseURL(up.URL+"/v1/"), option.WithAPIKey("test"), option.WithMaxRetries(0), openaix.WithPipelineNative(pl, openaix.Options{}))
			var input responses.ResponseInputParam
			for i := range 24 {
				input = append(input,
					responses.ResponseInputItemParamOfMessage(fmt.Sprintf("request %d: %s", i, strings.Repeat(fmt.Sprintf("word%d ", i), 100)), responses.EasyInputMessageRoleUser),
					responses.ResponseInputItemParamOfMessage(fmt.Sprintf("answer %d: %s", i, strings.Repeat(fmt.Sprintf("reply%d ", i), 85)), responses.EasyInputMessageRoleAssistant))
			}
			input = append(input, responses.ResponseInputItemParamOfMessage("and now the next step", responses.EasyInputMessageRoleUser))
			// A budget far above the deadlines: a fallback that never
			// comes fails the test, it does not hang it.
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			if _, err := cl.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-5", Store: openai.Bool(false),
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}}); err != nil {
				t.Fatal(err)
			}
			sent := 0
			for _, rec := range fake.Records() {
				if rec.Path == "/v1/responses" {
					sent++
					if !bytes.Contains(rec.Body, []byte(compact.SummaryTitle)) {
						t.Errorf("the request went upstream without a summary (%d bytes)", len(rec.Body))
					}
				}
			}
			if sent != 1 {
				t.Errorf("%d requests upstream, want 1", sent)
			}
		})
	}
}
