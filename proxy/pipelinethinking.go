package proxy

import (
	"context"

	"github.com/agentctx/agentctx/pipeline"
)

// PipelineEngine keeps the memory of signed thinking in the session state
// (thinkingmem.go): every replica over the same session store knows the
// blocks the others relayed.
var _ thinkingKeeper = (*PipelineEngine)(nil)

func (e *PipelineEngine) keepsThinking() bool { return !e.opts.Pipeline.Stateless }

func (e *PipelineEngine) thinkingMemory(key string) *pipeline.ThinkingMemory {
	e.mu.Lock()
	s := e.sessions[key]
	e.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.p.Thinking()
}

// record is Observe with the thinking an answer taught, in one write.
func (e *PipelineEngine) record(ctx context.Context, key string, o pipeline.Observation) {
	e.mu.Lock()
	s := e.sessions[key]
	if s != nil && o.Usage != nil {
		s.usage = *o.Usage
	}
	e.mu.Unlock()
	if s == nil {
		return
	}
	if err := s.p.Record(ctx, o); err != nil {
		e.log.Warn("proxy: cannot record usage and thinking", "session", key, "err", err)
	}
}
