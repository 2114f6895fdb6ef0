package pipeline

import (
	"context"
	"time"
)

// CacheRefreshed records that the provider's prompt cache of the
// session's last request was refreshed at at by a request the client did
// not send: a keep-warm request, which repeats the last request to read
// its cached prefix before the cache's lifetime ends (the proxy's
// Options.KeepWarm). The next request then finds the cache warm if it
// comes within the cache's lifetime from at, and is weighed so (no cold
// sweep of stale results, which would rewrite a cache paid to be kept).
// A time before the last request's is ignored; a Stateless Pipeline does
// nothing.
func (p *Pipeline) CacheRefreshed(ctx context.Context, at time.Time) error {
	if p.opts.Stateless {
		return nil
	}
	return p.recordState(ctx, func(st *state) {
		if at.After(st.cacheUsed()) {
			st.CacheAt = at.UTC()
		}
	})
}

// cacheUsed returns when the provider's cache of the session's last
// request was last used: the later of that request and a keep-warm
// request after it.
func (st *state) cacheUsed() time.Time {
	if st.CacheAt.After(st.LastAt) {
		return st.CacheAt
	}
	return st.LastAt
}
