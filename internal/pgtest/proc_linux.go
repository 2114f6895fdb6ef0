package pgtest

import (
	"os/exec"
	"syscall"
)

func setCred(cmd *exec.Cmd, c *credential) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if c != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: c.uid, Gid: c.gid, NoSetGroups: true}
	}
}

// killWithParent makes the kernel kill the server when the test process
// dies, so that an interrupted test leaves no server behind.
func killWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
