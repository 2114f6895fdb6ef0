package offload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/fsutil"
)

// BatchFilePrefix and FileExt make the file names of Batch:
// BatchFilePrefix + encoded id [+ "-" + n] + FileExt.
const (
	BatchFilePrefix = "tool-result-"
	FileExt         = ".md"
)

// maxSuffix bounds the search for a free file name; it is only reached when
// something keeps creating files with the names Batch tries.
const maxSuffix = 1 << 20

// BatchOptions configure Batch. The zero value means the defaults of seed
// 000.
type BatchOptions struct {
	// Dir is the directory the files are written to, created (with its
	// parents) when something is offloaded. Empty means DefaultDir.
	Dir string
	// MinChars is the threshold: a tool result of at least MinChars
	// characters is offloaded. Zero means DefaultMinChars (100); negative
	// values are an error.
	MinChars int
	// Sync makes every file fsynced before it becomes visible, so it
	// survives a power failure, at the price of speed.
	Sync bool
	// Logger receives a debug line per file and an info line per call that
	// offloaded something. Nil discards.
	Logger *slog.Logger
	// Keep, when set, leaves the results it returns true for as they are,
	// whatever their size (a caller's placeholder that names where the
	// original is kept, for one).
	Keep func(r agentctx.ToolResult) bool
}

// BatchResult is the outcome of Batch.
type BatchResult struct {
	// Messages is the new history: tool results that were offloaded hold
	// their reference (a string); every other message is shared with the
	// input. Never nil.
	Messages []agentctx.Message
	// OffloadedCount is the number of tool results offloaded.
	OffloadedCount int
	// FreedChars is the sum of the original characters of the offloaded
	// results.
	FreedChars int
	// Files are the absolute paths of the files the results were written
	// to (or found identical in), in the order of the results. Never nil.
	Files []string
}

// planned is one tool result to offload.
type planned struct {
	msg, block int
	id         string
	base       string // encoded id
	data       string
	chars      int
}

// Batch offloads every tool result in msgs whose content has at least
// opts.MinChars characters to <Dir>/tool-result-<id>.md and replaces the
// content with "[Content offloaded to: ./tool-result-<id>.md]" (seed 000).
// Results are visited oldest first, blocks in order; both Anthropic
// tool_result blocks and OpenAI role "tool" messages count. String content
// is written as is, any other content as its compact JSON (exactly what was
// counted); the replacement is always a string. Content that already is a
// reference (see IsReference) is kept.
//
// The id is encoded into a safe file name (see the package documentation).
// The n-th repeat of an id in one call takes the suffix -n; a file that
// already exists is reused when it holds the same content and skipped (for
// the next suffix) when it does not, so nothing on disk is ever overwritten.
//
// msgs is never modified. Input errors (an empty id on a result to
// offload, matching ErrEmptyID) are reported before anything is written. A
// write failure returns a *WriteError wrapping the cause, with the files
// written so far in the result's Files. Batch checks ctx between files.
// It is safe to run several Batch calls on one directory at once.
func Batch(ctx context.Context, msgs []agentctx.Message, opts BatchOptions) (BatchResult, error) {
	minChars := opts.MinChars
	if minChars == 0 {
		minChars = DefaultMinChars
	}
	if minChars < 0 {
		return BatchResult{}, fmt.Errorf("offload: MinChars %d is negative", minChars)
	}
	if err := ctx.Err(); err != nil {
		return BatchResult{}, err
	}
	log := loggerOr(opts.Logger)

	var plan []planned
	for r := range agentctx.ToolResults(msgs) {
		data, n := contentText(r.Content)
		if n < minChars || (r.Content.IsText() && IsReference(data)) || opts.Keep != nil && opts.Keep(r) {
			continue
		}
		base, err := fsutil.SafeName(r.ID)
		if err != nil {
			return BatchResult{}, &IDError{Message: r.Message, Block: r.Block, ID: r.ID, Err: ErrEmptyID}
		}
		plan = append(plan, planned{msg: r.Message, block: r.Block, id: r.ID, base: base, data: data, chars: n})
	}
	if len(plan) == 0 {
		out := slices.Clone(msgs)
		if out == nil {
			out = []agentctx.Message{}
		}
		return BatchResult{Messages: out, Files: []string{}}, nil
	}

	dir, err := absDir(opts.Dir)
	if err != nil {
		return BatchResult{}, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return BatchResult{}, &WriteError{Op: "mkdir", Path: dir, Err: err}
	}

	res := BatchResult{Files: make([]string, 0, len(plan))}
	refs := make(map[[2]int]string, len(plan))
	claimed := make(map[string]bool, len(plan))
	fo := fsutil.Options{Sync: opts.Sync}
	for _, p := range plan {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		name, reused, err := place(dir, p, claimed, fo)
		if err != nil {
			return res, err
		}
		path := filepath.Join(dir, name)
		refs[[2]int{p.msg, p.block}] = BatchRefPrefix + "./" + name + RefSuffix
		res.Files = append(res.Files, path)
		res.OffloadedCount++
		res.FreedChars += p.chars
		log.LogAttrs(ctx, slog.LevelDebug, "offloaded tool result",
			slog.String("id", p.id), slog.String("file", path), slog.Int("chars", p.chars), slog.Bool("reused", reused))
	}
	res.Messages = agentctx.MapToolResults(msgs, func(r agentctx.ToolResult) (agentctx.Content, bool) {
		ref, ok := refs[[2]int{r.Message, r.Block}]
		if !ok {
			return agentctx.Content{}, false
		}
		return agentctx.Text(ref), true
	})
	log.LogAttrs(ctx, slog.LevelInfo, "offloaded tool results",
		slog.Int("offloaded_count", res.OffloadedCount), slog.Int("freed_chars", res.FreedChars), slog.String("dir", dir))
	return res, nil
}

