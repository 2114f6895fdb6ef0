package agentctx

import (
	"fmt"
	"slices"
	"strconv"
)

// IssueKind names a way in which tool calls and results fail to pair.
type IssueKind string

// The pairing rules. Model APIs answer a history that breaks any of them
// with HTTP 400.
//
// Pairing is per turn: a call is answered by a result with its id in the
// message(s) right after the one holding the call. Some models reuse ids
// across turns (kimi-k2's "functions.bash:0"): for OpenAI tool_calls that
// is allowed, each call being answered in its own turn (see
// PairingReport.ReusedCallIDs); Anthropic requires every tool_use id of a
// request to be unique, so a reused tool_use id is an issue that
// RepairPairing repairs by renaming.
const (
	// IssueUnansweredCall: a tool call has no result in its response window
	// (the next message for an Anthropic tool_use; the run of role "tool"
	// messages right after the assistant message for OpenAI tool_calls).
	IssueUnansweredCall IssueKind = "unanswered_call"
	// IssueOrphanResult: a tool result does not answer a call of the
	// assistant message right before its window.
	IssueOrphanResult IssueKind = "orphan_result"
	// IssueDuplicateResult: a second result for a call already answered.
	IssueDuplicateResult IssueKind = "duplicate_result"
	// IssueDuplicateCallID: two tool calls of one message share an id.
	IssueDuplicateCallID IssueKind = "duplicate_call_id"
	// IssueReusedToolUseID: an Anthropic tool_use reuses the id of a
	// tool_use in an earlier message (the Anthropic API requires tool_use
	// ids to be unique in a request). The call and its results still pair
	// within their turn.
	IssueReusedToolUseID IssueKind = "reused_tool_use_id"
	// IssueMissingID: a tool call or result has an empty id.
	IssueMissingID IssueKind = "missing_id"
	// IssueResultNotFirst: in a message answering tool_use blocks, a
	// tool_result block comes after another kind of block (Anthropic
	// requires the results first).
	IssueResultNotFirst IssueKind = "result_not_first"
	// IssueNotModelMessage: a message whose role no model API accepts
	// (mini-swe-agent's final role "exit" message; see IsModelRole). It is
	// left out of pairing.
	IssueNotModelMessage IssueKind = "not_model_message"
)

// PairingIssue is one broken pairing rule.
type PairingIssue struct {
	Kind    IssueKind `json:"kind"`          // unanswered_call, orphan_result, ...
	Message int       `json:"message_index"` // index of the message holding the call or result
	Block   int       `json:"block_index"`   // block or tool_calls index; -1 for a role "tool" message
	ID      string    `json:"id"`            // the tool call id
	Detail  string    `json:"detail"`        // one line for a person
}

func (p PairingIssue) String() string {
	return fmt.Sprintf("message %d block %d: %s %q: %s", p.Message, p.Block, p.Kind, p.ID, p.Detail)
}

// PairingReport is the result of ValidatePairing.
type PairingReport struct {
	Valid       bool `json:"valid"`        // every tool call is answered and every result answers a call
	Messages    int  `json:"messages"`     // messages checked
	ToolUses    int  `json:"tool_uses"`    // tool calls
	ToolResults int  `json:"tool_results"` // tool results
	// ReusedCallIDs counts the calls whose id a call in an earlier message
	// already used: each is answered in its own turn.
	ReusedCallIDs int            `json:"reused_call_ids,omitempty"`
	Issues        []PairingIssue `json:"issues"` // what does not pair, in order
}

// Err returns nil for a valid report, else an *PairingError listing the
// issues.
func (r PairingReport) Err() error {
	if r.Valid {
		return nil
	}
	return &PairingError{Issues: r.Issues}
}

// PairingError is returned for a history whose tool calls and results do not
// pair. It matches ErrUnpaired with errors.Is.
type PairingError struct {
	Issues []PairingIssue
}

func (e *PairingError) Error() string {
	if len(e.Issues) == 1 {
		return "agentctx: unpaired tool call/result: " + e.Issues[0].String()
	}
	return fmt.Sprintf("agentctx: %d pairing issues, first: %s", len(e.Issues), e.Issues[0])
}

// Is makes errors.Is(err, ErrUnpaired) true.
func (e *PairingError) Is(target error) bool { return target == ErrUnpaired }

