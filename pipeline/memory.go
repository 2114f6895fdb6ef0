package pipeline

import (
	"unsafe"

	"github.com/agentctx/agentctx"
)

// outsideBytes estimates the memory a decoded message holds outside its
// struct: its content blocks and tool calls (their strings are counted
// with its encoding).
func outsideBytes(m agentctx.Message) int64 {
	return int64(len(m.Content.Blocks()))*int64(unsafe.Sizeof(agentctx.Block{})) +
		int64(len(m.ToolCalls))*int64(unsafe.Sizeof(agentctx.ToolCall{}))
}

// MemoryBytes estimates the memory the Pipeline keeps from one call to
// the next: its memos (token counts, result keys and classes, content
// digests, artifact paths, the messages AddPaths changed, the prefix
// digest, summaries) and the session state it last read or wrote (its
// decoded form and its JSON). It does not count its stores, nor what a
// call holds while it runs. A server that keeps many Pipelines bounds
// their memory by it (proxy.PipelineOptions.MaxBytes).
func (p *Pipeline) MemoryBytes() int64 {
	n := int64(unsafe.Sizeof(*p))
	n += p.stateMemo.bytes()
	n += p.counted.bytes()
	n += p.digests.bytes()
	n += p.paths.bytes()
	n += p.pathed.bytes()
	n += p.prefix.bytes()
	p.mu.Lock()
	for k, v := range p.summaries {
		n += mapEntryBytes(2*stringHeader) + int64(len(k)+len(v))
	}
	p.mu.Unlock()
	return n
}

// stringHeader is the size of a string header.
const stringHeader = int64(unsafe.Sizeof(""))

// mapEntryBytes estimates the memory a map entry of kv bytes of key and
// value takes: its slot, its control byte, and the room a map keeps
// (tables between 7/16 and 7/8 full: about two thirds on average).
func mapEntryBytes(kv int64) int64 { return (kv + 1) * 3 / 2 }

func (m *stateMemo) bytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := int64(cap(m.data))
	if r := m.results; r != nil {
		// r.data lies within m.data; its keys are the state's map keys.
		n += int64(cap(r.keys))*stringHeader + int64(cap(r.spans))*int64(unsafe.Sizeof(span{}))
	}
	if m.st != nil {
		n += m.st.bytes()
	}
	return n
}

// bytes estimates the memory st holds: its struct, its results (map
// entries, decisions and their strings), its compaction and thinking
// memory.
func (st *state) bytes() int64 {
	n := int64(unsafe.Sizeof(*st))
	entry := mapEntryBytes(stringHeader + int64(unsafe.Sizeof(&resultState{})))
	for k, r := range st.Results {
		n += entry + int64(len(k))
		if r != nil {
			n += int64(unsafe.Sizeof(*r)) + int64(len(r.Artifact)+len(r.Content))
		}
	}
	if c := st.Compaction; c != nil {
		n += int64(unsafe.Sizeof(*c)) + int64(len(c.Digest)+len(c.Summary)+len(c.Archive))
		for _, mk := range c.Marks {
			n += stringHeader + int64(len(mk))
		}
	}
	if u := st.Usage; u != nil {
		n += int64(unsafe.Sizeof(*u))
	}
	if t := st.Thinking; t != nil {
		known, sent := t.Len()
		e := int64(unsafe.Sizeof(ThinkingEntry{})) + mapEntryBytes(16)
		n += int64(unsafe.Sizeof(*t)) + int64(known+sent)*e
	}
	return n
}

func (m *countMemo) bytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := int64(len(m.counts)) * mapEntryBytes(int64(unsafe.Sizeof(agentctx.Hash{}))+8)
	for _, v := range m.keys {
		n += mapEntryBytes(int64(unsafe.Sizeof(resultAt{}))+stringHeader) + int64(len(v))
	}
	for k := range m.classes {
		n += mapEntryBytes(stringHeader+8) + int64(len(k))
	}
	return n
}

func (m *digestMemo) bytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	entry := mapEntryBytes(int64(unsafe.Sizeof(fingerprint{}))+stringHeader) + 24 // a digest: 24 hex characters
	return int64(len(m.cur)+len(m.prev)) * entry
}

func (m *pathMemo) bytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for k, v := range m.paths {
		n += mapEntryBytes(2*stringHeader) + int64(len(k)+len(v))
	}
	return n
}

// bytes counts the hashes of the messages AddPaths left as they were,
// and for each it changed, its struct, its blocks, its new encoding and
// the strings it keeps (about as many bytes as its encoding).
func (m *pathedMemo) bytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	hash := int64(unsafe.Sizeof(agentctx.Hash{}))
	n := int64(len(m.same))*mapEntryBytes(hash) + int64(len(m.changed))*mapEntryBytes(hash+8)
	for _, e := range m.changed {
		n += int64(unsafe.Sizeof(*e)) + outsideBytes(e.msg) + 2*int64(len(e.facts.Encoding))
	}
	return n
}

func (m *prefixMemo) bytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return int64(cap(m.hashes)) * int64(unsafe.Sizeof(agentctx.Hash{}))
}
