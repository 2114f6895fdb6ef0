package agentctx

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
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
	// The ids map is sized for the calls there are: half the messages
	// was 1.3 MB for 10 MB of OpenHands' turns, whose actions are text.
	calls := 0
	for i := range msgs {
		calls += len(msgs[i].ToolCalls)
		for j := range msgs[i].Content.blocks {
			if msgs[i].Content.blocks[j].Type == BlockToolUse {
				calls++
			}
		}
	}
	c := pairingCheck{rep: &rep, ids: make(map[string]idAt, calls), owner: -1}
	prev := -1 // the previous model message
	for i := range msgs {
		m := &msgs[i]
		if !IsModelRole(m.Role) {
			c.issue(IssueNotModelMessage, i, -1, "", fmt.Sprintf("role %q is not a model message", m.Role))
			continue
		}
		if m.Role == RoleTool {
			c.match(i, -1, m.ToolCallID, c.open())
			prev = i
			continue
		}
		inWindow := c.open() && prev == c.owner && m.Role != RoleAssistant && c.unansweredUses+c.answered > 0
		prev = i
		c.results(i, m, inWindow)
		c.closeWindow()
		if hasCalls(m) {
			c.calls(i, m)
		}
	}
	c.closeWindow()
	slices.SortStableFunc(rep.Issues, func(a, b PairingIssue) int {
		if a.Message != b.Message {
			return a.Message - b.Message
		}
		return a.Block - b.Block
	})
	rep.Valid = len(rep.Issues) == 0
	return rep
}

// pairingCheck is the state of one ValidatePairing pass over a list.
type pairingCheck struct {
	rep *PairingReport
	ids map[string]idAt // per call id: where it was used before the current message
	// The open window is the calls of message owner (-1: none) that the
	// next message may answer. A message makes a few calls, so the window
	// is a list searched in order; byID indexes it once it is long (a
	// message of thousands of parallel calls stays linear).
	owner          int
	window         []windowCall
	byID           map[string]int
	unansweredUses int // tool_use calls of the window not yet answered
	answered       int // calls of the window answered
}

// idAt is where a call id was used: the latest message with a call of
// this id, and the first with a tool_use of this id (-1: none).
type idAt struct{ call, toolUse int }

// windowCall is one call of the open window.
type windowCall struct {
	id       string
	blk      int  // block index (tool_use) or tool_calls index (OpenAI)
	openai   bool // an OpenAI tool_calls entry, answered by a role "tool" message
	answered bool
}

// indexFrom is the window length from which byID indexes it.
const indexFrom = 16

func (c *pairingCheck) open() bool { return c.owner >= 0 }

// find returns the index in the window of the call with the id, or -1.
func (c *pairingCheck) find(id string) int {
	if c.byID != nil {
		if k, ok := c.byID[id]; ok {
			return k
		}
		return -1
	}
	for k := range c.window {
		if c.window[k].id == id {
			return k
		}
	}
	return -1
}

// add puts a call in the window.
func (c *pairingCheck) add(w windowCall) {
	c.window = append(c.window, w)
	switch {
	case c.byID != nil:
		c.byID[w.id] = len(c.window) - 1
	case len(c.window) == indexFrom:
		c.byID = make(map[string]int, 2*indexFrom)
		for k := range c.window {
			c.byID[c.window[k].id] = k
		}
	}
	if !w.openai {
		c.unansweredUses++
	}
}

func (c *pairingCheck) issue(k IssueKind, msg, blk int, id, detail string) {
	c.rep.Issues = append(c.rep.Issues, PairingIssue{Kind: k, Message: msg, Block: blk, ID: id, Detail: detail})
}

// closeWindow reports the calls of the open window left unanswered, in
// block order, and closes it.
func (c *pairingCheck) closeWindow() {
	if !c.open() {
		return
	}
	n := len(c.rep.Issues)
	for _, w := range c.window {
		switch {
		case w.answered:
		case w.openai:
			c.issue(IssueUnansweredCall, c.owner, w.blk, w.id, "tool call has no role \"tool\" message after its assistant message")
		default:
			c.issue(IssueUnansweredCall, c.owner, w.blk, w.id, "tool_use has no tool_result in the next message")
		}
	}
	slices.SortStableFunc(c.rep.Issues[n:], func(a, b PairingIssue) int { return a.Block - b.Block })
	c.owner = -1
}