// window is the set of calls a response window may answer.
type window struct {
	owner    int
	anthro   map[string]int // tool_use id -> block index, not yet answered
	openai   map[string]int // tool_calls id -> element index, not yet answered
	answered map[string]bool
}

func (w *window) open() bool { return w.owner >= 0 }

// IsModelRole reports whether a model API accepts a message with the role:
// system, developer, user, assistant, tool or function. Readers keep other
// messages in the file but out of Document.Messages (see
// Document.NonModel); ValidatePairing reports them and RepairPairing and
// SendableMessages drop them.
func IsModelRole(role string) bool {
	switch role {
	case RoleSystem, RoleUser, RoleAssistant, RoleTool, "developer", "function":
		return true
	}
	return false
}

// ValidatePairing checks every tool call and tool result in msgs against the
// pairing rules of both wire shapes and reports every issue it finds, in
// message order. Thinking and other blocks are ignored; parallel calls are
// answered in any order; an id may be reused by a call of a later turn (see
// IssueKind).
func ValidatePairing(msgs []Message) PairingReport {
	rep := PairingReport{Messages: len(msgs), Issues: []PairingIssue{}}
	issue := func(k IssueKind, msg, blk int, id, detail string) {
		rep.Issues = append(rep.Issues, PairingIssue{Kind: k, Message: msg, Block: blk, ID: id, Detail: detail})
	}
	callAt := make(map[string]int, len(msgs)/2) // call id -> latest message before the current one with a call of this id
	toolUseAt := make(map[string]int, len(msgs)/2)
	// The maps of a window and the ids of a message, cleared and used
	// again by each assistant message with calls (not made for each).
	anthro, openai, answered, seen := map[string]int{}, map[string]int{}, map[string]bool{}, map[string]bool{}

	w := window{owner: -1}
	closeWindow := func() {
		if !w.open() {
			return
		}
		var late []PairingIssue
		for id, blk := range w.anthro {
			late = append(late, PairingIssue{Kind: IssueUnansweredCall, Message: w.owner, Block: blk, ID: id,
				Detail: "tool_use has no tool_result in the next message"})
		}
		for id, blk := range w.openai {
			late = append(late, PairingIssue{Kind: IssueUnansweredCall, Message: w.owner, Block: blk, ID: id,
				Detail: "tool call has no role \"tool\" message after its assistant message"})
		}
		slices.SortFunc(late, func(a, b PairingIssue) int { return a.Block - b.Block })
		rep.Issues = append(rep.Issues, late...)
		w = window{owner: -1}
	}
	match := func(i, blk int, id string, inWindow bool) {
		rep.ToolResults++
		switch {
		case id == "":
			issue(IssueMissingID, i, blk, "", "tool result has no id")
		case inWindow && w.answered[id]:
			issue(IssueDuplicateResult, i, blk, id, fmt.Sprintf("call in message %d is already answered", w.owner))
		case inWindow && hasKey(w.anthro, id) && blk >= 0:
			delete(w.anthro, id)
			w.answered[id] = true
		case inWindow && hasKey(w.openai, id) && blk < 0:
			delete(w.openai, id)
			w.answered[id] = true
		default:
			detail := "no tool call has this id"
			if at, ok := callAt[id]; ok {
				detail = fmt.Sprintf("its call is in message %d, not in the assistant message right before", at)
			}
			issue(IssueOrphanResult, i, blk, id, detail)
		}
	}

	prev := -1 // the previous model message
	for i := range msgs {
		m := &msgs[i]
		if !IsModelRole(m.Role) {
			issue(IssueNotModelMessage, i, -1, "", fmt.Sprintf("role %q is not a model message", m.Role))
			continue
		}
		if m.Role == RoleTool {
			match(i, -1, m.ToolCallID, w.open())
			prev = i
			continue
		}
		inWindow := w.open() && prev == w.owner && m.Role != RoleAssistant && len(w.anthro)+len(w.answered) > 0
		prev = i
		seenOther := false
		for j := range m.Content.blocks {
			b := &m.Content.blocks[j]
			if b.Type != BlockToolResult {
				seenOther = true
				continue
			}
			if seenOther && inWindow {
				issue(IssueResultNotFirst, i, j, b.ToolUseID, "tool_result blocks must come before any other block")
			}
			match(i, j, b.ToolUseID, inWindow)
		}
		closeWindow()
		if !hasCalls(m) {
			continue
		}
		clear(anthro)
		clear(openai)
		clear(answered)
		clear(seen)
		w = window{owner: i, anthro: anthro, openai: openai, answered: answered}
		call := func(blk int, id, name string, openai bool) {
			rep.ToolUses++
			switch {
			case id == "":
				issue(IssueMissingID, i, blk, "", fmt.Sprintf("tool call %q has no id", name))
				return
			case seen[id]:
				issue(IssueDuplicateCallID, i, blk, id, "id already used by another call of this message")
				return
			}
			seen[id] = true
			if _, ok := callAt[id]; ok {
				rep.ReusedCallIDs++
			}
			if openai {
				w.openai[id] = blk
				return
			}
			if at, ok := toolUseAt[id]; ok {
				issue(IssueReusedToolUseID, i, blk, id, fmt.Sprintf("a tool_use in message %d has this id; Anthropic requires unique tool_use ids", at))
			} else {
				toolUseAt[id] = i
			}
			w.anthro[id] = blk
		}
		for j := range m.Content.blocks {
			if b := &m.Content.blocks[j]; b.Type == BlockToolUse {
				call(j, b.ID, b.Name, false)
			}
		}
		for j := range m.ToolCalls {
			call(j, m.ToolCalls[j].ID, m.ToolCalls[j].Function.Name, true)
		}
		for id := range seen {
			callAt[id] = i
		}
	}
	closeWindow()
	slices.SortStableFunc(rep.Issues, func(a, b PairingIssue) int {
		if a.Message != b.Message {
			return a.Message - b.Message
		}
		return a.Block - b.Block
	})
	rep.Valid = len(rep.Issues) == 0
	return rep
}

