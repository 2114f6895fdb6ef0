package transcript

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"slices"
	"strconv"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// Claude Code writes a session as JSON Lines of records. Records of type
// "user" and "assistant" carry a message (its "message" member) and a
// "timestamp"; every other record (progress, file-history-snapshot,
// queue-operation, summary, system records with a subtype) is not part of
// the conversation and is skipped, counted by kind. Details the reader
// handles:
//
//   - an assistant turn is written as one record per content block, all
//     with the same message.id, with the results of its calls written in
//     between: they are folded back into one assistant message followed by
//     one message holding the results;
//   - records with isSidechain true are a subagent's conversation. Claude
//     Code writes them to a file of their own (<session>/subagents/
//     agent-*.jsonl) where every record is a sidechain: such a file is read
//     as a conversation. In a file that also holds main-line records they
//     are skipped (kind "sidechain");
//   - a system record with subtype "compact_boundary" marks where Claude
//     Code compacted the conversation; the user record after it
//     (isCompactSummary) holds the summary it went on from. By default only
//     the live context is read: the records after the last boundary; the
//     earlier ones are skipped (kind "before compact boundary").
//     ReadOptions.WholeHistory reads them all;
//   - isMeta user records (command caveats, skill texts) are sent to the
//     model by Claude Code and are read as messages; toolUseResult and
//     every other record member are kept in the record around the message
//     and written back with it.

// kindBeforeBoundary counts the records before the last compact boundary
// that were not read.
const kindBeforeBoundary = "before compact boundary"

type ccRecord struct {
	members []rawjson.Member
	typ     string
	raw     []byte
}

// parseClaudeCode reads the records (values, and their members as scanned).
func (o ReadOptions) parseClaudeCode(data []byte, values [][]byte, scans [][]rawjson.Member) (*agentctx.Document, error) {
	recs, lastBoundary, readSidechain := classifyRecords(values, scans)
	r := &ccReader{data: data, recs: recs, readSidechain: readSidechain, lastAssistant: -1,
		doc: &agentctx.Document{Format: FormatClaudeCode}, recMsg: make([]int, len(recs))}
	for k := range r.recMsg {
		r.recMsg[k] = -1
	}
	first := 0
	if lastBoundary >= 0 && !o.WholeHistory {
		first = lastBoundary
		r.skipBefore(lastBoundary)
	}
	for k := first; k < len(recs); k++ {
		if err := r.record(k); err != nil {
			return nil, err
		}
	}
	return r.document(), nil
}

// classifyRecords pairs each record's value with its members and type, and
// returns the records, the index of the last compact boundary (-1 when
// none), and whether the sidechain is to be read: a file of sidechain
// records only is a subagent's conversation.
func classifyRecords(values [][]byte, scans [][]rawjson.Member) (recs []ccRecord, lastBoundary int, readSidechain bool) {
	recs = make([]ccRecord, len(values))
	mainLine, sidechain := 0, 0
	lastBoundary = -1
	for k, v := range values {
		ms := scans[k]
		recs[k] = ccRecord{members: ms, typ: recordString(ms, "type"), raw: v}
		switch {
		case recs[k].typ == agentctx.RoleUser || recs[k].typ == agentctx.RoleAssistant:
			if rawjson.Kind(findRaw(ms, "isSidechain")) == 't' {
				sidechain++
			} else {
				mainLine++
			}
		case recs[k].typ == "system" && recordString(ms, "subtype") == "compact_boundary":
			lastBoundary = k
		}
	}
	return recs, lastBoundary, mainLine == 0 && sidechain > 0
}

// ccReader turns Claude Code records into a document's messages.
type ccReader struct {
	data          []byte
	recs          []ccRecord
	readSidechain bool
	doc           *agentctx.Document
	// recMsg[k] is the index in doc.Messages of the message record k is
	// part of; -1 for a record that is not a message's.
	recMsg        []int
	lastAssistant int // index in doc.Messages of the last assistant message; -1 for none
}

