package pipeline

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/base/textfmt"
	"github.com/agentctx/agentctx/prune"
)

// Step names a step of the pipeline.
type Step string

// The steps, in the order Prepare runs them (SPEC §7).
const (
	StepRepair   Step = "repair"   // answer unanswered tool calls, drop orphan results
	StepPrune    Step = "prune"    // replace stale terminal output with a placeholder (SPEC §4)
	StepOffload  Step = "offload"  // store tool results, replace large ones by a reference (SPEC §5 or §3.1)
	StepCount    Step = "count"    // count the tokens of what would be sent (SPEC §2)
	StepCompact  Step = "compact"  // summarize the middle when over the trigger (SPEC §6)
	StepValidate Step = "validate" // check that every call and result pair up
)

// Steps returns the steps in the order Prepare runs them.
func Steps() []Step {
	return []Step{StepRepair, StepPrune, StepOffload, StepCount, StepCompact, StepValidate}
}

// Report says what one call to Prepare did.
type Report struct {
	// MessagesBefore and MessagesAfter are the lengths of the input and of
	// the list to send.
	MessagesBefore int `json:"messages_before"`
	MessagesAfter  int `json:"messages_after"`
	// TokensBefore and TokensAfter are the tokens of the input and of the
	// list to send, both including ReservedTokens.
	TokensBefore int `json:"tokens_before"`
	TokensAfter  int `json:"tokens_after"`
	// ReservedTokens are tokens sent besides the messages (a top-level
	// system prompt, tool definitions), counted toward the trigger.
	ReservedTokens int `json:"reserved_tokens"`
	// ReadToolsTokens are the tokens of the read tools declared in the
	// request after the steps (WithReadTools, see Report.AddReadTools),
	// included in ReservedTokens, TokensAfter and EstimatedTokens.
	ReadToolsTokens int `json:"read_tools_tokens,omitempty"`
	// EstimatedTokensBefore and EstimatedTokens are the provider's likely
	// counts of the input and of the list to send: our counts, calibrated
	// by the usage the provider reported for the session's earlier
	// requests (see Pipeline.Observe). The trigger compares
	// EstimatedTokens.
	EstimatedTokensBefore int `json:"estimated_tokens_before"`
	EstimatedTokens       int `json:"estimated_tokens"`
	// Session describes the session state the call used; nil for a
	// Stateless Pipeline.
	Session *SessionReport `json:"session,omitempty"`
	// Limit is the context window, and ThresholdTokens the count at which
	// compaction is due (Limit × Threshold).
	Limit           int `json:"limit"`
	ThresholdTokens int `json:"threshold_tokens"`
	// BelowThreshold reports whether the list to send is below the
	// trigger. When it is not, Warnings says why; compacting again would
	// not help, and Prepare does not try.
	BelowThreshold bool `json:"below_threshold"`
	// Valid reports whether every tool call and result of the list to send
	// pair up (agentctx.ValidatePairing).
	Valid bool `json:"valid"`
	// CharsSaved and TokensSaved are the sums over the steps.
	CharsSaved  int `json:"chars_saved"`
	TokensSaved int `json:"tokens_saved"`
	// Steps has one entry per step, in order, also for steps turned off.
	Steps []StepReport `json:"steps"`
	// Warnings are one-line notes for a person: a list still over the
	// trigger, a failed summary, an archive that could not be written.
	Warnings []string `json:"warnings"`
	// Duration is the time Prepare took.
	Duration time.Duration `json:"-"`
}

// AddReadTools counts n tokens of read tools declared in the request after
// the steps (WithReadTools added them because the prepared messages name
// one) in the request's totals, so the report counts the request as it is
// sent: ReadToolsTokens, ReservedTokens, TokensAfter and EstimatedTokens
// grow by n and BelowThreshold is checked again.
func (r *Report) AddReadTools(n int) {
	if n <= 0 {
		return
	}
	r.ReadToolsTokens += n
	r.ReservedTokens += n
	r.TokensAfter += n
	r.EstimatedTokens += n
	if r.ThresholdTokens > 0 && r.EstimatedTokens >= r.ThresholdTokens && r.BelowThreshold {
		r.BelowThreshold = false
		r.Warnings = append(r.Warnings, fmt.Sprintf("the read tools declared for the references (%d tokens) bring the request to %d tokens, at or over the trigger (%d)", n, r.EstimatedTokens, r.ThresholdTokens))
	}
}