func hasKey(m map[string]int, k string) bool {
	_, ok := m[k]
	return ok
}

func hasCalls(m *Message) bool {
	if len(m.ToolCalls) > 0 {
		return true
	}
	for j := range m.Content.blocks {
		if m.Content.blocks[j].Type == BlockToolUse {
			return true
		}
	}
	return false
}

// RepairAction names what RepairPairing did.
type RepairAction string

// Repair actions.
const (
	RepairAddedResult      RepairAction = "added_result"       // a synthetic error result for an unanswered call
	RepairDroppedResult    RepairAction = "dropped_result"     // an orphan or duplicate result removed
	RepairDroppedMessage   RepairAction = "dropped_message"    // a message left empty by dropped results removed
	RepairMovedResultFirst RepairAction = "moved_result_first" // tool_result blocks moved before other blocks
	// RepairRenamedCall: a tool_use reusing the id of an earlier tool_use,
	// and the results answering it in its turn, got a new id (ID; OldID
	// is the one it had).
	RepairRenamedCall RepairAction = "renamed_call_id"
	// RepairDroppedNonModel: a message no model API accepts (role "exit")
	// left out of the messages to send.
	RepairDroppedNonModel RepairAction = "dropped_non_model_message"
)

// Repair is one change RepairPairing made. Message and Block refer to the
// input list.
type Repair struct {
	Action  RepairAction `json:"action"`           // added_result, dropped_result, renamed_call, dropped_non_model, ...
	Message int          `json:"message_index"`    // index of the message changed, in the input
	Block   int          `json:"block_index"`      // block or tool_calls index; -1 for a whole message
	ID      string       `json:"id,omitempty"`     // the tool call id
	OldID   string       `json:"old_id,omitempty"` // RepairRenamedCall: the id before
	Role    string       `json:"role,omitempty"`   // RepairDroppedNonModel: the message's role
}

// MissingResultText is the content of the synthetic result RepairPairing
// adds for a call that was never answered.
const MissingResultText = "Error: no result was recorded for this tool call."