// skipBefore counts the records before the last compact boundary, at
// index last, as skipped, keeping the earlier boundaries, and starts the
// live part of the document there.
func (r *ccReader) skipBefore(last int) {
	r.doc.LiveFrom = lineAt(r.data, r.recs[last].raw)
	for k := 0; k < last; k++ {
		if r.recs[k].typ == "system" && recordString(r.recs[k].members, "subtype") == "compact_boundary" {
			r.doc.Boundaries = append(r.doc.Boundaries, boundaryOf(r.data, &r.recs[k], -1))
		}
		skip(r.doc, kindBeforeBoundary)
	}
}

// record reads record k: a boundary, a record that is skipped (and why),
// or a message added to the document or folded into the one before.
func (r *ccReader) record(k int) error {
	rec := &r.recs[k]
	typ := rec.typ
	mm := findMember(rec.members, "message")
	switch {
	case typ == "system" && recordString(rec.members, "subtype") == "compact_boundary":
		r.doc.Boundaries = append(r.doc.Boundaries, boundaryOf(r.data, rec, len(r.doc.Messages)))
		skip(r.doc, "system/compact_boundary")
		// A turn does not continue across a boundary.
		r.lastAssistant = -1
		return nil
	case typ != agentctx.RoleUser && typ != agentctx.RoleAssistant:
		kind := typ
		if kind == "" {
			kind = "no type"
		}
		if sub := recordString(rec.members, "subtype"); typ == "system" && sub != "" {
			kind += "/" + sub
		}
		skip(r.doc, kind)
		return nil
	case mm == nil || rawjson.Kind(mm.Value) != '{':
		skip(r.doc, typ+" without message")
		return nil
	case !r.readSidechain && rawjson.Kind(findRaw(rec.members, "isSidechain")) == 't':
		skip(r.doc, "sidechain")
		return nil
	}
	msg, err := agentctx.DecodeMessage(mm.Value)
	if err != nil {
		return agentctx.InputErrorAt(r.data, rawjson.Offset(r.data, mm.Value), fmt.Sprintf("record message: %v", err))
	}
	if msg.Role == "" {
		msg.Role = typ
	}
	if ts := findMember(rec.members, agentctx.FieldTimestamp); ts != nil {
		msg = msg.WithRecordField(agentctx.FieldTimestamp, ts.Value)
	}
	r.place(k, msg)
	return nil
}

// place adds record k's message to the document, or folds it into the
// assistant turn or the tool results it continues.
func (r *ccReader) place(k int, msg agentctx.Message) {
	doc, last := r.doc, r.lastAssistant
	n := len(doc.Messages)
	switch {
	case msg.Role == agentctx.RoleAssistant && last >= 0 && sameMessageID(&doc.Messages[last], &msg) &&
		allToolResultMessages(doc.Messages[last+1:]):
		// A later part of the same assistant turn (Claude Code writes one
		// record per content block, interleaved with the results of the
		// calls already made). Fold it into the turn and gather the
		// results that came between into one message after it.
		prev := &doc.Messages[last]
		*prev = prev.WithContent(agentctx.BlockList(concatBlocks(prev.Content.Blocks(), msg.Content.Blocks())...))
		if n > last+2 {
			doc.Messages[last+1] = mergeResults(doc.Messages[last+1:])
			doc.Merged += n - last - 2
			doc.Messages = doc.Messages[:last+2]
			for j := range k {
				if r.recMsg[j] > last+1 {
					r.recMsg[j] = last + 1
				}
			}
		}
		r.recMsg[k] = last
		doc.Merged++
	case msg.Role == agentctx.RoleUser && n >= 2 && isToolResultMessage(&msg) && isToolResultMessage(&doc.Messages[n-1]) &&
		last == n-2:
		doc.Messages[n-1] = mergeResults([]agentctx.Message{doc.Messages[n-1], msg})
		r.recMsg[k] = n - 1
		doc.Merged++
	default:
		doc.Messages = append(doc.Messages, msg)
		r.recMsg[k] = len(doc.Messages) - 1
		if msg.Role == agentctx.RoleAssistant {
			r.lastAssistant = len(doc.Messages) - 1
		}
	}
}