// SessionReport describes a session after a call.
type SessionReport struct {
	ID        string `json:"id"`        // the session id
	Namespace string `json:"namespace"` // the workspace namespace it is kept in
	// Version is the version of the stored state this call wrote.
	Version int64 `json:"version"`
	// Requests, Compactions and CacheBreaks count the session's calls, the
	// compactions made and the calls that changed what an earlier call
	// had sent.
	Requests    int `json:"requests"`
	Compactions int `json:"compactions"`
	CacheBreaks int `json:"cache_breaks"`
	// PrefixChanged reports that this call changed what an earlier one
	// sent (a new batch of pruned results, a compaction): the provider's
	// prompt cache is rebuilt from the first change.
	PrefixChanged bool `json:"prefix_changed"`
	// Calibrated reports that the estimates rest on reported usage, and
	// Ratio is the provider's tokens per counted token the session has
	// fitted (Options.EstimateRatio until usage is reported).
	Calibrated bool    `json:"calibrated"`
	Ratio      float64 `json:"ratio"`
}

// StepReport says what one step did.
type StepReport struct {
	Step Step `json:"step"` // repair, prune, offload, count, compact or validate
	// Skipped reports that the options turned the step off.
	Skipped bool `json:"skipped"`
	// Changed counts what the step changed in the list to send: repairs
	// made, results pruned, results replaced by a reference, messages
	// summarized. Decisions of earlier calls re-applied count too; New
	// counts those this call made. It is 0 for count and validate.
	Changed int `json:"changed"`
	New     int `json:"new"`
	// Pending and PendingTokens are, for prune, the stale results waiting
	// to be cleared (see Options.Clearing), and what they would free.
	Pending       int `json:"pending,omitempty"`
	PendingTokens int `json:"pending_tokens,omitempty"`
	// Deferred counts, for prune and offload, the decisions this call did
	// not apply because the result lies in the bound prefix
	// (CallOptions.Bound): they are not recorded as applied, and are made
	// again once the prefix no longer binds them.
	Deferred int `json:"deferred,omitempty"`
	// Clearing is, for prune under ClearPriced, how the stale results
	// already sent were weighed; nil when there were none.
	Clearing *ClearDecision `json:"clearing,omitempty"`
	// CharsSaved and TokensSaved are what the step took out of the list
	// (negative when it added more than it removed, as a synthetic result
	// does). Characters are those of SPEC §1.
	CharsSaved  int `json:"chars_saved"`
	TokensSaved int `json:"tokens_saved"`
	// Tokens is the count of the list after the step, ReservedTokens
	// included.
	Tokens int `json:"tokens"`
	// Artifacts are the ids of the workspace artifacts the step wrote
	// (results already stored unchanged are not written again).
	Artifacts []string `json:"artifacts,omitempty"`
	// Files are the absolute paths of the files the step wrote: offloaded
	// results, artifact contents of a directory workspace, archives.
	Files []string `json:"files,omitempty"`
	// Duration is the time the step took.
	Duration time.Duration `json:"-"`

	// Repairs lists what the repair step changed; indices refer to the
	// input list.
	Repairs []agentctx.Repair `json:"repairs,omitempty"`
	// Pruned lists the results the prune step replaced; indices refer to
	// the list the step was given (the repaired input, with a remembered
	// summary in place of the messages it covers).
	Pruned []prune.Pruned `json:"pruned,omitempty"`
	// Offload details the offload step.
	Offload *OffloadReport `json:"offload,omitempty"`
	// Count details the count step.
	Count *compact.CheckResult `json:"count,omitempty"`
	// Compact details the compact step.
	Compact *CompactReport `json:"compact,omitempty"`
	// Pairing is the validate step's report on the list to send.
	Pairing *agentctx.PairingReport `json:"pairing,omitempty"`
}

