package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/testkit/memtest"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/dirstore"
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

// TestArchiveIsStreamedToFiles: into a directory store an archive is
// written as it is encoded, never held whole (10.9 MB of a 10 MB
// request's peak; issue 24 item 7), and it holds EncodeArchiveConversation's
// bytes under the id of their digest, as when it was held whole.
func TestArchiveIsStreamedToFiles(t *testing.T) {
	msgs := make([]agentctx.Message, 20_000)
	facts := make([]agentctx.Facts, len(msgs))
	for i := range msgs {
		msgs[i] = agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(fmt.Sprintf("line %d of a long history, padded to about a hundred bytes of text", i)))
		if i%3 != 0 { // some encodings known, some not
			enc, err := msgs[i].AppendJSON(nil)
			if err != nil {
				t.Fatal(err)
			}
			facts[i].Encoding = enc
		}
	}
	store, err := dirstore.Open(t.TempDir(), dirstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	a := workspaceArchiver{ws: workspace.New(store, workspace.Options{}), now: time.Now}
	conv := agentctx.Conversation{Messages: msgs, Facts: facts}
	var out compact.Archived
	n := memtest.AllocatedBy(func() { out, err = a.ArchiveConversation(context.Background(), "s", conv) })
	if err != nil {
		t.Fatal(err)
	}
	if n > uint64(out.Bytes)/4 {
		t.Errorf("archiving %d bytes into files allocated %d", out.Bytes, n)
	}
	want, err := compact.EncodeArchiveConversation(conv)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(want)
	got, err := store.Get(context.Background(), a.ws.Namespace(), out.ID)
	if err != nil {
		t.Fatal(err)
	}
	if out.ID != ArchiveIDPrefix+hex.EncodeToString(sum[:8]) || got.Content != string(want) || out.Bytes != len(want) || got.Metadata["messages"] != "20000" {
		t.Errorf("archive %s of %d bytes (%d stored, metadata %v), want %s of %d", out.ID, out.Bytes, len(got.Content), got.Metadata, hex.EncodeToString(sum[:8]), len(want))
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
