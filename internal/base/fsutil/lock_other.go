//go:build !unix

package fsutil

import "context"

// Lock is a no-op where flock is not available: callers then serialize
// within one process only.
func Lock(path string) (unlock func(), err error) { return func() {}, nil }

// LockContext is Lock; ctx is not needed where nothing waits.
func LockContext(ctx context.Context, path string) (unlock func(), err error) { return Lock(path) }
