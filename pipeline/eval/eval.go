// Package eval runs the pipeline over every transcript in a directory, each
// conversation with its own Pipeline and a fresh workspace, and reports per
// conversation the format, messages, tokens before and after, pairing,
// bytes offloaded and archived, whether everything read back identical,
// and the time taken ("agentctx eval DIR"). Evaluation.WriteMarkdown
// writes the table.
//
// The package uses only the exported API of package pipeline.
package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/base/fsutil"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/base/textfmt"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/tokens"
	"github.com/agentctx/agentctx/transcript"
)

// Options configure Run.
type Options struct {
	// Options are those of every conversation's Pipeline. Run sets
	// Verify, and gives each conversation its own workspace, files and
	// archive directories under WorkDir and its own session; Store,
	// WorkspaceDir, Files.Dir, Compact.Dir and SessionID are ignored.
	pipeline.Options
	// WorkDir is where the workspaces and archives are written, one
	// subdirectory per conversation. Empty means a temporary directory,
	// removed when Run returns.
	WorkDir string
	// Progress, if set, is called before each file and once at the end
	// (file ""), with the number of files done and the total.
	Progress func(done, total int, file string)
	// Read are the options the transcripts are read with (the zero value
	// reads a compacted Claude Code session's live context).
	Read transcript.ReadOptions
}

// Evaluation is the result of Run: one row per conversation.
type Evaluation struct {
	Dir             string `json:"dir"`              // the directory evaluated
	Limit           int    `json:"limit"`            // the context window, tokens
	ThresholdTokens int    `json:"threshold_tokens"` // the compaction trigger, tokens
	Rows            []Row  `json:"rows"`             // one per conversation
	// Skipped lists every entry of Dir that was not read, and why.
	Skipped []SkippedFile `json:"skipped_files"`
	// Files is the number of transcripts read, Conversations the number
	// of rows, Passed those that met every target (see Row.OK).
	Files         int `json:"files"`
	Conversations int `json:"conversations"`
	Passed        int `json:"passed"`
	// Duration is the time of the whole run.
	Duration time.Duration `json:"-"`
}

// SkippedFile is an entry of the evaluated directory that Run did not
// read.
type SkippedFile struct {
	File   string `json:"file"`   // path under the directory; a directory ends in "/"
	Reason string `json:"reason"` // why it was not read
}

// Row is the evaluation of one conversation.
type Row struct {
	File         string          `json:"file"`                   // base name of the transcript
	Conversation string          `json:"conversation,omitempty"` // its name, in a file holding several
	Format       agentctx.Format `json:"format"`                 // the input's shape (agentctx formats lists them)
	// The messages and tokens before and after (a request body's system
	// prompt included in the tokens).
	Messages      int `json:"messages"`       // messages of the input
	MessagesAfter int `json:"messages_after"` // messages of the list to send
	TokensBefore  int `json:"tokens_before"`  // tokens of the input
	TokensAfter   int `json:"tokens_after"`   // tokens of the list to send
	// BelowThreshold: the output is below the compaction trigger.
	BelowThreshold bool `json:"below_threshold"`
	// InputValid: the input's calls and results paired up; Repairs is what
	// the repair step changed. Valid: the output's pair up.
	InputValid bool `json:"input_valid"`
	Repairs    int  `json:"repairs"`
	Valid      bool `json:"valid"`
	// What the steps changed.
	Pruned         int `json:"pruned"`          // results pruned
	Stored         int `json:"stored"`          // results stored whole in the workspace
	StoredBytes    int `json:"stored_bytes"`    // their bytes
	Replaced       int `json:"replaced"`        // results replaced by a reference
	ReplacedBytes  int `json:"replaced_bytes"`  // the bytes of their original content
	Compacted      int `json:"compacted"`       // messages summarized
	ArchivedBytes  int `json:"archived_bytes"`  // the bytes of the archive holding them
	OffloadedBytes int `json:"offloaded_bytes"` // StoredBytes + ArchivedBytes: everything written out of the context
	// Checked is the number of artifacts, files and archives read back,
	// Identical whether all of them matched their originals byte for byte.
	Checked   int      `json:"checked"`
	Identical bool     `json:"identical"`
	Failures  []string `json:"failures,omitempty"` // what did not read back identical, one line each
	// Read is the time to read and parse the file (shared by its
	// conversations), Prepare the time of Prepare, verification included.
	Read    time.Duration `json:"-"`
	Prepare time.Duration `json:"-"`
	// Error is the failure that stopped this file or conversation.
	Error string `json:"error,omitempty"`
	// Notice is what the reader said about the conversation (see
	// agentctx.Document.Notice): no messages, records skipped by kind,
	// compact boundaries.
	Notice string `json:"notice,omitempty"`

	threshold int
}

