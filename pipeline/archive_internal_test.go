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

// TestCompactOriginalsAreNotCopied: the originals a compaction archives
// and summarizes are the call's own messages, not a copy of them (12 MB
// for 100,000 messages; issue 24, item 7).
func TestCompactOriginalsAreNotCopied(t *testing.T) {
	p, err := New(Options{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	src := make([]agentctx.Message, 1000)
	for i := range src {
		src[i] = agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(fmt.Sprint("m", i)))
	}
	c := p.newCall(&state{}, len(src), 0, CallOptions{})
	c.src = src
	originals := c.compactOptions(context.Background()).Originals
	var got []agentctx.Message
	if n := testing.AllocsPerRun(20, func() { got = originals(src, 10, 900) }); n > 0 {
		t.Errorf("Originals allocates %.0f times", n)
	}
	if len(got) != 890 || &got[0] != &src[10] || cap(got) != 890 {
		t.Errorf("Originals are not the call's messages 10 to 900: %d of them, capacity %d", len(got), cap(got))
	}
}
