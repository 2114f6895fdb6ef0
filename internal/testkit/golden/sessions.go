package golden

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/memsession"
)

// Sessions is a session.Store that keeps what was last saved under each
// namespace and id, for transcripts of the session state as stored.
type Sessions struct {
	session.Store
	mu   sync.Mutex
	last map[string][]byte
}

// NewSessions returns a Sessions over an in-memory store.
func NewSessions() *Sessions {
	return &Sessions{Store: memsession.New(), last: map[string][]byte{}}
}

// Save implements session.Store.
func (r *Sessions) Save(ctx context.Context, ns, id string, data []byte, version int64) (int64, error) {
	v, err := r.Store.Save(ctx, ns, id, data, version)
	if err == nil {
		r.mu.Lock()
		r.last[ns+"/"+id] = append([]byte(nil), data...)
		r.mu.Unlock()
	}
	return v, err
}

// Last returns the state last saved under namespace/id, nil when none.
func (r *Sessions) Last(key string) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last[key]
}

// Dump renders every state last saved, by namespace/id, with Body.
func (r *Sessions) Dump() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]string, 0, len(r.last))
	for k := range r.last {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var s strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&s, "--- session state %s ", k)
		s.WriteString(Body(r.last[k]))
	}
	return s.String()
}

// Head is the first line of Body(b): size and SHA-256 alone.
func Head(b []byte) string {
	s := Body(b)
	return s[:strings.IndexByte(s, '\n')+1]
}