// OK reports whether the row met every target: a conversation with
// messages, prepared without error, output paired and below the trigger,
// everything read back identical. A conversation with no message meets
// none.
func (r *Row) OK() bool {
	return r.Messages > 0 && r.Error == "" && r.Valid && r.BelowThreshold && r.Identical
}

// OK reports whether every row met every target.
func (e *Evaluation) OK() bool { return e.Passed == len(e.Rows) && len(e.Rows) > 0 }

// transcriptExts are the file name endings Run reads.
var transcriptExts = []string{".json", ".jsonl", ".traj"}

// ErrNoTranscripts is returned by Run for a directory tree that holds
// no transcript.
var ErrNoTranscripts = errors.New("no transcripts (.json, .jsonl, .traj)")

// Run runs Prepare over every transcript under dir (the files ending
// in .json, .jsonl or .traj, in subdirectories too, in path order; hidden
// directories are not entered, and every entry not read is listed in
// Evaluation.Skipped): each conversation with a new Pipeline, a fresh
// workspace and Options.Verify set. It reports per conversation the
// format, messages, tokens before and after, pairing, what was pruned,
// stored, replaced and archived, whether all of it read back identical,
// and the time taken. A file that cannot be read or prepared gets a row
// with its Error; Run itself fails only for a directory it cannot
// list, a tree with no transcript (ErrNoTranscripts), a work directory it
// cannot make, invalid options, or a done ctx.
func Run(ctx context.Context, dir string, opts Options) (*Evaluation, error) {
	start := time.Now()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	files, skipped, err := transcriptFiles(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("pipeline: evaluate: %w", err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("pipeline: evaluate: %s: %w", dir, ErrNoTranscripts)
	}
	slices.Sort(files)

	work := opts.WorkDir
	if work == "" {
		work, err = os.MkdirTemp("", "agentctx-eval-")
		if err != nil {
			return nil, fmt.Errorf("pipeline: evaluate: %w", err)
		}
		defer os.RemoveAll(work)
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, fmt.Errorf("pipeline: evaluate: %w", err)
	}

	ev := &Evaluation{Dir: dir, Files: len(files), Rows: []Row{}, Skipped: skipped}
	base := opts.Options
	base.Verify = true
	if base.MessageCounter == nil {
		// One counter for the run: its cache and encoding are shared.
		base.MessageCounter = tokens.NewMessageCounter(tokens.MessageOptions{Counter: base.Counter, Logger: base.Logger, Parallelism: -1})
	}
	for i, name := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if opts.Progress != nil {
			opts.Progress(i, len(files), name)
		}
		rows, err := evaluateFile(ctx, dir, name, filepath.Join(work, safe(strings.ReplaceAll(name, "/", "_"))), base, opts.Read)
		if err != nil {
			return nil, err
		}
		ev.Rows = append(ev.Rows, rows...)
	}
	if opts.Progress != nil {
		opts.Progress(len(files), len(files), "")
	}
	for i := range ev.Rows {
		if ev.Rows[i].OK() {
			ev.Passed++
		}
	}
	ev.Conversations = len(ev.Rows)
	ev.Limit = base.Compact.Limit
	if ev.Limit <= 0 {
		ev.Limit = compact.DefaultLimit
	}
	for _, r := range ev.Rows {
		if r.Error == "" {
			ev.ThresholdTokens = r.threshold
			break
		}
	}
	ev.Duration = time.Since(start)
	return ev, nil
}