// RepairPairing returns a copy of msgs in which every tool call is answered
// and every tool result answers a call: an unanswered call gets a synthetic
// error result (a tool_result block with is_error for Anthropic calls, a
// role "tool" message for OpenAI calls), an orphan or duplicate result is
// dropped (and a message left with no content is dropped with it),
// tool_result blocks are moved before other blocks where a message put them
// after, a tool_use reusing the id of an earlier tool_use is renamed with
// the results of its turn, and a message no model accepts (role "exit") is
// dropped. Thinking blocks and everything else are kept. Duplicate call ids
// within one message and missing ids are reported by ValidatePairing but
// cannot be repaired here. msgs is not modified; untouched messages are
// shared. Every change is listed, with indexes into msgs.
func RepairPairing(msgs []Message) ([]Message, []Repair) {
	rep := ValidatePairing(msgs)
	repairs := []Repair{}
	if rep.Valid {
		return slices.Clone(msgs), repairs
	}
	type pos struct{ msg, blk int }
	msgs, renamed, repairs := renameReusedToolUses(msgs, rep.Issues, repairs)
	dropMsg := map[int]bool{}
	drop := map[pos]bool{}
	dropIn := map[int]bool{} // messages with a dropped block
	reorder := map[int]bool{}
	missingAnthro := map[int][]Block{}   // owner message -> results to add
	missingOpenAI := map[int][]Message{} // owner message -> tool messages to add
	for _, is := range rep.Issues {
		switch is.Kind {
		case IssueOrphanResult, IssueDuplicateResult:
			drop[pos{is.Message, is.Block}] = true
			dropIn[is.Message] = true
			repairs = append(repairs, Repair{Action: RepairDroppedResult, Message: is.Message, Block: is.Block, ID: is.ID})
		case IssueMissingID:
			if isResultAt(msgs, is.Message, is.Block) {
				drop[pos{is.Message, is.Block}] = true
				dropIn[is.Message] = true
				repairs = append(repairs, Repair{Action: RepairDroppedResult, Message: is.Message, Block: is.Block})
			}
		case IssueResultNotFirst:
			if !reorder[is.Message] {
				reorder[is.Message] = true
				repairs = append(repairs, Repair{Action: RepairMovedResultFirst, Message: is.Message, Block: is.Block, ID: is.ID})
			}
		case IssueNotModelMessage:
			dropMsg[is.Message] = true
			repairs = append(repairs, Repair{Action: RepairDroppedNonModel, Message: is.Message, Block: -1, Role: msgs[is.Message].Role})
		case IssueUnansweredCall:
			if id, ok := renamed[[2]int{is.Message, is.Block}]; ok {
				is.ID = id
			}
			owner := &msgs[is.Message]
			if is.Block < len(owner.ToolCalls) && owner.ToolCalls[is.Block].ID == is.ID {
				missingOpenAI[is.Message] = append(missingOpenAI[is.Message],
					Message{Role: RoleTool, ToolCallID: is.ID, Content: Text(MissingResultText)})
			} else {
				missingAnthro[is.Message] = append(missingAnthro[is.Message], ToolResultBlock(is.ID, Text(MissingResultText), true))
			}
			repairs = append(repairs, Repair{Action: RepairAddedResult, Message: is.Message, Block: is.Block, ID: is.ID})
		}
	}

	out := make([]Message, 0, len(msgs)+len(missingAnthro)+len(missingOpenAI))
	var pendingOpenAI []Message // tool messages to place after the current run
	var pendingAnthro []Block   // tool_result blocks to place in the next message
	flushOpenAI := func() {
		out = append(out, pendingOpenAI...)
		pendingOpenAI = nil
	}
	for i := range msgs {
		m := msgs[i]
		if dropMsg[i] {
			continue
		}
		if m.Role != RoleTool {
			flushOpenAI()
		}
		if m.Role == RoleTool && drop[pos{i, -1}] {
			repairs = append(repairs, Repair{Action: RepairDroppedMessage, Message: i, Block: -1, ID: m.ToolCallID})
			continue
		}
		if m.Content.kind == ContentBlocks && (reorder[i] || dropIn[i]) {
			var kept, results, others []Block
			for j, b := range m.Content.blocks {
				if drop[pos{i, j}] {
					continue
				}
				kept = append(kept, b)
				if b.Type == BlockToolResult {
					results = append(results, b)
				} else {
					others = append(others, b)
				}
			}
			blocks := kept
			if reorder[i] {
				blocks = append(results, others...)
			}
			if len(blocks) == 0 && pendingAnthro == nil {
				repairs = append(repairs, Repair{Action: RepairDroppedMessage, Message: i, Block: -1})
				continue
			}
			m = m.WithContent(BlockList(blocks...))
		}
		if pendingAnthro != nil {
			switch {
			case m.Role == RoleUser && m.Content.kind == ContentBlocks:
				m = m.WithContent(BlockList(insertResults(m.Content.blocks, pendingAnthro)...))
			case m.Role == RoleUser && m.Content.kind == ContentText:
				blocks := pendingAnthro
				if m.Content.text != "" {
					blocks = append(blocks, TextBlock(m.Content.text))
				}
				m = m.WithContent(BlockList(blocks...))
			default:
				out = append(out, Message{Role: RoleUser, Content: BlockList(pendingAnthro...)})
			}
			pendingAnthro = nil
		}
		out = append(out, m)
		if add, ok := missingAnthro[i]; ok {
			pendingAnthro = add
		}
		if add, ok := missingOpenAI[i]; ok {
			pendingOpenAI = add
		}
	}
	flushOpenAI()
	if pendingAnthro != nil {
		out = append(out, Message{Role: RoleUser, Content: BlockList(pendingAnthro...)})
	}
	return out, repairs
}

