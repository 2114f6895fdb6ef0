package cli

import (
	"io"
	"log/slog"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/prune"
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

// The live commands clear stale output with the English placeholder; the
// seed's text stays the single-shot default, and --placeholder wins,
// the seed's text given on the command line too (issue 48).
func TestProxyPlaceholderDefault(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, prune.EnglishPlaceholder},
		{[]string{"--placeholder", "[stale]"}, "[stale]"},
		{[]string{"--placeholder", prune.DefaultPlaceholder}, prune.DefaultPlaceholder},
	} {
		po := proxyPipelineOptions(t, tc.args...)
		if po.Prune.Placeholder != tc.want {
			t.Errorf("%v: Prune.Placeholder = %q, want %q", tc.args, po.Prune.Placeholder, tc.want)
		}
	}
	var f prepareFlags
	fs := pflag.NewFlagSet("prepare", pflag.ContinueOnError)
	f.register(fs, false)
	if f.placeholder != prune.DefaultPlaceholder {
		t.Errorf("prepare's placeholder %q, want the seed's", f.placeholder)
	}
}

// The live commands read the shape of a shell transcript (a tool they do
// not know by name is learned from its output); prepare keeps the seed's
// rule unless --by-shape, and --by-shape=false turns it off in the proxy
// (issue 47).
func TestProxyByShapeDefault(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"--by-shape=false"}, false},
	} {
		if po := proxyPipelineOptions(t, tc.args...); po.Prune.ByShape != tc.want {
			t.Errorf("%v: Prune.ByShape = %v, want %v", tc.args, po.Prune.ByShape, tc.want)
		}
	}
	var f prepareFlags
	fs := pflag.NewFlagSet("prepare", pflag.ContinueOnError)
	f.register(fs, false)
	if o := f.pruneOptions(fs.Changed); o.ByShape {
		t.Error("prepare reads shapes by default, want the seed's rule")
	}
	if err := fs.Parse([]string{"--by-shape"}); err != nil {
		t.Fatal(err)
	}
	if o := f.pruneOptions(fs.Changed); !o.ByShape {
		t.Error("prepare --by-shape does not read shapes")
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
