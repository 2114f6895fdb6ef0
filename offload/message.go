package offload

import (
	"context"
	"log/slog"
	"path/filepath"
	"unicode/utf8"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/fsutil"
)

// MessageOptions configure Message. SessionID is required; the zero value
// of every other field means the defaults of seed 001.
type MessageOptions struct {
	// Dir is the root directory; files go to <Dir>/<SessionID>/<id>.md.
	// Empty means DefaultDir. It is made absolute before use.
	Dir string
	// SessionID names the agent session; it keeps sessions' files apart.
	// Required: empty is an error matching ErrEmptySessionID.
	SessionID string
	// Writer writes the files. Nil means OSWriter{}.
	Writer FileWriter
	// Logger receives a debug line per file. Nil discards.
	Logger *slog.Logger
}

// MessageResult is the outcome of Message.
type MessageResult struct {
	// Message is the new message: every tool result holds its reference.
	// It shares no memory with the input.
	Message agentctx.Message
	// FreedChars is the sum over the results of the original characters
	// minus the reference's characters. It is negative when the content
	// was shorter than its reference.
	FreedChars int
	// File is the absolute path of the first (usually the only) file.
	File string
	// Files are the absolute paths of all files, in block order.
	Files []string
}

// Message offloads every tool result of msg (seed 001): the content of
// each goes to <Dir>/<SessionID>/<id>.md and is replaced by
// "[Tool result offloaded to file: <absolute path>]". msg is a message with
// tool_result blocks or a role "tool" message; Message does not look at
// sizes, the caller has decided the message is large. String content is
// written as is, any other content as its compact JSON; the replacement is
// always a string. A file already written for the same id in the session is
// replaced (seed rule).
//
// The session id and the ids are encoded into safe file names (see the
// package documentation). An empty session id, a message without tool
// results, an empty id or two results with one id are input errors
// (ErrEmptySessionID, ErrNoToolResult, *IDError), reported before anything
// is written. A failed write returns a *WriteError wrapping the writer's
// error; files written before it stay. msg is never modified.
func Message(ctx context.Context, msg agentctx.Message, opts MessageOptions) (MessageResult, error) {
	if opts.SessionID == "" {
		return MessageResult{}, ErrEmptySessionID
	}
	if err := ctx.Err(); err != nil {
		return MessageResult{}, err
	}
	session, err := fsutil.SafeName(opts.SessionID)
	if err != nil {
		return MessageResult{}, ErrEmptySessionID
	}
	type item struct {
		block int
		id    string
		name  string
		data  string
		chars int
	}
	var items []item
	seen := map[string]bool{}
	for r := range agentctx.ToolResults([]agentctx.Message{msg}) {
		name, err := fsutil.SafeName(r.ID)
		if err != nil {
			return MessageResult{}, &IDError{Block: r.Block, ID: r.ID, Err: ErrEmptyID}
		}
		if seen[r.ID] {
			return MessageResult{}, &IDError{Block: r.Block, ID: r.ID, Err: ErrDuplicateID}
		}
		seen[r.ID] = true
		data, n := contentText(r.Content)
		items = append(items, item{block: r.Block, id: r.ID, name: name, data: data, chars: n})
	}
	if len(items) == 0 {
		return MessageResult{}, ErrNoToolResult
	}
	root, err := absDir(opts.Dir)
	if err != nil {
		return MessageResult{}, err
	}
	dir := filepath.Join(root, session)
	w := opts.Writer
	if w == nil {
		w = OSWriter{}
	}
	log := loggerOr(opts.Logger)

	res := MessageResult{Files: make([]string, 0, len(items))}
	refs := make(map[int]string, len(items))
	for _, it := range items {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		path := filepath.Join(dir, it.name+FileExt)
		if err := w.WriteFile(ctx, path, []byte(it.data)); err != nil {
			return res, &WriteError{Op: "write", Path: path, ID: it.id, Err: err}
		}
		ref := MessageRefPrefix + path + RefSuffix
		refs[it.block] = ref
		res.Files = append(res.Files, path)
		res.FreedChars += it.chars - utf8.RuneCountInString(ref)
		log.LogAttrs(ctx, slog.LevelDebug, "offloaded tool result",
			slog.String("session_id", opts.SessionID), slog.String("id", it.id), slog.String("file", path), slog.Int("chars", it.chars))
	}
	res.File = res.Files[0]
	out := agentctx.MapToolResults([]agentctx.Message{msg}, func(r agentctx.ToolResult) (agentctx.Content, bool) {
		ref, ok := refs[r.Block]
		return agentctx.Text(ref), ok
	})
	res.Message = out[0].Clone()
	return res, nil
}

// MessageToDir is Message with the default OSWriter and no logger: it
// offloads the tool results of msg to dir/sessionID/<id>.md.
func MessageToDir(ctx context.Context, msg agentctx.Message, dir, sessionID string) (MessageResult, error) {
	return Message(ctx, msg, MessageOptions{Dir: dir, SessionID: sessionID})
}
