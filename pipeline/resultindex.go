package pipeline

// resultIndex is what the store step found of each tool result of the
// view, by position ([2]int{message, block}; block -1 for a role "tool"
// message): its resultKey and its state (the session state's entry:
// entries are changed in place, never replaced, until the call ends).
//
// Results are added in history order, so the entries of a message are
// together: a request of 50,000 results keeps 32 bytes for each and 4 for
// each message, where two maps by position took 4.2 MB (issue 24, item 7).
type resultIndex struct {
	first   []int32 // per message up to the last with a result: where its entries start
	entries []resultEntry
}

type resultEntry struct {
	block int32
	key   string
	rs    *resultState
}

// makeResultIndex returns an index with room for results among msgs
// messages.
func makeResultIndex(msgs, results int) resultIndex {
	return resultIndex{first: make([]int32, 0, msgs+1), entries: make([]resultEntry, 0, results)}
}

// add adds the result at pos, after every result added before it.
func (x *resultIndex) add(pos [2]int, key string, rs *resultState) {
	for len(x.first) <= pos[0] {
		x.first = append(x.first, int32(len(x.entries)))
	}
	x.entries = append(x.entries, resultEntry{int32(pos[1]), key, rs})
}

// find returns the entry of the result at pos, or nil.
func (x *resultIndex) find(pos [2]int) *resultEntry {
	m := pos[0]
	if m < 0 || m >= len(x.first) {
		return nil
	}
	end := int32(len(x.entries))
	if m+1 < len(x.first) {
		end = x.first[m+1]
	}
	for i := x.first[m]; i < end; i++ {
		if x.entries[i].block == int32(pos[1]) {
			return &x.entries[i]
		}
	}
	return nil
}

// key returns the resultKey of the result at pos, "" when not indexed.
func (x *resultIndex) key(pos [2]int) string {
	if e := x.find(pos); e != nil {
		return e.key
	}
	return ""
}

// state returns the state of the result at pos, nil when not indexed.
func (x *resultIndex) state(pos [2]int) *resultState {
	if e := x.find(pos); e != nil {
		return e.rs
	}
	return nil
}

// all yields every result indexed, in history order.
func (x *resultIndex) all(yield func(pos [2]int, e *resultEntry) bool) {
	m := 0
	for i := range x.entries {
		for m+1 < len(x.first) && int(x.first[m+1]) <= i {
			m++
		}
		if !yield([2]int{m, int(x.entries[i].block)}, &x.entries[i]) {
			return
		}
	}
}
