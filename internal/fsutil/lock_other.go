//go:build !unix

package fsutil

// Lock is a no-op where flock is not available: callers then serialize
// within one process only.
func Lock(path string) (unlock func(), err error) { return func() {}, nil }
