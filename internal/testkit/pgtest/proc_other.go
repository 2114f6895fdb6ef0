//go:build !linux

package pgtest

import (
	"os/exec"
	"syscall"
)

func setCred(cmd *exec.Cmd, c *credential) {
	if c != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: c.uid, Gid: c.gid}}
	}
}

func killWithParent(*exec.Cmd) {}

// MemoryDir returns "": no memory-backed directory is known on this
// system.
func MemoryDir() string { return "" }

func removeStale(string) {}