// transcriptFiles lists the transcripts under dir (slash paths relative
// to it, in walk order) and every entry it does not read, with the reason.
func transcriptFiles(ctx context.Context, dir string) ([]string, []SkippedFile, error) {
	var files []string
	skipped := []SkippedFile{}
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			if path == dir {
				return err
			}
			rel, _ := filepath.Rel(dir, path)
			skipped = append(skipped, SkippedFile{File: filepath.ToSlash(rel), Reason: oneLine(err)})
			return nil
		}
		if path == dir {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		name := filepath.ToSlash(rel)
		switch {
		case e.IsDir() && strings.HasPrefix(e.Name(), "."):
			skipped = append(skipped, SkippedFile{File: name + "/", Reason: "a hidden directory: not entered"})
			return filepath.SkipDir
		case e.IsDir():
		case !e.Type().IsRegular():
			skipped = append(skipped, SkippedFile{File: name, Reason: "not a regular file"})
		case !slices.ContainsFunc(transcriptExts, func(ext string) bool { return strings.EqualFold(filepath.Ext(name), ext) }):
			skipped = append(skipped, SkippedFile{File: name, Reason: "not a transcript name: " + strings.Join(transcriptExts, ", ")})
		default:
			files = append(files, name)
		}
		return nil
	})
	return files, skipped, err
}

