package pipeline

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
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
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out, err := a.ArchiveConversation(context.Background(), "s", agentctx.Conversation{Messages: msgs, Facts: facts})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > uint64(out.Bytes)*3/2 {
		t.Errorf("archiving %d bytes allocated %d", out.Bytes, n)
	}
}
