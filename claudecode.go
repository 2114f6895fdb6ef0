package agentctx

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/agentctx/agentctx/internal/rawjson"
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
	members []member
	typ     string
	raw     []byte
}

// parseClaudeCode reads the records (values, and their members as scanned).
func (o ReadOptions) parseClaudeCode(data []byte, values [][]byte, scans [][]rawjson.Member) (*Document, error) {
	doc := &Document{Format: FormatClaudeCode}
	recs := make([]ccRecord, len(values))
	mainLine, sidechain := 0, 0
	lastBoundary := -1
	for k, v := range values {
		ms := opaqueMembers(scans[k])
		recs[k] = ccRecord{members: ms, typ: recordString(ms, "type"), raw: v}
		switch {
		case recs[k].typ == RoleUser || recs[k].typ == RoleAssistant:
			if rawjson.Kind(memberRaw(ms, "isSidechain")) == 't' {
				sidechain++
			} else {
				mainLine++
			}
		case recs[k].typ == "system" && recordString(ms, "subtype") == "compact_boundary":
			lastBoundary = k
		}
	}
	// A file of sidechain records only is a subagent's conversation.
	readSidechain := mainLine == 0 && sidechain > 0

	first := 0
	if lastBoundary >= 0 && !o.WholeHistory {
		first = lastBoundary
		doc.liveFrom = lineAt(data, recs[lastBoundary].raw)
		for k := 0; k < lastBoundary; k++ {
			if recs[k].typ == "system" && recordString(recs[k].members, "subtype") == "compact_boundary" {
				doc.Boundaries = append(doc.Boundaries, boundaryOf(data, &recs[k], -1))
			}
			doc.skip(kindBeforeBoundary)
		}
	}

	lastAssistant := -1 // index in doc.Messages of the last assistant message
	for k := first; k < len(recs); k++ {
		r := &recs[k]
		rec, typ := r.members, r.typ
		mm := findMember(rec, "message")
		switch {
		case typ == "system" && recordString(rec, "subtype") == "compact_boundary":
			at := len(doc.Messages)
			doc.Boundaries = append(doc.Boundaries, boundaryOf(data, r, at))
			doc.skip("system/compact_boundary")
			// A turn does not continue across a boundary.
			lastAssistant = -1
			continue
		case typ != RoleUser && typ != RoleAssistant:
			kind := typ
			if kind == "" {
				kind = "no type"
			}
			if sub := recordString(rec, "subtype"); typ == "system" && sub != "" {
				kind += "/" + sub
			}
			doc.skip(kind)
			continue
		case mm == nil || rawjson.Kind(mm.raw) != '{':
			doc.skip(typ + " without message")
			continue
		case !readSidechain && rawjson.Kind(memberRaw(rec, "isSidechain")) == 't':
			doc.skip("sidechain")
			continue
		}
		msg, err := DecodeMessage(mm.raw)
		if err != nil {
			return nil, inputErrorAt(data, offsetIn(data, mm.raw), fmt.Sprintf("record message: %v", err))
		}
		if msg.Role == "" {
			msg.Role = typ
		}
		if ts := findMember(rec, FieldTimestamp); ts != nil && findMember(msg.members, FieldTimestamp) == nil {
			msg.members = append(msg.members, member{key: FieldTimestamp, raw: ts.raw, flags: injected})
		}
		msg.env = &envelope{members: rec}

		n := len(doc.Messages)
		switch {
		case msg.Role == RoleAssistant && lastAssistant >= 0 && sameMessageID(&doc.Messages[lastAssistant], &msg) &&
			allToolResultMessages(doc.Messages[lastAssistant+1:]):
			// A later part of the same assistant turn (Claude Code writes one
			// record per content block, interleaved with the results of the
			// calls already made). Fold it into the turn and gather the
			// results that came between into one message after it.
			prev := &doc.Messages[lastAssistant]
			*prev = prev.WithContent(BlockList(concatBlocks(prev.Content.blocks, msg.Content.blocks)...))
			if n > lastAssistant+2 {
				doc.Messages[lastAssistant+1] = mergeResults(doc.Messages[lastAssistant+1:])
				doc.Merged += n - lastAssistant - 2
				doc.Messages = doc.Messages[:lastAssistant+2]
			}
			doc.Merged++
		case msg.Role == RoleUser && n >= 2 && isToolResultMessage(&msg) && isToolResultMessage(&doc.Messages[n-1]) &&
			lastAssistant == n-2:
			doc.Messages[n-1] = mergeResults([]Message{doc.Messages[n-1], msg})
			doc.Merged++
		default:
			doc.Messages = append(doc.Messages, msg)
			if msg.Role == RoleAssistant {
				lastAssistant = len(doc.Messages) - 1
			}
		}
	}
	// A boundary followed by no message points at none.
	for k := range doc.Boundaries {
		if doc.Boundaries[k].Message >= len(doc.Messages) {
			doc.Boundaries[k].Message = -1
		}
	}
	return doc, nil
}