// document returns the document read, with the records kept for writing
// it back.
func (r *ccReader) document() *agentctx.Document {
	doc, recs := r.doc, r.recs
	cc := &ccFile{records: make([]ccLine, len(recs)), msgs: slices.Clone(doc.Messages), env: make([][]rawjson.Member, len(doc.Messages))}
	for k := range recs {
		cc.records[k] = ccLine{raw: recs[k].raw, msg: r.recMsg[k]}
		if i := r.recMsg[k]; i >= 0 && cc.env[i] == nil {
			cc.env[i] = recs[k].members
		}
	}
	// A boundary followed by no message points at none.
	for k := range doc.Boundaries {
		if doc.Boundaries[k].Message >= len(doc.Messages) {
			doc.Boundaries[k].Message = -1
		}
	}
	out := agentctx.NewDocument(FormatClaudeCode, doc.Messages, cc)
	out.Skipped, out.SkippedKinds, out.Merged, out.Boundaries, out.LiveFrom = doc.Skipped, doc.SkippedKinds, doc.Merged, doc.Boundaries, doc.LiveFrom
	return out
}

// boundaryOf describes a compact_boundary record; at is the index of the
// next message.
func boundaryOf(data []byte, r *ccRecord, at int) agentctx.CompactBoundary {
	b := agentctx.CompactBoundary{Line: lineAt(data, r.raw), Message: at}
	if md, err := rawjson.Members(findRaw(r.members, "compactMetadata")); err == nil {
		if t := findRaw(md, "trigger"); rawjson.Kind(t) == '"' {
			b.Trigger = rawjson.Unquote(t)
		}
		if n, err := strconv.Atoi(string(findRaw(md, "preTokens"))); err == nil {
			b.PreTokens = n
		}
	}
	return b
}

func sameMessageID(a, b *agentctx.Message) bool {
	ida, _ := a.Field("id")
	idb, _ := b.Field("id")
	return len(ida) > 0 && bytes.Equal(ida, idb) &&
		a.Content.Kind() == agentctx.ContentBlocks && b.Content.Kind() == agentctx.ContentBlocks
}

func isToolResultMessage(m *agentctx.Message) bool {
	if m.Role != agentctx.RoleUser || m.Content.Kind() != agentctx.ContentBlocks || len(m.Content.Blocks()) == 0 {
		return false
	}
	for k := range m.Content.Blocks() {
		if m.Content.Blocks()[k].Type != agentctx.BlockToolResult {
			return false
		}
	}
	return true
}

func allToolResultMessages(ms []agentctx.Message) bool {
	for k := range ms {
		if !isToolResultMessage(&ms[k]) {
			return false
		}
	}
	return true
}

// mergeResults folds tool-result messages into the first one.
func mergeResults(ms []agentctx.Message) agentctx.Message {
	blocks := []agentctx.Block{}
	for k := range ms {
		blocks = append(blocks, ms[k].Content.Blocks()...)
	}
	return ms[0].WithContent(agentctx.BlockList(blocks...))
}

func concatBlocks(a, b []agentctx.Block) []agentctx.Block {
	out := make([]agentctx.Block, 0, len(a)+len(b))
	return append(append(out, a...), b...)
}

// encodeRecord writes m in its record: the record's members env, some
// replaced (over), with m as its "message".
func encodeRecord(e *encoder, m *agentctx.Message, env []rawjson.Member, over map[string][]byte) {
	e.buf = append(e.buf, '{')
	first := true
	for k := range env {
		mb := &env[k]
		e.key(&first, mb, mb.Key)
		switch v, ok := over[mb.Key]; {
		case mb.Key == "message":
			e.inner(m)
		case ok:
			e.buf = append(e.buf, v...)
		default:
			e.raw(mb.Value)
		}
	}
	e.buf = append(e.buf, '}')
}

