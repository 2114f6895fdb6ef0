package main

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/testkit/e2eclient"
	"github.com/agentctx/agentctx/internal/testkit/testbin"
)

// TestSmoke runs the simulation tiny: both clients, both arms, three
// steps, through the agentctx proxy built once per source tree
// (internal/testkit/testbin), the four runs side by side (each has its own
// directories, fake and proxy). It runs the ttl1h regime with a trace, so
// it checks with the real clients that the trace holds their requests as
// they asked for the long cache lifetimes. It needs the real clients, so
// it skips without npm (unless CI is set) and with -short.
// Its clock runs ×600 (the command's default is ×60): the model's
// latency and the steps' sleeps are waited out in a tenth of the time,
// and the smoke checks nothing that depends on the speed.
func TestSmoke(t *testing.T) {
	base := config{Clients: []string{"claude", "codex"}, Regimes: []string{"ttl1h"}, Lengths: []int{3}, Outputs: []string{"large"},
		Thinking: []bool{false}, Runs: 1, Parallel: 1, Arms: []string{"direct", "proxy"}, ClockSpeed: 600,
		Timeout: 2 * time.Minute, ClientDir: e2eclient.Install(t), Bin: testbin.Agentctx(t), Trace: t.TempDir()}
	var (
		mu  sync.Mutex
		got = map[string]result{}
	)
	t.Run("runs", func(t *testing.T) {
		for _, client := range base.Clients {
			for _, arm := range base.Arms {
				t.Run(client+"-"+arm, func(t *testing.T) {
					t.Parallel()
					cfg := base
					cfg.Clients, cfg.Arms = []string{client}, []string{arm}
					var log bytes.Buffer
					res, err := run(t.Context(), cfg, &log)
					if err != nil {
						t.Fatalf("%v\n%s", err, e2eclient.Tail(log.String()))
					}
					if len(res) != 1 {
						t.Fatalf("%d results, want 1", len(res))
					}
					r := res[0]
					if !r.OK || r.Bill.Rejections != 0 || r.Bill.Requests < 4 || r.Bill.USD <= 0 || r.Stats.Steps != 3 || r.RewriteFailed != 0 {
						t.Errorf("%s %s: %+v", r.Cell.Client, r.Arm, r)
					}
					checkTrace(t, filepath.Join(cfg.Trace, client+"-"+arm), client)
					mu.Lock()
					got[client+" "+arm] = r
					mu.Unlock()
				})
			}
		}
	})
	var res []result
	for _, client := range base.Clients {
		for _, arm := range base.Arms {
			if r, ok := got[client+" "+arm]; ok {
				res = append(res, r)
			}
		}
	}
	if len(res) != 4 {
		t.Fatalf("%d results, want 4", len(res))
	}
	var table strings.Builder
	printTable(&table, base, res)
	if n := strings.Count(table.String(), "| correct |"); n != 4 {
		t.Errorf("the table shows %d correct answers, want 4:\n%s", n, table.String())
	}
	printTable(io.Discard, base, nil)
}
