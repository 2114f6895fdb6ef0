//go:build unix

package dirstore

import (
	"errors"
	"os"
	"syscall"
)

// lockFile opens path and takes an flock on it, exclusive for writers
// (creating the file) and shared for readers. Closing the file releases
// the lock.
func lockFile(path string, exclusive bool) (*os.File, error) {
	flag, how := os.O_RDONLY, syscall.LOCK_SH
	if exclusive {
		flag, how = os.O_RDWR|os.O_CREATE, syscall.LOCK_EX
	}
	f, err := os.OpenFile(path, flag, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func unlockFile(f *os.File) {
	if f != nil {
		f.Close()
	}
}
