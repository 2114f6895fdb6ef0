package pgtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
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

// copyTree copies the directories and regular files under src to dst
// (which must not exist) with their permissions, owned by cred (nil: the
// current user).
func copyTree(src, dst string, cred *credential) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(to, info.Mode().Perm()); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			if err := copyFile(path, to, info.Mode().Perm()); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: not a directory or a regular file", path)
		}
		return chown(to, cred)
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
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
