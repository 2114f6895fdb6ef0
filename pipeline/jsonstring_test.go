package pipeline_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// A JSON-encoded result (Cline's) is stored as its text, and what the
// pipeline stored reads back as the result as sent (issue 47, item 4).
func TestJSONStringResultVerifiesAsSent(t *testing.T) {
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "line %d\t\"quoted\"\n", i)
	}
	sent, _ := json.Marshal(b.String())
	o := options(t)
	o.Verify = true
	p := newPipeline(t, o)
	res := mustPrepare(t, p, history(user("go", now.Add(-time.Minute)), exchange("c1", "run_commands", "make", string(sent), false, now)))
	off := res.Report.Step("offload").Offload
	if off == nil || !off.Verified.OK() || off.Verified.Checked != 1 {
		t.Fatalf("offload step: %+v", off)
	}
	if got := resultText(res.Messages, "c1"); !strings.Contains(got, `lines="2000"`) {
		t.Errorf("the reference does not give the text's lines:\n%.400s", got)
	}
}