// sessionFields are the members a record written for a message that has
// none (a summary, a synthetic tool result) takes from its neighbour: the
// session's, not the record's own.
var sessionFields = []string{"isSidechain", "userType", "cwd", "sessionId", "version", "gitBranch", "agentId", "slug"}

// ccFile is what a Claude Code document keeps of its file to write it
// back whole: every record in file order (progress, snapshots, system
// records, records before a compact boundary, every part of a merged
// message), the messages as read, which the records point into, and for
// each message the members of its first record (its envelope: uuid,
// parentUuid, timestamp, toolUseResult, the session's fields), in which a
// changed message is written.
type ccFile struct {
	records []ccLine
	msgs    []agentctx.Message
	env     [][]rawjson.Member
}

// origins aligns msgs with the messages read: origin[j] is the index in
// cc.msgs of the message msgs[j] is, or was changed from (same role,
// record timestamp, message id and first tool id: what a copy made with
// the With methods keeps), and -1 for a message that was not read (a
// summary, a synthetic result). ordered is false when msgs does not keep
// the order of the messages read (reordered or repeated).
func (cc *ccFile) origins(msgs []agentctx.Message) (origin []int, ordered bool) {
	origin = make([]int, len(msgs))
	byKey := make(map[string][]int, len(cc.msgs))
	for i := range cc.msgs {
		k := recordKey(&cc.msgs[i])
		byKey[k] = append(byKey[k], i)
	}
	next := make(map[string]int, len(byKey)) // per key: the first candidate not yet passed
	ordered = true
	last := -1
	for j := range msgs {
		k := recordKey(&msgs[j])
		cands := byKey[k]
		c := next[k]
		for c < len(cands) && cands[c] <= last {
			c++
		}
		switch {
		case c < len(cands):
			origin[j], last, next[k] = cands[c], cands[c], c+1
		case len(cands) > 0:
			origin[j], ordered = cands[0], false
		default:
			origin[j] = -1
		}
	}
	return origin, ordered
}

// recordKey is what tells the messages of a Claude Code file apart: the
// role, the record's timestamp (set on the message when read), the
// message id of an assistant turn and the first tool call or result id.
func recordKey(m *agentctx.Message) string {
	ts, _ := m.Field(agentctx.FieldTimestamp)
	id, _ := m.Field("id")
	tool := ""
	if m.Content.Kind() == agentctx.ContentBlocks && len(m.Content.Blocks()) > 0 {
		b := &m.Content.Blocks()[0]
		tool = b.ID + "\x00" + b.ToolUseID
	}
	return m.Role + "\x00" + string(ts) + "\x00" + string(id) + "\x00" + tool
}

type ccLine struct {
	raw []byte
	msg int // index in msgs of the message the record is part of; -1 for none
}

// AppendDocument writes a Claude Code document back (agentctx.Writer): the
// file it was read from whole, with d's messages (see encodeRecords).
func (cc *ccFile) AppendDocument(dst []byte, d *agentctx.Document) ([]byte, error) {
	e := encoder{buf: dst}
	encodeRecords(&e, d.FileMessages(), cc)
	return e.buf, e.err
}

