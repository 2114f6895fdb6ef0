package pipeline

import (
	"strings"
	"testing"

	"github.com/agentctx/agentctx/compact"
)

// The compact step's line says why nothing was compacted in words, never
// an empty reason (issue 48: a list below the trigger printed "nothing
// compacted ()").
func TestCompactSummaryWhyNot(t *testing.T) {
	for _, r := range []compact.Reason{"", compact.ReasonBelowThreshold, compact.ReasonEmpty, compact.ReasonNothingToCompact,
		compact.ReasonSummarizerFailed, compact.ReasonRetainedOverThreshold, compact.ReasonSummaryOverThreshold} {
		s := StepReport{Step: StepCompact, Compact: &CompactReport{Reason: r}}
		line := s.summary()
		if line == "" || strings.Contains(line, "()") || strings.Contains(line, "_") {
			t.Errorf("reason %q: %q", r, line)
		}
	}
	s := StepReport{Step: StepCompact, Compact: &CompactReport{}}
	if got := s.summary(); !strings.HasPrefix(got, "not needed") {
		t.Errorf("below the trigger: %q", got)
	}
}
