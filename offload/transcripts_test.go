package offload_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/offload"
	"github.com/agentctx/agentctx/transcript"
)

// transcriptsDir holds real agent transcripts; tests that use it skip when
// it is absent.
const transcriptsDir = "/work/shared/transcripts"

// TestBatchTranscripts offloads real transcripts and checks that every file
// holds exactly the content it replaced, pairing is kept, the input is not
// modified, and a second run changes nothing.
func TestBatchTranscripts(t *testing.T) {
	ents, err := os.ReadDir(transcriptsDir)
	if err != nil {
		t.Skipf("no transcripts: %v", err)
	}
	for _, e := range ents {
		path := filepath.Join(transcriptsDir, e.Name())
		doc, err := transcript.ReadFile(t.Context(), path, nil)
		if err != nil {
			continue // not a conversation document
		}
		t.Run(e.Name(), func(t *testing.T) {
			msgs := doc.Messages
			unchanged := snapshot(t, msgs)
			dir := t.TempDir()
			res, err := offload.Batch(t.Context(), msgs, offload.BatchOptions{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			unchanged()
			var orig []agentctx.Content
			for r := range agentctx.ToolResults(msgs) {
				orig = append(orig, r.Content)
			}
			f, freed := 0, 0
			i := 0
			for r := range agentctx.ToolResults(res.Messages) {
				o := orig[i]
				i++
				if r.Content.Equal(o) {
					if o.Chars() >= offload.DefaultMinChars && !offload.IsReference(o.Text()) {
						t.Errorf("result %s of %d characters was kept", r.ID, o.Chars())
					}
					continue
				}
				if got := readFile(t, res.Files[f]); got != o.AsText() {
					t.Errorf("file %s differs from the content it replaced", res.Files[f])
				}
				if want := "[Content offloaded to: ./" + filepath.Base(res.Files[f]) + "]"; r.Content.Text() != want {
					t.Errorf("reference %q, want %q", r.Content.Text(), want)
				}
				freed += o.Chars()
				f++
			}
			if f != res.OffloadedCount || f != len(res.Files) || freed != res.FreedChars {
				t.Errorf("stats: count %d files %d freed %d; counted %d, %d", res.OffloadedCount, len(res.Files), res.FreedChars, f, freed)
			}
			if before, after := agentctx.ValidatePairing(msgs), agentctx.ValidatePairing(res.Messages); before.Valid && !after.Valid {
				t.Errorf("pairing broken: %v", after.Issues)
			}
			again, err := offload.Batch(t.Context(), msgs, offload.BatchOptions{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			if encode(t, again.Messages) != encode(t, res.Messages) {
				t.Errorf("second run differs")
			}
			t.Logf("%d messages, %d offloaded, %d characters freed", len(msgs), res.OffloadedCount, res.FreedChars)
		})
	}
}
