package pipeline_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

// At debug level each request logs what its compaction was decided on
// (the plan's inputs from the session state, the estimate and the
// trigger): the record a live run and its replay are compared by
// (bench/cmd/hindsight -log, proxy -v). Above debug it logs none.
func TestPlanLoggedAtDebug(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		var logs lockedBuffer
		o := options(t)
		o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: level}))
		p := newPipeline(t, o)
		msgs := history(user("build it", now.Add(-time.Hour)), exchange("c1", "Bash", "make", "built\n", false, now.Add(-time.Hour)))
		mustPrepare(t, p, msgs)
		mustPrepare(t, p, msgs)
		got := logs.count(`msg="pipeline: plan"`)
		if level > slog.LevelDebug {
			if got != 0 {
				t.Errorf("level %v: %d plan records, want none", level, got)
			}
			continue
		}
		if got != 2 {
			t.Errorf("%d plan records for 2 requests, want 2:\n%s", got, logs.b.String())
		}
		for _, f := range []string{"requests=1 ", "colds=", "forwarded_growth=", "read_backs=", "estimate=", "trigger=", "compact=false"} {
			if !strings.Contains(logs.b.String(), f) {
				t.Errorf("the plan record has no %s:\n%s", f, logs.b.String())
			}
		}
	}
}