// match answers a call of the open window with the result at message i,
// block blk (-1: a role "tool" message), or reports why it cannot.
func (c *pairingCheck) match(i, blk int, id string, inWindow bool) {
	c.rep.ToolResults++
	k := -1
	if inWindow && id != "" {
		k = c.find(id)
	}
	switch {
	case id == "":
		c.issue(IssueMissingID, i, blk, "", "tool result has no id")
	case k >= 0 && c.window[k].answered:
		c.issue(IssueDuplicateResult, i, blk, id, fmt.Sprintf("call in message %d is already answered", c.owner))
	case k >= 0 && c.window[k].openai == (blk < 0):
		c.window[k].answered = true
		c.answered++
		if blk >= 0 {
			c.unansweredUses--
		}
	default:
		detail := "no tool call has this id"
		if at, ok := c.ids[id]; ok && at.call >= 0 {
			detail = fmt.Sprintf("its call is in message %d, not in the assistant message right before", at.call)
		}
		c.issue(IssueOrphanResult, i, blk, id, detail)
	}
}

// results matches the tool_result blocks of message i; inWindow says the
// message comes right after the window's calls.
func (c *pairingCheck) results(i int, m *Message, inWindow bool) {
	seenOther := false
	for j := range m.Content.blocks {
		b := &m.Content.blocks[j]
		if b.Type != BlockToolResult {
			seenOther = true
			continue
		}
		if seenOther && inWindow {
			c.issue(IssueResultNotFirst, i, j, b.ToolUseID, "tool_result blocks must come before any other block")
		}
		c.match(i, j, b.ToolUseID, inWindow)
	}
}

// calls opens the window of message i's calls.
func (c *pairingCheck) calls(i int, m *Message) {
	c.window, c.byID, c.unansweredUses, c.answered = c.window[:0], nil, 0, 0
	c.owner = i
	for j := range m.Content.blocks {
		if b := &m.Content.blocks[j]; b.Type == BlockToolUse {
			c.call(i, j, b.ID, b.Name, false)
		}
	}
	for j := range m.ToolCalls {
		c.call(i, j, m.ToolCalls[j].ID, m.ToolCalls[j].Function.Name, true)
	}
}

// call adds the call at message i, block or tool_calls index blk, to the
// open window, or reports why it cannot be answered.
func (c *pairingCheck) call(i, blk int, id, name string, openai bool) {
	c.rep.ToolUses++
	switch {
	case id == "":
		c.issue(IssueMissingID, i, blk, "", fmt.Sprintf("tool call %q has no id", name))
		return
	case c.find(id) >= 0:
		c.issue(IssueDuplicateCallID, i, blk, id, "id already used by another call of this message")
		return
	}
	c.add(windowCall{id: id, blk: blk, openai: openai})
	at, ok := c.ids[id]
	if !ok {
		at = idAt{call: -1, toolUse: -1}
	}
	if at.call >= 0 {
		c.rep.ReusedCallIDs++
	}
	at.call = i
	if !openai {
		if at.toolUse >= 0 {
			c.issue(IssueReusedToolUseID, i, blk, id, fmt.Sprintf("a tool_use in message %d has this id; Anthropic requires unique tool_use ids", at.toolUse))
		} else {
			at.toolUse = i
		}
	}
	c.ids[id] = at
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
	RepairAddedResult    RepairAction = "added_result"    // a synthetic error result for an unanswered call
	RepairDroppedResult  RepairAction = "dropped_result"  // an orphan or duplicate result removed
	RepairDroppedMessage RepairAction = "dropped_message" // a role "tool" message dropped as an orphan or duplicate
	// RepairResultAsText: an orphan or duplicate result that was all its
	// message held became a text block (OrphanResultText), so that the
	// message and its turn stay; for role "tool" messages at the end of the
	// list, after an assistant message, it is a user message of their text.
	RepairResultAsText     RepairAction = "result_as_text"
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
	Action  RepairAction `json:"action"`           // added_result, dropped_result, result_as_text, renamed_call, dropped_non_model, ...
	Message int          `json:"message_index"`    // index of the message changed, in the input
	Block   int          `json:"block_index"`      // block or tool_calls index; -1 for a whole message
	ID      string       `json:"id,omitempty"`     // the tool call id
	OldID   string       `json:"old_id,omitempty"` // RepairRenamedCall: the id before
	Role    string       `json:"role,omitempty"`   // RepairDroppedNonModel: the message's role
}

// MissingResultText is the content of the synthetic result RepairPairing
// adds for a call that was never answered.
const MissingResultText = "Error: no result was recorded for this tool call."