// evaluateFile evaluates every conversation of one transcript. Only a done
// ctx is an error; other failures are recorded in the rows.
func evaluateFile(ctx context.Context, dir, name, work string, base pipeline.Options, ro transcript.ReadOptions) ([]Row, error) {
	path := filepath.Join(dir, filepath.FromSlash(name))
	t0 := time.Now()
	doc, err := ro.ReadFile(ctx, path, nil)
	read := time.Since(t0)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return []Row{{File: name, Read: read, Error: oneLine(err)}}, nil
	}
	convs := doc.Conversations()
	rows := make([]Row, 0, len(convs))
	for k, conv := range convs {
		row := Row{File: name, Format: doc.Format, Read: read, Messages: len(conv.Messages), Notice: conv.Notice()}
		sub := work
		if len(convs) > 1 {
			row.Conversation = conv.Name
			if row.Conversation == "" {
				row.Conversation = fmt.Sprintf("conversation-%d", k+1)
			}
			sub = filepath.Join(work, safe(row.Conversation))
		}
		row.InputValid = agentctx.ValidatePairing(conv.Messages).Valid
		o := base
		o.Store = nil
		o.WorkspaceDir = filepath.Join(sub, "workspace")
		o.Files.Dir = filepath.Join(sub, "files")
		o.Compact.Dir = filepath.Join(sub, "archive")
		o.SessionID = strings.TrimSuffix(name, filepath.Ext(name))
		if row.Conversation != "" {
			o.SessionID += "/" + row.Conversation
		}
		p, err := pipeline.New(o)
		if err != nil {
			return nil, err
		}
		t1 := time.Now()
		res, err := p.PrepareDocument(ctx, conv)
		row.Prepare = time.Since(t1)
		p.Close()
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if res != nil {
			row.fill(&res.Report)
		}
		if err != nil {
			row.Error = oneLine(err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// fill copies the figures of a report into the row.
func (r *Row) fill(rep *pipeline.Report) {
	r.MessagesAfter = rep.MessagesAfter
	r.TokensBefore, r.TokensAfter = rep.TokensBefore, rep.TokensAfter
	r.BelowThreshold, r.Valid = rep.BelowThreshold, rep.Valid
	r.threshold = rep.ThresholdTokens
	r.Identical = true
	verified := func(v *pipeline.Verification) {
		if v == nil {
			return
		}
		r.Checked += v.Checked
		r.Failures = append(r.Failures, v.Failures...)
		if !v.OK() {
			r.Identical = false
		}
	}
	if s := rep.Step(pipeline.StepRepair); s != nil {
		r.Repairs = s.Changed
	}
	if s := rep.Step(pipeline.StepPrune); s != nil {
		r.Pruned = s.Changed
	}
	if s := rep.Step(pipeline.StepOffload); s != nil && s.Offload != nil {
		o := s.Offload
		r.Stored, r.StoredBytes, r.Replaced, r.ReplacedBytes = o.Stored, o.StoredBytes, o.Replaced, o.ReplacedBytes
		verified(o.Verified)
	}
	if s := rep.Step(pipeline.StepCompact); s != nil && s.Compact != nil {
		c := s.Compact
		if c.Compacted {
			r.Compacted = c.Stats.CompactedMessageCount
		}
		r.ArchivedBytes = c.ArchivedBytes
		verified(c.Verified)
	}
	r.OffloadedBytes = r.StoredBytes + r.ArchivedBytes
}

// MarshalJSON writes the evaluation with its duration as "duration_ms".
func (e Evaluation) MarshalJSON() ([]byte, error) {
	type plain Evaluation
	return rawjson.Marshal(struct {
		plain
		OK         bool    `json:"ok"`          // every conversation met every target (Evaluation.OK)
		DurationMS float64 `json:"duration_ms"` // the time of the whole run, milliseconds
	}{plain(e), e.OK(), millis(e.Duration)})
}

// MarshalJSON writes the row with its times as "read_ms" and "prepare_ms".
func (r Row) MarshalJSON() ([]byte, error) {
	type plain Row
	return rawjson.Marshal(struct {
		plain
		OK        bool    `json:"ok"`         // the conversation met every target (Row.OK)
		ReadMS    float64 `json:"read_ms"`    // the time to read and parse the file, milliseconds
		PrepareMS float64 `json:"prepare_ms"` // the time of Prepare, verification included, milliseconds
	}{plain(r), r.OK(), millis(r.Read), millis(r.Prepare)})
}

// WriteMarkdown writes the evaluation as a Markdown table, one row per
// conversation, and a line of totals.
func (e *Evaluation) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("| transcript | format | messages | tokens before | tokens after | below trigger | pairing valid | pruned | stored (bytes) | replaced (bytes) | compacted msgs (archive bytes) | read back identical | read ms | prepare ms |\n")
	b.WriteString("|---|---|---:|---:|---:|:-:|:-:|---:|---:|---:|---:|:-:|---:|---:|\n")
	yes := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "**no**"
	}
	for i := range e.Rows {
		r := &e.Rows[i]
		name := r.File
		if r.Conversation != "" {
			name += " · " + r.Conversation
		}
		if r.Error != "" {
			fmt.Fprintf(&b, "| %s | %s | %d | | | | | | | | | | %.1f | %.1f |\n", mdEscape(name), r.Format, r.Messages, millis(r.Read), millis(r.Prepare))
			fmt.Fprintf(&b, "| ↳ error: %s |||||||||||||\n", mdEscape(r.Error))
			continue
		}

		pairing := yes(r.Valid)
		if !r.InputValid {
			pairing += fmt.Sprintf(" (%d repaired)", r.Repairs)
		}
		fmt.Fprintf(&b, "| %s | %s | %d → %d | %s | %s | %s | %s | %d | %d (%s) | %d (%s) | %d (%s) | %s (%d/%d) | %.1f | %.1f |\n",
			mdEscape(name), r.Format, r.Messages, r.MessagesAfter, textfmt.Thousands(r.TokensBefore), textfmt.Thousands(r.TokensAfter),
			yes(r.BelowThreshold), pairing, r.Pruned, r.Stored, textfmt.Thousands(r.StoredBytes), r.Replaced, textfmt.Thousands(r.ReplacedBytes),
			r.Compacted, textfmt.Thousands(r.ArchivedBytes), yes(r.Identical), r.Checked, r.Checked, millis(r.Read), millis(r.Prepare))
		if r.Notice != "" {
			fmt.Fprintf(&b, "| ↳ %s |||||||||||||\n", mdEscape(r.Notice))
		}
	}
	fmt.Fprintf(&b, "\n%d file(s), %d conversation(s), %d met every target; limit %s tokens, trigger %s; total %s.\n",
		e.Files, e.Conversations, e.Passed, textfmt.Thousands(e.Limit), textfmt.Thousands(e.ThresholdTokens), e.Duration.Round(time.Millisecond))
	if len(e.Skipped) > 0 {
		fmt.Fprintf(&b, "\nNot read (%d):\n", len(e.Skipped))
		for _, f := range e.Skipped {
			fmt.Fprintf(&b, "- %s: %s\n", f.File, f.Reason)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func safe(name string) string {
	s, err := fsutil.SafeName(name)
	if err != nil {
		return "_"
	}
	return s
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

func millis(d time.Duration) float64 {
	return math.Round(float64(d)/1e3) / 1e3
}