// OffloadReport details the offload step.
type OffloadReport struct {
	// Mode is how results were offloaded.
	Mode OffloadMode `json:"mode"`
	// Workspace and Namespace say where the artifacts are (mode
	// workspace); Workspace is empty for a store that is not a directory
	// or a file. Dir is the directory of the files (mode files).
	Workspace string `json:"workspace,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Dir       string `json:"dir,omitempty"`
	// Stored is the number of tool results kept whole in the workspace
	// (each as the artifact tool_result_<id>), Written how many of them
	// were written by this call, and StoredBytes their size in bytes.
	// Results already stored unchanged by an earlier call are not written
	// again.
	Stored      int `json:"stored"`
	Written     int `json:"written"`
	StoredBytes int `json:"stored_bytes"`
	// Replaced is the number of results whose content was replaced by a
	// reference (a <knowledge_list> entry or an offload file reference),
	// and ReplacedBytes the bytes of their original content.
	Replaced      int `json:"replaced"`
	ReplacedBytes int `json:"replaced_bytes"`
	// KeptWhole is the number of results new in a client's summary
	// request (CallOptions.ClientSummary) forwarded whole that would
	// otherwise have been replaced by a reference.
	KeptWhole int `json:"kept_whole,omitempty"`
	// Verified is the read-back check of every stored artifact or written
	// file (Options.Verify); nil when not asked for.
	Verified *Verification `json:"verified,omitempty"`
}

// CompactReport details the compact step.
type CompactReport struct {
	// Compacted reports that the middle of the list was summarized by this
	// call.
	Compacted bool `json:"compacted"`
	// Reused is the number of messages replaced by the summary of an
	// earlier call to the same Pipeline (see Options.Stateless), and
	// ReusedArchive the archive that holds them.
	Reused        int    `json:"reused"`
	ReusedArchive string `json:"reused_archive,omitempty"`
	// Stats are the statistics of compact.Compact (zero when nothing was
	// compacted).
	Stats compact.Stats `json:"stats"`
	// Archive is the file holding the summarized messages, ArchivedBytes
	// its size.
	Archive       string `json:"archive,omitempty"`
	ArchivedBytes int    `json:"archived_bytes"`
	// Reason is compact.Compact's reason for not compacting, or for a
	// result still over the trigger; empty when it compacted to below it.
	Reason compact.Reason `json:"reason,omitempty"`
	// Attempts is the number of summarizer calls.
	Attempts int `json:"attempts"`
	// Verified is the read-back check of the archive (Options.Verify); nil
	// when not asked for or when nothing was archived.
	Verified *Verification `json:"verified,omitempty"`
}

// Verification is the result of reading back what a step wrote and
// comparing it with the original, byte for byte.
type Verification struct {
	Checked   int      `json:"checked"`            // artifacts, files or archives read back
	Identical int      `json:"identical"`          // those identical to their original
	Failures  []string `json:"failures,omitempty"` // what differed, one line each
}

// OK reports whether everything checked read back identical.
func (v *Verification) OK() bool { return v == nil || v.Identical == v.Checked }

func (v *Verification) check(what string, ok bool, detail string) {
	v.Checked++
	if ok {
		v.Identical++
		return
	}
	v.Failures = append(v.Failures, what+": "+detail)
}

// Step returns the report of step s, or nil when there is none.
func (r *Report) Step(s Step) *StepReport {
	for i := range r.Steps {
		if r.Steps[i].Step == s {
			return &r.Steps[i]
		}
	}
	return nil
}

// Verified reports whether everything the call wrote and was asked to
// verify read back identical (true when nothing was verified).
func (r *Report) Verified() bool {
	for i := range r.Steps {
		s := &r.Steps[i]
		if s.Offload != nil && !s.Offload.Verified.OK() || s.Compact != nil && !s.Compact.Verified.OK() {
			return false
		}
	}
	return true
}

func millis(d time.Duration) float64 {
	return math.Round(float64(d)/1e3) / 1e3
}

// MarshalJSON writes the report with its duration as "duration_ms".
func (r Report) MarshalJSON() ([]byte, error) {
	type plain Report
	return rawjson.Marshal(struct {
		plain
		DurationMS float64 `json:"duration_ms"` // the time Prepare took, milliseconds
	}{plain(r), millis(r.Duration)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *Report) UnmarshalJSON(data []byte) error {
	type plain Report
	var v struct {
		plain
		DurationMS float64 `json:"duration_ms"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*r = Report(v.plain)
	r.Duration = time.Duration(v.DurationMS * 1e6)
	return nil
}

