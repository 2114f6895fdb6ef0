package pipeline

// PathedMemoLen returns the number of messages AddPaths' memo holds, left
// alone and changed (for the external tests).
func (p *Pipeline) PathedMemoLen() (same, changed int) {
	p.pathed.mu.Lock()
	defer p.pathed.mu.Unlock()
	return len(p.pathed.same), len(p.pathed.changed)
}
