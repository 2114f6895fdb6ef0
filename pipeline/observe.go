package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentctx/agentctx/pricing"
	"github.com/agentctx/agentctx/session"
)

// observeState records a usage report in the session state (state.observe).
func (p *Pipeline) observeState(ctx context.Context, u pricing.Usage, counted int) error {
	return p.recordState(ctx, func(st *state) { st.observe(u, counted, p.opts.EstimateRatio) })
}

// recordState runs fn, which changes the state's head alone (not its
// Results), on the session state and saves it, with one store call in the
// usual case: the state this Pipeline saved or
// loaded last (its stateMemo, with its version) is taken as the stored one,
// fn run on a copy of its head (the tool results, most of a
// long session's state, are neither copied, decoded nor encoded again: their
// JSON is reused), and the result saved with compare-and-swap on that
// version. The bytes saved are those a load–observe–save cycle would save.
//
// When the memo does not know the version, or another writer saved since
// (the save conflicts), it falls back to that cycle (updateState). A
// session deleted and created again up to the very version remembered
// would be taken for the remembered one; retention deletes only sessions
// idle for far longer than the time between a request and its answer.
func (p *Pipeline) recordState(ctx context.Context, fn func(st *state)) error {
	if st, v, results := p.memoHead(); st != nil {
		fn(st)
		data, results, err := encodeState(st, results)
		if err != nil {
			return err
		}
		sctx, cancel := p.storeCtx(ctx)
		nv, err := p.sessions.Save(sctx, p.namespace, p.sessionID, data, v)
		err = storeErr(ctx, sctx, err)
		cancel()
		if err == nil {
			p.rememberStateOwned(data, results, st, nv)
			return nil
		}
		if !errors.Is(err, session.ErrConflict) {
			return fmt.Errorf("pipeline: save session %q: %w", p.sessionID, err)
		}
	}
	_, err := p.updateState(ctx, true, func(st *state) error { // the results are left alone
		fn(st)
		return nil
	})
	return err
}

// memoHead returns a copy of the remembered state's head (its Results are
// shared with the memo, and must not be modified), its version and the
// JSON of its Results (nil when not known: they are encoded then); nil
// when the memo has no state with a known version.
func (p *Pipeline) memoHead() (*state, int64, *resultsJSON) {
	m := &p.stateMemo
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.st == nil || m.v <= 0 {
		return nil, 0, nil
	}
	c := *m.st
	return &c, m.v, m.results
}