// encodeRecords writes msgs as Claude Code records. With the file the
// document was read from (cc), the file is written back whole: every
// record that is not a message's where it was, a message read unchanged
// as its records byte for byte, a changed one as its first record holding
// the new message (the other parts of a merged message are in it), a
// message no longer in msgs (compacted away) left out, and a message
// without a record (a summary, a synthetic result) as a new record before
// the next message's. Without the file, or when msgs does not keep the
// order of the messages read, each message is one record. Either way the
// records read back as one conversation: a parentUuid naming a record no
// longer written points at the record written before it, and a new
// record takes the session's fields of its nearest neighbour (so a
// subagent's file stays all sidechain), a uuid derived from its place, the
// record before it as parent, and the neighbour's timestamp.
func encodeRecords(e *encoder, msgs []agentctx.Message, cc *ccFile) {
	var (
		items []recordItem
		ok    bool
		env   = make([][]rawjson.Member, len(msgs)) // per output message: its record's members; nil for none
	)
	if cc != nil {
		origin, ordered := cc.origins(msgs)
		for j, i := range origin {
			if i >= 0 {
				env[j] = cc.env[i]
			}
		}
		if ordered {
			items, ok = planRecords(msgs, cc, origin), true
		}
	}
	envOf := func(j int) []rawjson.Member { return env[j] }
	if !ok {
		items = items[:0]
		for k := range msgs {
			items = append(items, recordItem{out: k, rec: -1, changed: true})
		}
	}
	// The members of each record written (nil for a new one), and the
	// uuids written, to repair parent links to records left out.
	members := make([][]rawjson.Member, len(items))
	written := map[string]bool{}
	for k, it := range items {
		switch {
		case it.rec >= 0 && !it.changed:
			members[k] = lineMembers(cc.records[it.rec].raw)
		case envOf(it.out) != nil:
			members[k] = envOf(it.out)
		}
		if id := recordString(members[k], "uuid"); id != "" {
			written[id] = true
		}
	}
	var prev []byte // the uuid token of the record written last
	for k, it := range items {
		ms := members[k]
		if ms == nil && (it.rec < 0 || it.changed) && envOf(it.out) == nil {
			prev = encodeNewRecord(e, &msgs[it.out], msgs, envOf, it.out, prev)
			e.buf = append(e.buf, '\n')
			continue
		}
		over := map[string][]byte{}
		if p := recordString(ms, "parentUuid"); p != "" && !written[p] {
			over["parentUuid"] = orNull(prev)
		}
		if it.rec >= 0 && !it.changed {
			if len(over) == 0 || ms == nil {
				e.raw(cc.records[it.rec].raw)
			} else {
				encodeMembers(e, ms, over)
			}
		} else {
			encodeRecord(e, &msgs[it.out], envOf(it.out), over)
		}
		if id := findRaw(ms, "uuid"); rawjson.Kind(id) == '"' {
			prev = id
		}
		e.buf = append(e.buf, '\n')
	}
}

// recordItem is one record to write: the file's record rec as it was
// (changed false), or output message out (as its first record's envelope
// when it has one, else as a new record).
type recordItem struct {
	out, rec int
	changed  bool
}

// planRecords lays out the records that write msgs back into the file cc
// was read from; origin aligns msgs with the messages read, in order (see
// ccFile.origins).
func planRecords(msgs []agentctx.Message, cc *ccFile, origin []int) (items []recordItem) {
	outOf := make([]int, len(cc.msgs)) // output index of each message read; -1 when gone
	for i := range outOf {
		outOf[i] = -1
	}
	for j, i := range origin {
		if i >= 0 {
			outOf[i] = j
		}
	}
	firstRec := make([]int, len(cc.msgs))
	for i := range firstRec {
		firstRec[i] = -1
	}
	for r, l := range cc.records {
		if l.msg >= 0 && firstRec[l.msg] < 0 {
			firstRec[l.msg] = r
		}
	}
	// New messages go before the first record of the next message read.
	before := map[int][]int{} // record → new output messages written before it
	var atEnd []int
	next := -1 // the record of the next message read, scanning backwards
	for j := len(msgs) - 1; j >= 0; j-- {
		if i := origin[j]; i >= 0 {
			next = firstRec[i]
			continue
		}
		if next < 0 {
			atEnd = append(atEnd, j)
		} else {
			before[next] = append(before[next], j)
		}
	}
	unchanged := make([]bool, len(cc.msgs))
	for i, j := range outOf {
		if j >= 0 {
			unchanged[i] = sameEncoding(&msgs[j], &cc.msgs[i])
		}
	}
	for r, l := range cc.records {
		for k := len(before[r]) - 1; k >= 0; k-- {
			items = append(items, recordItem{out: before[r][k], rec: -1, changed: true})
		}
		switch {
		case l.msg < 0:
			items = append(items, recordItem{out: -1, rec: r})
		case outOf[l.msg] < 0:
			// compacted away: left out
		case unchanged[l.msg]:
			items = append(items, recordItem{out: outOf[l.msg], rec: r})
		case r == firstRec[l.msg]:
			items = append(items, recordItem{out: outOf[l.msg], rec: r, changed: true})
		}
	}
	for k := len(atEnd) - 1; k >= 0; k-- {
		items = append(items, recordItem{out: atEnd[k], rec: -1, changed: true})
	}
	return items
}

