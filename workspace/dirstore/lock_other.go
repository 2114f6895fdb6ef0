//go:build !unix

package dirstore

import "os"

// lockFile is a no-op where flock is not available: writers are then
// serialized within one process only.
func lockFile(string, bool) (*os.File, error) { return nil, nil }

func unlockFile(*os.File) {}
