package cli

import (
	"io"
	"log/slog"
	"testing"

	"github.com/spf13/cobra"

	"github.com/agentctx/agentctx/pipeline"
)

// TestProxyTailRatioDefault: the live proxy keeps the pipeline's tail
// (pipeline.PricedTailRatio under the priced trigger), not the flag's
// default, which is the single-shot commands' (issue 45: the flag's 0.1
// reached the pipeline as given, and the priced tail never applied).
func TestProxyTailRatioDefault(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want float64
	}{
		{nil, 0},
		{[]string{"--tail-ratio", "0.1"}, 0.1},
		{[]string{"--tail-ratio", "0.2"}, 0.2},
		{[]string{"--tail-ratio", "0"}, -1},
	} {
		po := proxyPipelineOptions(t, tc.args...)
		if po.Compact.TailRatio != tc.want {
			t.Errorf("%v: Compact.TailRatio = %v, want %v", tc.args, po.Compact.TailRatio, tc.want)
		}
	}
}

// proxyPipelineOptions returns the pipeline options the proxy command
// builds from args.
func proxyPipelineOptions(t *testing.T, args ...string) pipeline.Options {
	t.Helper()
	var p proxyFlags
	cmd := &cobra.Command{Use: "proxy", Args: cobra.NoArgs}
	p.register(cmd, "127.0.0.1:0")
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	e := &env{s: &Streams{Out: io.Discard, Err: io.Discard}, logger: log}
	po, _, _, err := p.pipelineOptions(cmd, e, log)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return po
}
