package pgtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/agentctx/agentctx/internal/base/fsutil"
)

// cachePrefix names the directories, beside the servers' own, that keep a
// pristine cluster made by initdb: a Start copies it (a tenth of a second)
// instead of running initdb (a second of CPU, paid by every test binary
// that starts a server, seven in a `go test ./...`). One is kept per
// initdb (its path, size and time), arguments and server user; removeStale
// leaves them alone.
const cachePrefix = "agentctx-pgtest-initdb-"

// initdbArgs are initdb's arguments but the data directory.
var initdbArgs = []string{"-U", "agentctx", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"}

// initData fills the new cluster directory data (not existing yet) with a
// copy of the cached pristine cluster of base, running initdb first, under
// a lock file every process takes, when there is none.
func initData(ctx context.Context, bin, base, data string, cred *credential) error {
	initdb := filepath.Join(bin, "initdb")
	fi, err := os.Stat(initdb)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	key := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d\x00%q\x00%v", initdb, fi.Size(), fi.ModTime().UnixNano(), initdbArgs, cred))
	cache := filepath.Join(base, cachePrefix+hex.EncodeToString(key[:8]))
	unlock, err := fsutil.LockContext(ctx, cache+".lock")
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer unlock()
	pristine := filepath.Join(cache, "data")
	done := filepath.Join(cache, "complete")
	if _, err := os.Stat(done); err != nil {
		// None, or one a killed process left half made.
		if err := os.RemoveAll(cache); err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
		if err := os.Mkdir(cache, 0o755); err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
		if err := chown(cache, cred); err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, initdb, append([]string{"-D", pristine}, initdbArgs...)...)
		cmd.Dir = cache
		setCred(cmd, cred)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
		}
		if err := os.WriteFile(done, nil, 0o644); err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
	}
	if err := copyTree(pristine, data, cred); err != nil {
		return fmt.Errorf("pgtest: copying the pristine cluster: %w", err)
	}
	return nil
}

// copyTree copies the cluster in src to dst (which must not exist),
// owned by cred (nil: the current user), with dst 0700 as postgres wants
// its data directory.
func copyTree(src, dst string, cred *credential) error {
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		return err
	}
	if err := os.Chmod(dst, 0o700); err != nil {
		return err
	}
	if cred == nil {
		return nil
	}
	return filepath.WalkDir(dst, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return chown(path, cred)
	})
}

// chown hands path to cred; nil leaves it to the current user.
func chown(path string, cred *credential) error {
	if cred == nil {
		return nil
	}
	if err := os.Lchown(path, int(cred.uid), int(cred.gid)); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	return nil
}
