package prune_test

import (
	"reflect"
	"testing"

	"github.com/agentctx/agentctx/prune"
)

// Select reports what Prune reports, without the view (issue 24: the
// pipeline applies the decisions itself and copied a long history only to
// drop the copy).
func TestSelectIsPruneWithoutTheView(t *testing.T) {
	for _, sh := range []shape{openAI, anthropic} {
		for _, tc := range seedExamples {
			msgs := history(t, sh, tc.rs)
			opts := tc.opts
			opts.Now = clock(at(t, tc.now))
			want := prune.Prune(msgs, opts)
			got := prune.Select(msgs, opts)
			if got.Messages != nil {
				t.Errorf("%s/%s: Select made a view of %d messages", sh, tc.name, len(got.Messages))
			}
			want.Messages = nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s/%s: Select\n got %+v\nwant %+v", sh, tc.name, got, want)
			}
		}
	}
}
