package pgtest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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

// MemoryDir returns a memory-backed directory to hold test servers
// (/dev/shm with at least 2 GiB free), or "" when there is none.
func MemoryDir() string {
	const dir, need = "/dev/shm", 2 << 30
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || st.Bavail*uint64(st.Bsize) < need {
		return ""
	}
	if syscall.Access(dir, 2 /* W_OK */) != nil {
		return ""
	}
	return dir
}

// removeStale removes the servers' directories in base whose test process
// is gone (killed before Close), so that they do not hold memory.
func removeStale(base string) {
	dirs, _ := filepath.Glob(filepath.Join(base, dirPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue // being created, or not ours to judge
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(d)
		}
	}
}
