package pipeline

import (
	"context"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/workspace"
)

// ContextCompactionArchive is the context_type of an artifact that archives
// the messages a compaction summarized.
const ContextCompactionArchive = "compaction_archive"

// ArchiveIDPrefix starts the artifact id of a compaction archive; the rest
// is a hash of the archived messages, so the same messages are archived
// once, under the same id, however often they are summarized.
const ArchiveIDPrefix = "compact_"

// workspaceArchiver keeps compaction archives as artifacts of the
// workspace's namespace (shared by its sessions: content-addressed), where
// the agent reads them back with the same tools as any
// offloaded result, or from the artifact's file (Archived.Path, absolute)
// when the store keeps files.
type workspaceArchiver struct {
	ws  *workspace.Workspace
	now func() time.Time
	// bound bounds each store call (Pipeline.storeCtx); nil: ctx alone.
	bound func(context.Context) (context.Context, context.CancelFunc)
}

var _ compact.ConversationArchiver = workspaceArchiver{}

func (a workspaceArchiver) Archive(ctx context.Context, sessionID string, msgs []agentctx.Message) (compact.Archived, error) {
	return a.ArchiveConversation(ctx, sessionID, agentctx.Conversation{Messages: msgs})
}

// ArchiveConversation implements compact.ConversationArchiver: the
// encodings the facts hold are archived as they are.
func (a workspaceArchiver) ArchiveConversation(ctx context.Context, sessionID string, conv agentctx.Conversation) (compact.Archived, error) {
	msgs := conv.Messages
	if a.bound != nil {
		var cancel context.CancelFunc
		ctx, cancel = a.bound(ctx)
		defer cancel()
	}
	// Written a message at a time, twice (measured, then stored): an
	// archive of a long history is tens of MB, never held whole where the
	// store writes streams (10.9 MB of a 10 MB request's peak).
	write := func(w io.Writer) error { return compact.WriteArchiveConversation(w, conv) }
	info, err := workspace.MeasureStream(workspace.Info{Type: workspace.TypeJSON, Created: a.now().UTC(), Metadata: workspace.Metadata{
		workspace.KeyContextType: ContextCompactionArchive,
		workspace.KeySessionID:   sessionID,
		"messages":               strconv.Itoa(len(msgs)),
	}}, write)
	if err != nil {
		return compact.Archived{}, &compact.ArchiveError{Op: "encode", Path: a.ws.Namespace(), Err: err}
	}
	id := ArchiveIDPrefix + info.SHA256[:16]
	info.ID = id
	out := compact.Archived{ID: id, Path: artifactPath(a.ws.Store(), a.ws.Namespace(), id), Bytes: info.Bytes}
	prev, err := a.ws.Store().Stat(ctx, a.ws.Namespace(), id)
	switch {
	case err == nil && prev.SHA256 == info.SHA256:
		return out, nil // archived before
	case err != nil && !errors.Is(err, workspace.ErrNotFound):
		return compact.Archived{}, &compact.ArchiveError{Op: "read", Path: id, Err: err}
	}
	if _, err := workspace.PutStream(ctx, a.ws.Store(), a.ws.Namespace(), workspace.Stream{Info: info, Write: write}); err != nil {
		return compact.Archived{}, &compact.ArchiveError{Op: "write", Path: id, Err: err}
	}
	return out, nil
}
