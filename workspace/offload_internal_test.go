package workspace

import (
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit/memtest"
)

// TestTextBlocksAreCheckedInPlace: a result of text blocks is stored as
// its joined text once its blocks are known to come back byte for byte,
// and that check writes the two forms into pooled buffers: it made two
// strings of the whole result (8 MB for a 10 MB request of a coding
// agent's turns; issue 24 item 7).
func TestTextBlocksAreCheckedInPlace(t *testing.T) {
	text := strings.Repeat("line of a long test log\n", 8000) // 192 KB
	c := agentctx.BlockList(agentctx.TextBlock(text), agentctx.TextBlock("exit status 1"))
	joined, _, _, ok := textBlocks(c)
	if !ok || joined != text+"\nexit status 1" {
		t.Fatalf("textBlocks = %d bytes, %v", len(joined), ok)
	}
	if raceEnabled {
		return
	}
	if n := testing.AllocsPerRun(20, func() { sameText(c, c) }); n > 0 {
		t.Errorf("sameText allocates %.0f times", n)
	}
	textBlocks(c) // the pool's buffers grown
	n := memtest.AllocatedBy(func() { textBlocks(c) })
	if n > uint64(len(text))*3/2 {
		t.Errorf("textBlocks of %d bytes allocated %d", len(text), n)
	}
}
