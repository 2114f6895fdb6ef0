//go:build unix

package fsutil

import (
	"errors"
	"os"
	"syscall"
)

// Lock opens (creating it) the file at path and takes an exclusive flock on
// it, waiting for other holders, in this process or another. The returned
// function releases the lock.
func Lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