// boundaryOf describes a compact_boundary record; at is the index of the
// next message.
func boundaryOf(data []byte, r *ccRecord, at int) CompactBoundary {
	b := CompactBoundary{Line: lineAt(data, r.raw), Message: at}
	if md, err := rawjson.Members(memberRaw(r.members, "compactMetadata")); err == nil {
		if t := findRaw(md, "trigger"); rawjson.Kind(t) == '"' {
			b.Trigger = rawjson.Unquote(t)
		}
		if n, err := strconv.Atoi(string(findRaw(md, "preTokens"))); err == nil {
			b.PreTokens = n
		}
	}
	return b
}

// lineAt returns the 1-based line of sub in data.
func lineAt(data, sub []byte) int {
	return bytes.Count(data[:offsetIn(data, sub)], []byte{'\n'}) + 1
}

func memberRaw(ms []member, key string) []byte {
	if m := findMember(ms, key); m != nil {
		return m.raw
	}
	return nil
}

func recordString(ms []member, key string) string {
	if raw := memberRaw(ms, key); rawjson.Kind(raw) == '"' {
		return rawjson.Unquote(raw)
	}
	return ""
}

func sameMessageID(a, b *Message) bool {
	ida, _ := a.Field("id")
	idb, _ := b.Field("id")
	return len(ida) > 0 && bytes.Equal(ida, idb) &&
		a.Content.kind == ContentBlocks && b.Content.kind == ContentBlocks
}

func isToolResultMessage(m *Message) bool {
	if m.Role != RoleUser || m.Content.kind != ContentBlocks || len(m.Content.blocks) == 0 {
		return false
	}
	for k := range m.Content.blocks {
		if m.Content.blocks[k].Type != BlockToolResult {
			return false
		}
	}
	return true
}

func allToolResultMessages(ms []Message) bool {
	for k := range ms {
		if !isToolResultMessage(&ms[k]) {
			return false
		}
	}
	return true
}

// mergeResults folds tool-result messages into the first one.
func mergeResults(ms []Message) Message {
	blocks := []Block{}
	for k := range ms {
		blocks = append(blocks, ms[k].Content.blocks...)
	}
	return ms[0].WithContent(BlockList(blocks...))
}

func concatBlocks(a, b []Block) []Block {
	out := make([]Block, 0, len(a)+len(b))
	return append(append(out, a...), b...)
}

func encodeRecord(e *encoder, m *Message) {
	e.buf = append(e.buf, '{')
	first := true
	if m.env == nil {
		e.key(&first, nil, "type")
		e.str(nil, m.Role)
		e.key(&first, nil, "message")
		m.encode(e)
		e.buf = append(e.buf, '}')
		return
	}
	for k := range m.env.members {
		mb := &m.env.members[k]
		e.key(&first, mb, mb.key)
		if mb.key == "message" {
			e.skipInjected = true
			m.encode(e)
			e.skipInjected = false
		} else {
			e.raw(mb.raw)
		}
	}
	e.buf = append(e.buf, '}')
}