// OrphanResultText is the text that stands for an orphan or duplicate tool
// result RepairPairing could not drop without dropping its message: the
// call id and the result's text (the text of its text blocks; other blocks,
// images, are left out).
func OrphanResultText(id string, content Content) string {
	var text string
	switch content.kind {
	case ContentText:
		text = content.str()
	case ContentBlocks:
		var parts []string
		for _, b := range content.blocks {
			if b.Type == BlockText {
				parts = append(parts, b.Text)
			}
		}
		text = strings.Join(parts, "\n")
	case ContentNone, ContentNull:
	default:
		text = content.AsText()
	}
	return fmt.Sprintf("Tool result for call %q (kept as text: it answers no tool call of the turn before it):\n%s", id, text)
}

// RepairPairing returns a copy of msgs in which every tool call is answered
// and every tool result answers a call: an unanswered call gets a synthetic
// error result (a tool_result block with is_error for Anthropic calls, a
// role "tool" message for OpenAI calls), an orphan or duplicate result is
// dropped, except that the conversation keeps its turns: a message that
// held nothing but such results keeps them as text blocks
// (OrphanResultText, RepairResultAsText), and role "tool" messages dropped
// at the end of the list become a user message of their text when the
// list would otherwise end on an assistant message (a prefill the client
// did not send) or be empty;
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
	msgs, renamed, repairs := renameReusedToolUses(msgs, rep.Issues, repairs)
	plan := repairPlan{
		dropMsg: map[int]bool{}, drop: map[blockPos]bool{}, dropIn: map[int]bool{}, reorder: map[int]bool{},
		missingAnthro: map[int][]Block{}, missingOpenAI: map[int][]Message{},
	}
	repairs = plan.add(msgs, rep.Issues, renamed, repairs)
	return plan.apply(msgs, repairs)
}

// blockPos is the position of a block (or of a tool_calls element, or -1
// for a whole message) in a list.
type blockPos struct{ msg, blk int }

// repairPlan is what RepairPairing changes, by position in the input.
type repairPlan struct {
	dropMsg       map[int]bool      // messages no model accepts
	drop          map[blockPos]bool // results to drop
	dropIn        map[int]bool      // messages with a dropped block
	reorder       map[int]bool      // messages whose results go first
	missingAnthro map[int][]Block   // owner message -> results to add
	missingOpenAI map[int][]Message // owner message -> tool messages to add
}

// add plans the repairs of the issues of msgs, and returns repairs with
// them listed. renamed has the new id of each call renamed, by position.
func (p *repairPlan) add(msgs []Message, issues []PairingIssue, renamed map[[2]int]string, repairs []Repair) []Repair {
	for _, is := range issues {
		switch is.Kind {
		case IssueOrphanResult, IssueDuplicateResult:
			p.drop[blockPos{is.Message, is.Block}] = true
			p.dropIn[is.Message] = true
			repairs = append(repairs, Repair{Action: RepairDroppedResult, Message: is.Message, Block: is.Block, ID: is.ID})
		case IssueMissingID:
			if isResultAt(msgs, is.Message, is.Block) {
				p.drop[blockPos{is.Message, is.Block}] = true
				p.dropIn[is.Message] = true
				repairs = append(repairs, Repair{Action: RepairDroppedResult, Message: is.Message, Block: is.Block})
			}
		case IssueResultNotFirst:
			if !p.reorder[is.Message] {
				p.reorder[is.Message] = true
				repairs = append(repairs, Repair{Action: RepairMovedResultFirst, Message: is.Message, Block: is.Block, ID: is.ID})
			}
		case IssueNotModelMessage:
			p.dropMsg[is.Message] = true
			repairs = append(repairs, Repair{Action: RepairDroppedNonModel, Message: is.Message, Block: -1, Role: msgs[is.Message].Role})
		case IssueUnansweredCall:
			if id, ok := renamed[[2]int{is.Message, is.Block}]; ok {
				is.ID = id
			}
			owner := &msgs[is.Message]
			if is.Block < len(owner.ToolCalls) && owner.ToolCalls[is.Block].ID == is.ID {
				p.missingOpenAI[is.Message] = append(p.missingOpenAI[is.Message],
					Message{Role: RoleTool, ToolCallID: is.ID, Content: Text(MissingResultText)})
			} else {
				p.missingAnthro[is.Message] = append(p.missingAnthro[is.Message], ToolResultBlock(is.ID, Text(MissingResultText), true))
			}
			repairs = append(repairs, Repair{Action: RepairAddedResult, Message: is.Message, Block: is.Block, ID: is.ID})
		}
	}
	return repairs
}

