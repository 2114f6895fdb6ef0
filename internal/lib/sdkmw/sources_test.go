package sdkmw

import (
	"slices"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/pipeline"
)

// TestStrippedSources: a kept message whose metadata is stripped before
// it is sent is no longer the input's.
func TestStrippedSources(t *testing.T) {
	plain := agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("a"))
	stamped := plain.WithTimestamp(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	status, err := plain.WithField(agentctx.FieldMessageStatus, "done")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		res  pipeline.Result
		want []int
	}{
		{"kept", pipeline.Result{Messages: []agentctx.Message{plain, plain}, Sources: []int{0, 1}}, []int{0, 1}},
		{"metadata", pipeline.Result{Messages: []agentctx.Message{stamped, status, plain}, Sources: []int{0, 1, -1}}, []int{-1, -1, -1}},
		{"not said", pipeline.Result{Messages: []agentctx.Message{plain}}, nil},
		{"another list", pipeline.Result{Messages: []agentctx.Message{plain}, Sources: []int{0, 1}}, nil},
	} {
		if got := strippedSources(&tc.res); !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