// sameEncoding reports whether two messages encode alike.
func sameEncoding(a, b *agentctx.Message) bool {
	ea, erra := a.AppendJSON(nil)
	eb, errb := b.AppendJSON(nil)
	return erra == nil && errb == nil && bytes.Equal(ea, eb)
}

// lineMembers scans a record's members; nil when it cannot.
func lineMembers(raw []byte) []rawjson.Member {
	ms, err := rawjson.Members(raw)
	if err != nil {
		return nil
	}
	return ms
}

// encodeMembers writes a record from its members, some replaced.
func encodeMembers(e *encoder, ms []rawjson.Member, over map[string][]byte) {
	e.buf = append(e.buf, '{')
	first := true
	for k := range ms {
		mb := &ms[k]
		e.key(&first, mb, mb.Key)
		if v, ok := over[mb.Key]; ok {
			e.buf = append(e.buf, v...)
		} else {
			e.raw(mb.Value)
		}
	}
	e.buf = append(e.buf, '}')
}

func orNull(raw []byte) []byte {
	if raw == nil {
		return []byte("null")
	}
	return raw
}

// encodeNewRecord writes a record for msgs[k], which has none, and returns
// its uuid token.
func encodeNewRecord(e *encoder, m *agentctx.Message, msgs []agentctx.Message, envOf func(int) []rawjson.Member, k int, prev []byte) []byte {
	var near []rawjson.Member
	for d := 1; near == nil && (k-d >= 0 || k+d < len(msgs)); d++ {
		if k-d >= 0 && envOf(k-d) != nil {
			near = envOf(k - d)
		} else if k+d < len(msgs) && envOf(k+d) != nil {
			near = envOf(k + d)
		}
	}
	h := sha256.New()
	h.Write(prev)
	fmt.Fprintf(h, "\x00agentctx record %d %s", k, m.Role)
	sum := h.Sum(nil)
	id := rawjson.AppendString(nil, fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16]))

	e.buf = append(e.buf, '{')
	first := true
	e.key(&first, nil, "parentUuid")
	e.buf = append(e.buf, orNull(prev)...)
	if near != nil {
		for _, f := range sessionFields {
			if mb := findMember(near, f); mb != nil {
				e.key(&first, mb, f)
				e.raw(mb.Value)
			}
		}
	}
	e.key(&first, nil, "type")
	e.str(m.Role)
	e.key(&first, nil, "message")
	e.message(m)
	e.key(&first, nil, "uuid")
	e.buf = append(e.buf, id...)
	ts, _ := m.Field(agentctx.FieldTimestamp)
	if ts == nil && near != nil {
		ts = findRaw(near, agentctx.FieldTimestamp)
	}
	if ts != nil {
		e.key(&first, nil, agentctx.FieldTimestamp)
		e.raw(ts)
	}
	e.buf = append(e.buf, '}')
	return id
}