// apply returns msgs with the plan carried out, and repairs with the
// messages it dropped added.
func (p *repairPlan) apply(msgs []Message, repairs []Repair) ([]Message, []Repair) {
	out := make([]Message, 0, len(msgs)+len(p.missingAnthro)+len(p.missingOpenAI))
	var pendingOpenAI []Message // tool messages to place after the current run
	var pendingAnthro []Block   // tool_result blocks to place in the next message
	var dropped []droppedTool   // role "tool" messages dropped since the last message kept
	for i := range msgs {
		m := msgs[i]
		if p.dropMsg[i] {
			continue
		}
		if m.Role != RoleTool {
			out = append(out, pendingOpenAI...)
			pendingOpenAI = nil
		}
		if m.Role == RoleTool && p.drop[blockPos{i, -1}] {
			repairs = append(repairs, Repair{Action: RepairDroppedMessage, Message: i, Block: -1, ID: m.ToolCallID})
			dropped = append(dropped, droppedTool{i, OrphanResultText(m.ToolCallID, m.Content), len(repairs) - 1})
			continue
		}
		if m.Content.kind == ContentBlocks && (p.reorder[i] || p.dropIn[i]) {
			blocks := p.blocksOf(i, m.Content.blocks)
			if len(blocks) == 0 && pendingAnthro == nil {
				// Dropping the results would drop the message, and with it
				// a turn: the list could end on the assistant's turn (a
				// prefill) or two assistant turns be joined. The results
				// stay as text.
				blocks = p.resultsAsText(i, m.Content.blocks, repairs)
			}
			m = m.WithContent(BlockList(blocks...))
		}
		dropped = dropped[:0]
		if pendingAnthro != nil {
			if withResults, ok := withResultsFirst(m, pendingAnthro); ok {
				m = withResults
			} else {
				out = append(out, Message{Role: RoleUser, Content: BlockList(pendingAnthro...)})
			}
			pendingAnthro = nil
		}
		out = append(out, m)
		if add, ok := p.missingAnthro[i]; ok {
			pendingAnthro = add
		}
		if add, ok := p.missingOpenAI[i]; ok {
			pendingOpenAI = add
		}
	}
	out = append(out, pendingOpenAI...)
	if pendingAnthro != nil {
		out = append(out, Message{Role: RoleUser, Content: BlockList(pendingAnthro...)})
	}
	if len(dropped) > 0 && len(pendingOpenAI) == 0 && pendingAnthro == nil &&
		(len(out) == 0 || out[len(out)-1].Role == RoleAssistant) {
		// The list ended on role "tool" messages that were dropped: without
		// them it would end on the assistant's turn, a prefill the client
		// did not send. Their text is the user's turn instead.
		texts := make([]string, len(dropped))
		for k, d := range dropped {
			texts[k] = d.text
			repairs[d.repair].Action = RepairResultAsText
		}
		out = append(out, Message{Role: RoleUser, Content: Text(strings.Join(texts, "\n\n"))})
	}
	return out, repairs
}

// droppedTool is a role "tool" message apply dropped: its index, its
// OrphanResultText and the index of its repair.
type droppedTool struct {
	msg    int
	text   string
	repair int
}

// resultsAsText returns the dropped results of message i, all its blocks,
// as text blocks, and marks their repairs RepairResultAsText.
func (p *repairPlan) resultsAsText(i int, blocks []Block, repairs []Repair) []Block {
	out := make([]Block, 0, len(blocks))
	for _, b := range blocks {
		out = append(out, TextBlock(OrphanResultText(b.ToolUseID, b.Content)))
	}
	for k := range repairs {
		if repairs[k].Message == i && repairs[k].Action == RepairDroppedResult {
			repairs[k].Action = RepairResultAsText
		}
	}
	return out
}

// blocksOf returns the blocks of message i without those the plan drops,
// its tool_result blocks first when the plan reorders it.
func (p *repairPlan) blocksOf(i int, blocks []Block) []Block {
	var kept, results, others []Block
	for j, b := range blocks {
		if p.drop[blockPos{i, j}] {
			continue
		}
		kept = append(kept, b)
		if b.Type == BlockToolResult {
			results = append(results, b)
		} else {
			others = append(others, b)
		}
	}
	if p.reorder[i] {
		return append(results, others...)
	}
	return kept
}

// withResultsFirst returns m with the tool_result blocks results added to
// it (see insertResults; a text content becomes a text block after them),
// or false when m is not a user message with text or blocks.
func withResultsFirst(m Message, results []Block) (Message, bool) {
	switch {
	case m.Role == RoleUser && m.Content.kind == ContentBlocks:
		return m.WithContent(BlockList(insertResults(m.Content.blocks, results)...)), true
	case m.Role == RoleUser && m.Content.kind == ContentText:
		blocks := results
		if m.Content.str() != "" {
			blocks = append(blocks, TextBlock(m.Content.str()))
		}
		return m.WithContent(BlockList(blocks...)), true
	}
	return m, false
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