// MarshalJSON writes the step report with its duration as "duration_ms".
func (s StepReport) MarshalJSON() ([]byte, error) {
	type plain StepReport
	return rawjson.Marshal(struct {
		plain
		DurationMS float64 `json:"duration_ms"` // the time the step took, milliseconds
	}{plain(s), millis(s.Duration)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *StepReport) UnmarshalJSON(data []byte) error {
	type plain StepReport
	var v struct {
		plain
		DurationMS float64 `json:"duration_ms"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*s = StepReport(v.plain)
	s.Duration = time.Duration(v.DurationMS * 1e6)
	return nil
}

// String returns a short summary for a person, a few lines: tokens before
// and after, what was repaired, pruned, offloaded and compacted, and where
// the originals are.
func (r *Report) String() string {
	var b strings.Builder
	state := "below the trigger"
	if !r.BelowThreshold {
		state = "STILL OVER the trigger"
	}
	fmt.Fprintf(&b, "tokens    %s → %s (limit %s, trigger %s: %s)\n",
		textfmt.Thousands(r.TokensBefore), textfmt.Thousands(r.TokensAfter), textfmt.Thousands(r.Limit), textfmt.Thousands(r.ThresholdTokens), state)
	fmt.Fprintf(&b, "messages  %s → %s\n", textfmt.Thousands(r.MessagesBefore), textfmt.Thousands(r.MessagesAfter))
	for i := range r.Steps {
		s := &r.Steps[i]
		if line := s.summary(); line != "" {
			fmt.Fprintf(&b, "%-9s %s\n", s.Step, line)
		}
	}
	if r.ReadToolsTokens > 0 {
		fmt.Fprintf(&b, "%-9s read tools declared in the body's tools for the references (+%s tokens)\n", "read-back", textfmt.Thousands(r.ReadToolsTokens))
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "warning   %s\n", w)
	}
	fmt.Fprintf(&b, "time      %s\n", r.Duration.Round(time.Millisecond))
	return b.String()
}

func (s *StepReport) summary() string {
	if s.Skipped {
		return "off"
	}
	switch s.Step {
	case StepRepair:
		if s.Changed == 0 {
			return "tool calls and results already pair up"
		}
		return fmt.Sprintf("%d pairing repair(s): %s%s", s.Changed, repairKinds(s.Repairs), s.saved())
	case StepPrune:
		if s.Changed == 0 {
			return "no stale terminal output"
		}
		return fmt.Sprintf("%d stale terminal output(s) replaced by a placeholder%s", s.Changed, s.saved())
	case StepOffload:
		return s.offloadSummary()
	case StepCount:
		if s.Count == nil {
			return ""
		}
		if s.Count.ShouldCompact {
			return fmt.Sprintf("%s tokens: at or over the trigger", textfmt.Thousands(s.Count.Tokens))
		}
		return fmt.Sprintf("%s tokens: below the trigger", textfmt.Thousands(s.Count.Tokens))
	case StepCompact:
		return s.compactSummary()
	case StepValidate:
		if s.Pairing == nil {
			return ""
		}
		if s.Pairing.Valid {
			return "tool calls and results pair up"
		}
		return fmt.Sprintf("UNPAIRED: %d issue(s), first: %s", len(s.Pairing.Issues), s.Pairing.Issues[0])
	}
	return ""
}

// saved is what summary says the step saved: nothing, or the characters
// and tokens in parentheses.
func (s *StepReport) saved() string {
	if s.CharsSaved == 0 && s.TokensSaved == 0 {
		return ""
	}
	return fmt.Sprintf(" (%s chars, %s tokens)", signed(-s.CharsSaved), signed(-s.TokensSaved))
}

// offloadSummary is summary's line for the offload step.
func (s *StepReport) offloadSummary() string {
	o := s.Offload
	if o == nil {
		return ""
	}
	switch o.Mode {
	case OffloadFiles:
		if o.Replaced == 0 {
			return "no result large enough to offload"
		}
		return fmt.Sprintf("%d result(s) moved to files in %s%s", o.Replaced, o.Dir, s.saved())
	case OffloadWorkspace:
		where := "the workspace"
		if o.Workspace != "" {
			where = o.Workspace
		}
		line := fmt.Sprintf("%d result(s) kept whole in %s (namespace %s, %d written now)", o.Stored, where, o.Namespace, o.Written)
		if o.Replaced > 0 {
			line += fmt.Sprintf("; %d large one(s) replaced by a reference%s", o.Replaced, s.saved())
		}
		if o.Verified != nil {
			line += fmt.Sprintf("; %d/%d read back identical", o.Verified.Identical, o.Verified.Checked)
		}
		return line
	}
	return ""
}

// Why says, for a person, why the compact step compacted nothing, or why
// its result is still over the trigger: "" when it compacted to below it.
func (c *CompactReport) Why() string {
	if c == nil || c.Reason == "" && (c.Compacted || c.Reused > 0) {
		return ""
	}
	return notCompacted(c.Reason)
}

// notCompacted says, for a person, why the compact step compacted
// nothing (issue 48: "nothing compacted ()" when the list was below the
// trigger, which leaves the reason empty).
func notCompacted(r compact.Reason) string {
	switch r {
	case "", compact.ReasonBelowThreshold:
		return "not needed (below the trigger)"
	case compact.ReasonEmpty:
		return "nothing to compact (no messages)"
	case compact.ReasonNothingToCompact:
		return "nothing compacted: the messages kept (the first and the last turns) are the whole list"
	case compact.ReasonSummarizerFailed:
		return "nothing compacted: the summarizer failed (the list is sent as it was)"
	case compact.ReasonRetainedOverThreshold:
		return "nothing compacted: the messages kept alone reach the trigger"
	case compact.ReasonSummaryOverThreshold:
		return "nothing compacted: the summary would not bring the list below the trigger"
	}
	return "nothing compacted (" + string(r) + ")"
}

// compactSummary is summary's line for the compact step.
func (s *StepReport) compactSummary() string {
	c := s.Compact
	if c == nil {
		return ""
	}
	var parts []string
	if c.Reused > 0 {
		parts = append(parts, fmt.Sprintf("%d message(s) replaced by the earlier summary", c.Reused))
	}
	if c.Compacted {
		parts = append(parts, fmt.Sprintf("%d message(s) summarized", c.Stats.CompactedMessageCount))
	}
	if len(parts) == 0 {
		return notCompacted(c.Reason)
	}
	line := strings.Join(parts, ", ") + s.saved()
	if c.Archive != "" {
		line += "; originals in " + relPath(c.Archive)
	} else if c.ReusedArchive != "" {
		line += "; originals in " + relPath(c.ReusedArchive)
	}
	return line
}

func repairKinds(rs []agentctx.Repair) string {
	counts := map[agentctx.RepairAction]int{}
	var order []agentctx.RepairAction
	for _, r := range rs {
		if counts[r.Action] == 0 {
			order = append(order, r.Action)
		}
		counts[r.Action]++
	}
	parts := make([]string, len(order))
	for i, a := range order {
		parts[i] = fmt.Sprintf("%d %s", counts[a], strings.ReplaceAll(string(a), "_", " "))
	}
	return strings.Join(parts, ", ")
}

// relPath shortens an absolute path below the working directory.
func relPath(p string) string {
	if wd, err := filepath.Abs("."); err == nil {
		if rel, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return p
}

func signed(n int) string {
	if n > 0 {
		return "+" + textfmt.Thousands(n)
	}
	if n == 0 {
		return "±0"
	}
	return textfmt.Thousands(n)
}