// renameReusedToolUses gives every tool_use that reuses the id of an
// earlier tool_use (IssueReusedToolUseID) a new id, unused anywhere in
// msgs, and renames the tool_result blocks answering it in the next model
// message. It returns the new list (changed messages are copies), the new
// id of each renamed call by position, and repairs with the renames added.
func renameReusedToolUses(msgs []Message, issues []PairingIssue, repairs []Repair) ([]Message, map[[2]int]string, []Repair) {
	renamed := map[[2]int]string{}
	var used map[string]bool
	for _, is := range issues {
		if is.Kind != IssueReusedToolUseID {
			continue
		}
		if used == nil {
			used = map[string]bool{}
			for u := range ToolUses(msgs) {
				used[u.ID] = true
			}
			for r := range ToolResults(msgs) {
				used[r.ID] = true
			}
			msgs = slices.Clone(msgs)
		}
		id := is.ID
		for n := 2; used[id]; n++ {
			id = is.ID + "_" + strconv.Itoa(n)
		}
		used[id] = true
		b := msgs[is.Message].Content.blocks[is.Block]
		b.ID = id
		msgs[is.Message] = msgs[is.Message].WithBlock(is.Block, b)
		renamed[[2]int{is.Message, is.Block}] = id
		repairs = append(repairs, Repair{Action: RepairRenamedCall, Message: is.Message, Block: is.Block, ID: id, OldID: is.ID})
		next := is.Message + 1
		for next < len(msgs) && !IsModelRole(msgs[next].Role) {
			next++
		}
		if next == len(msgs) || msgs[next].Role == RoleAssistant {
			continue
		}
		for j, b := range msgs[next].Content.blocks {
			if b.Type == BlockToolResult && b.ToolUseID == is.ID {
				b.ToolUseID = id
				msgs[next] = msgs[next].WithBlock(j, b)
			}
		}
	}
	return msgs, renamed, repairs
}

// SendableMessages returns msgs without the messages no model API accepts
// (see IsModelRole), and a RepairDroppedNonModel repair for each one it
// left out. msgs is not modified.
func SendableMessages(msgs []Message) ([]Message, []Repair) {
	out := make([]Message, 0, len(msgs))
	repairs := []Repair{}
	for i := range msgs {
		if IsModelRole(msgs[i].Role) {
			out = append(out, msgs[i])
			continue
		}
		repairs = append(repairs, Repair{Action: RepairDroppedNonModel, Message: i, Block: -1, Role: msgs[i].Role})
	}
	return out, repairs
}

// insertResults returns blocks with results inserted after the leading
// tool_result blocks.
func insertResults(blocks, results []Block) []Block {
	k := 0
	for k < len(blocks) && blocks[k].Type == BlockToolResult {
		k++
	}
	out := make([]Block, 0, len(blocks)+len(results))
	out = append(out, blocks[:k]...)
	out = append(out, results...)
	return append(out, blocks[k:]...)
}

func isResultAt(msgs []Message, i, blk int) bool {
	if blk < 0 {
		return msgs[i].Role == RoleTool
	}
	bs := msgs[i].Content.blocks
	return blk < len(bs) && bs[blk].Type == BlockToolResult
}
