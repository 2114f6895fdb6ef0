package proxy_test

import (
	"os"
	"os/exec"
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/proxy"
)

// A proxy that has not collected garbage yet (a small one, under the
// command's GC percent of 400, may run for hours without) reports the
// heap it holds, not 0. The test runs itself again with GOGC=off, so
// that no collection happens in the process it checks.
func TestLiveHeapBeforeFirstGC(t *testing.T) {
	if os.Getenv("AGENTCTX_TEST_NO_GC") == "1" {
		cycles := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
		metrics.Read(cycles)
		if n := cycles[0].Value.Uint64(); n != 0 {
			t.Skipf("%d collections already: the case does not arise", n)
		}
		srv, err := proxy.New(proxy.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if p := srv.ProcessStats(); p.LiveHeapBytes == 0 {
			t.Errorf("live_heap_bytes is 0 before the first collection: %+v", p)
		}
		return
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestLiveHeapBeforeFirstGC$", "-test.v")
	cmd.Env = append(os.Environ(), "AGENTCTX_TEST_NO_GC=1", "GOGC=off")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Errorf("the run without garbage collection: %v\n%s", err, out)
	}
}
