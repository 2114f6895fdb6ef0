package cli

import (
	"path/filepath"
	"time"

	"github.com/agentctx/agentctx/internal/base/fsutil"
)

// removeStaleTemp removes the temp files a killed agentctx left in dir and
// in dir/<session> (for each session given), before a command writes
// there. It is best effort: a directory that cannot be read is reported by
// the write that follows.
func removeStaleTemp(dir string, sessions ...string) {
	if dir == "" {
		return
	}
	now := time.Now()
	fsutil.RemoveStaleTemp(dir, 0, now)
	for _, s := range sessions {
		if name, err := fsutil.SafeName(s); err == nil {
			fsutil.RemoveStaleTemp(filepath.Join(dir, name), 0, now)
		}
	}
}
