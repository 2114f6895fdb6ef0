package pipeline

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/testkit/memtest"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/memstore"
)

// An archive is put in the store as it was encoded: a long history's
// archive (tens of MB) is not copied into a string on the way.
func TestArchiveIsNotCopied(t *testing.T) {
	msgs := make([]agentctx.Message, 20_000)
	facts := make([]agentctx.Facts, len(msgs))
	for i := range msgs {
		msgs[i] = agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(fmt.Sprintf("line %d of a long history, padded to about a hundred bytes of text", i)))
		enc, err := msgs[i].AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		facts[i].Encoding = enc
	}
	a := workspaceArchiver{ws: workspace.New(memstore.New(), workspace.Options{}), now: time.Now}
	var out compact.Archived
	var err error
	n := memtest.AllocatedBy(func() {
		out, err = a.ArchiveConversation(context.Background(), "s", agentctx.Conversation{Messages: msgs, Facts: facts})
	})
	if err != nil {
		t.Fatal(err)
	}
	if n > uint64(out.Bytes)*3/2 {
		t.Errorf("archiving %d bytes allocated %d", out.Bytes, n)
	}
}
