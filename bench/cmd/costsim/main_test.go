package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/e2eclient"
	"github.com/agentctx/agentctx/internal/testbin"
)

// TestSmoke runs the simulation tiny: both clients, both arms, three
// steps, through the agentctx proxy built once per source tree
// (internal/testbin). It needs the real clients, so it skips without npm
// (unless CI is set) and with -short.
func TestSmoke(t *testing.T) {
	cfg := config{Clients: []string{"claude", "codex"}, Arms: []string{"direct", "proxy"}, Steps: 3, ClockSpeed: 60,
		Timeout: 2 * time.Minute, ClientDir: e2eclient.Install(t), Bin: testbin.Agentctx(t)}
	var log bytes.Buffer
	res, err := run(t.Context(), cfg, &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, e2eclient.Tail(log.String()))
	}
	if len(res) != 4 {
		t.Fatalf("%d results, want 4", len(res))
	}
	for _, r := range res {
		if !r.OK || r.Bill.Rejections != 0 || r.Bill.Requests < 4 || r.Bill.USD <= 0 || r.Stats.Steps != 3 {
			t.Errorf("%s %s: %+v", r.Client, r.Arm, r)
		}
	}
	var table strings.Builder
	printTable(&table, cfg, res)
	if n := strings.Count(table.String(), "| correct |"); n != 4 {
		t.Errorf("the table shows %d correct answers, want 4:\n%s", n, table.String())
	}
	printTable(io.Discard, cfg, nil)
}
