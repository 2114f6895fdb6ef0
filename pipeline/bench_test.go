package pipeline_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/transcript"
)

// benchHistory is a long session: n exchanges, alternately terminal output
// (about 570 tokens) and file reads (about 800 tokens), with a
// 60,000-character log every 50.
func benchHistory(n int) []agentctx.Message {
	msgs := []agentctx.Message{agentctx.NewMessage(agentctx.RoleSystem, agentctx.Text("You are a coding agent."))}
	for i := range n {
		at := now.Add(time.Duration(i-n) * time.Minute)
		out := strings.Repeat(fmt.Sprintf("=== RUN TestCase%d\n--- PASS: TestCase%d (0.0%ds)\n", i, i, i%10), 30)
		tool := "Bash"
		if i%2 == 1 {
			tool = "Read"
			out = strings.Repeat(fmt.Sprintf("%d\tfunc handler%d(w http.ResponseWriter, r *http.Request) {\n", i, i), 40)
		}
		if i%50 == 49 {
			out = strings.Repeat(fmt.Sprintf("GET /api/v1/items/%d 200 %dms\n", i, i%97), 2400)
		}
		msgs = append(msgs, user(fmt.Sprintf("next step %d", i), at))
		msgs = append(msgs, exchange(fmt.Sprintf("toolu_%04d", i), tool, "go test ./...", out, false, at.Add(time.Second))...)
	}
	return msgs
}

func benchOptions(dir string) pipeline.Options {
	return pipeline.Options{
		WorkspaceDir: filepath.Join(dir, "workspace"),
		Compact:      compact.Options{Limit: 100_000, Dir: filepath.Join(dir, "archive")},
		Now:          func() time.Time { return now },
	}
}

// BenchmarkPrepare measures one Prepare of a 300-exchange session (about
// 373,000 tokens, 97,000 after pruning and offloading): "first" with a new Pipeline and an empty workspace
// (every result stored, the middle archived and summarized), "next" the
// request after it, one exchange later (a remembered compaction, nothing
// stored again but the new result).
func BenchmarkPrepare(b *testing.B) {
	msgs := benchHistory(300)
	b.Run("first", func(b *testing.B) {
		root := b.TempDir()
		for i := 0; b.Loop(); i++ {
			p, err := pipeline.New(benchOptions(filepath.Join(root, fmt.Sprint(i))))
			if err != nil {
				b.Fatal(err)
			}
			res, err := p.Prepare(context.Background(), msgs)
			if err != nil || !res.Report.BelowThreshold {
				b.Fatal(err, res.Report.Warnings)
			}
			p.Close()
		}
	})
	b.Run("next", func(b *testing.B) {
		p, err := pipeline.New(benchOptions(b.TempDir()))
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		if _, err := p.Prepare(context.Background(), msgs); err != nil {
			b.Fatal(err)
		}
		grown := append(msgs[:len(msgs):len(msgs)], exchange("toolu_next", "Bash", "ls", "a\nb\n", false, now)...)
		for b.Loop() {
			res, err := p.Prepare(context.Background(), grown)
			if err != nil || res.Report.Step(pipeline.StepCompact).Compact.Reused == 0 {
				b.Fatal(err)
			}
		}
	})
	// "next-decoded" is "next" on messages decoded from JSON, as a
	// middleware or CLI has them, decoded again for each request (the
	// decoding is not measured).
	b.Run("next-decoded", func(b *testing.B) {
		p, err := pipeline.New(benchOptions(b.TempDir()))
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		if _, err := p.Prepare(context.Background(), msgs); err != nil {
			b.Fatal(err)
		}
		data, err := agentctx.MarshalMessages(append(msgs[:len(msgs):len(msgs)], exchange("toolu_next", "Bash", "ls", "a\nb\n", false, now)...))
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			b.StopTimer()
			grown, err := agentctx.UnmarshalMessages(data)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			res, err := p.Prepare(context.Background(), grown)
			if err != nil || res.Report.Step(pipeline.StepCompact).Compact.Reused == 0 {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPrepareShared runs the first Prepare of each shared transcript
// with a 100,000-token window, as "agentctx eval" does (parsing excluded).
func BenchmarkPrepareShared(b *testing.B) {
	files, _ := filepath.Glob(filepath.Join(sharedTranscripts, "*.json*"))
	if len(files) == 0 {
		b.Skip("shared transcripts not present")
	}
	for _, f := range files {
		doc, err := transcript.ReadFile(context.Background(), f, nil)
		if err != nil {
			b.Fatal(err)
		}
		name := strings.SplitN(filepath.Base(f), "_", 2)[0]
		b.Run(name, func(b *testing.B) {
			root := b.TempDir()
			for i := 0; b.Loop(); i++ {
				for k, conv := range doc.Conversations() {
					p, err := pipeline.New(benchOptions(filepath.Join(root, fmt.Sprint(i, "-", k))))
					if err != nil {
						b.Fatal(err)
					}
					if _, err := p.PrepareDocument(context.Background(), conv); err != nil {
						b.Fatal(err)
					}
					p.Close()
				}
			}
		})
	}
}