// place writes p.data under the first usable name of p's id and returns
// the name and whether an identical existing file was reused. Names already
// used in this call are skipped; a name taken by a file with other content
// is skipped; a name taken by the same content is reused.
func place(dir string, p planned, claimed map[string]bool, fo fsutil.Options) (string, bool, error) {
	data := []byte(p.data)
	vanished := 0
	for n := 0; n < maxSuffix; n++ {
		name := BatchFilePrefix + p.base + FileExt
		if n > 0 {
			name = BatchFilePrefix + p.base + "-" + strconv.Itoa(n) + FileExt
		}
		if claimed[name] {
			continue
		}
		path := filepath.Join(dir, name)
		// A file that is already there is compared first (cheap, and the
		// common case when a history is offloaded again); otherwise it is
		// created exclusively, and one created meanwhile by someone else is
		// compared after all.
		if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
			err := fsutil.CreateFile(path, data, fo)
			if err == nil {
				claimed[name] = true
				return name, false, nil
			}
			if !errors.Is(err, fs.ErrExist) {
				return "", false, &WriteError{Op: "write", Path: path, ID: p.id, Err: err}
			}
		}
		same, err := sameContent(path, data)
		if errors.Is(err, fs.ErrNotExist) && vanished < 3 {
			vanished++ // removed since we tried: try the name again
			n--
			continue
		}
		if err != nil {
			return "", false, &WriteError{Op: "read", Path: path, ID: p.id, Err: err}
		}
		if same {
			claimed[name] = true
			return name, true, nil
		}
	}
	return "", false, &WriteError{Op: "write", Path: filepath.Join(dir, BatchFilePrefix+p.base+FileExt), ID: p.id,
		Err: fmt.Errorf("no free file name after %d tries", maxSuffix)}
}

// sameContent reports whether the regular file at path holds exactly data.
// Anything that is not a regular file is never the same.
func sameContent(path string, data []byte) (bool, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return false, err
	}
	if !fi.Mode().IsRegular() || fi.Size() != int64(len(data)) {
		return false, nil
	}
	got, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	return bytes.Equal(got, data), nil
}
