package enginetest_test

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/proxy/enginetest"
)

// brokenEngine wraps a PipelineEngine and breaks one rule.
type brokenEngine struct {
	proxy.Engine
	how string
}

func (b brokenEngine) Prepare(ctx context.Context, req *proxy.Request) (*proxy.Prepared, error) {
	p, err := b.Engine.Prepare(ctx, req)
	if err != nil || len(p.Messages) < 3 {
		return p, err
	}
	switch b.how {
	case "drop-last": // loses the open turn
		p.Messages = p.Messages[:len(p.Messages)-2]
	case "lie": // changes a message but claims Unchanged
		m := p.Messages[0].WithContent(agentctx.Text("changed"))
		p.Messages = append([]agentctx.Message{m}, p.Messages[1:]...)
		p.Unchanged, p.TokensAfter = true, p.TokensBefore
	case "stale-source": // changes a message but says it kept it
		m := p.Messages[0].WithContent(agentctx.Text("changed"))
		p.Messages = append([]agentctx.Message{m}, p.Messages[1:]...)
		p.Unchanged, p.Facts = false, nil
		if len(p.Sources) == len(p.Messages) {
			p.Sources = slices.Clone(p.Sources)
			p.Sources[0] = 0
		}
	case "stale-facts": // gives the first message the last one's facts
		if n := len(p.Facts); n == len(p.Messages) {
			p.Facts = slices.Clone(p.Facts)
			p.Facts[0] = p.Facts[n-1]
		}
	case "mutate": // modifies the request
		req.Document.Messages[0] = req.Document.Messages[0].WithContent(agentctx.Text("mutated"))
	case "unpair": // drops a tool result, keeping its call
		for i := len(p.Messages) - 2; i > 0; i-- {
			if p.Messages[i].Role == agentctx.RoleTool || p.Messages[i].Role == "user" && i > 1 {
				p.Messages = append(p.Messages[:i:i], p.Messages[i+1:]...)
				break
			}
		}
	}
	return p, nil
}

// TestBrokenEngines runs the suite on Engines that each break a rule, in
// a child process, and checks that it fails naming the rule: the suite can
// fail.
func TestBrokenEngines(t *testing.T) {
	if how := os.Getenv("ENGINETEST_BROKEN"); how != "" {
		enginetest.Run(t, enginetest.Options{APIs: []proxy.API{proxy.APIAnthropic}, Turns: 6, ResultChars: 2000,
			New: func(t *testing.T, dir string) proxy.Engine {
				return brokenEngine{Engine: pipelineEngine(9000)(t, dir), how: how}
			}, Known: knownPipeline})
		return
	}
	if testing.Short() {
		t.Skip("runs the suite in child processes")
	}
	for how, want := range map[string]string{
		"drop-last":    "LastTurn",
		"lie":          "Unchanged claimed",
		"mutate":       "modified the request's Document",
		"unpair":       "Pairing",
		"stale-source": "Sources: message",
		"stale-facts":  "Facts: message 0's Hash",
	} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestBrokenEngines$/^anthropic$/^Session$", "-test.count=1")
			cmd.Env = append(os.Environ(), "ENGINETEST_BROKEN="+how)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed an Engine that breaks %q:\n%s", want, out)
			}
			if !strings.Contains(string(out), want) {
				t.Errorf("the suite failed, but not naming %q:\n%.3000s", want, out)
			}
		})
	}
}
