package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/pipeline"
)

// prepare --store-on-replace sends the same request as prepare, and stores
// only the results it replaces or that are large (issue 24: the proxy's
// rule, for the 10 MB request of 100,000 small messages).
func TestPrepareStoreOnReplace(t *testing.T) {
	session := filepath.Join("..", "..", "..", "examples", "session.json")
	run := func(extra ...string) (prepOutput, string) {
		dir, flags := prepDirs(t)
		code, out, errOut := prepRun(t, false, "", append(append([]string{"prepare", "--limit", "14000", session}, flags...), extra...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		res := prepLines(t, out, "messages", "report")[0]
		b, _ := agentctx.MarshalMessages(res.Messages)
		// The paths of the artifacts and archive name each run's directory.
		return res, strings.ReplaceAll(string(b), dir, "DIR")
	}
	every, a := run()
	onReplace, b := run("--store-on-replace")
	if a != b {
		i := 0
		for i < len(a) && i < len(b) && a[i] == b[i] {
			i++
		}
		t.Errorf("--store-on-replace changed the request prepared, from byte %d:\n%.300s\n%.300s", i, a[i:], b[i:])
	}
	all, some := every.Report.Step(pipeline.StepOffload).Offload.Stored, onReplace.Report.Step(pipeline.StepOffload).Offload.Stored
	if some == 0 || some >= all {
		t.Errorf("stored %d results with --store-on-replace, %d without: want fewer, and the replaced ones", some, all)
	}
	t.Logf("stored: %d of %d", some, all)
}
