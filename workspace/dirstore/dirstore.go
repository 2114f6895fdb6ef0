// Package dirstore is the embedded default workspace.Store: artifacts kept
// as plain files in a directory, readable with ls and cat.
//
// Layout, one directory per namespace (names made safe and reversible by
// the same encoding as the offload files, so an id like "../x" or "a/b"
// stays inside its directory):
//
//	<root>/<namespace>/<id>.txt         the content, byte for byte
//	<root>/<namespace>/<id>.meta.json   id, type, created_at, sizes, sha256, metadata
//	<root>/<namespace>/.lock            taken by writers (flock, on Unix)
//
// Every file is written atomically (temp file, then rename), content first
// and description second: the description is the commit point, so a crash
// leaves either the old artifact or the new one. Writers to a namespace take
// a lock that also holds across processes (flock on Unix); readers take no
// lock and check the content against the description's SHA-256, waiting
// for a writer only when they catch one between its two renames.
package dirstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentctx/agentctx/internal/base/fsutil"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/dirsession"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/driver"
)

const (
	contentExt = ".txt"
	metaExt    = ".meta.json"
	lockName   = ".lock"
)

// Options configure a store. The zero value is the default.
type Options struct {
	// Sync makes every write fsync its file before it becomes visible, so
	// stored artifacts survive a power loss (slower).
	Sync bool
}

// store is the driver.Store of a directory. It is safe for concurrent use,
// also by several processes sharing the directory.
type store struct {
	root string
	opts Options

	mu    sync.Mutex
	locks map[string]*sync.RWMutex // per namespace directory
}

var (
	_ driver.Store        = (*store)(nil)
	_ driver.StreamWriter = (*store)(nil)
	_ workspace.Searcher  = (*store)(nil)
	_ workspace.Locator   = (*store)(nil)
	_ workspace.Pather    = (*store)(nil)
	_ session.Keeper      = (*store)(nil)
)

// SessionsDir is the directory, inside the store's root, of the session
// state kept beside the artifacts (see OpenSessions).
const SessionsDir = ".sessions"

// OpenSessions implements session.Keeper: the session state is kept in
// <root>/.sessions (session/dirsession), shared by every process that
// shares the directory.
func (s *store) OpenSessions(ctx context.Context) (session.Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return dirsession.Open(filepath.Join(s.root, SessionsDir))
}

// Open returns a store kept in the directory root. Nothing is created until
// the first Put; reading a store whose directory does not exist finds no
// artifacts. A root that exists and is not a directory is an error. The
// zero Options means the documented defaults.
func Open(root string, opts Options) (workspace.Store, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("dirstore: %w", err)
	}
	if fi, err := os.Stat(abs); err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("dirstore: %s is not a directory: %w", abs, workspace.ErrInvalidLocation)
	}
	s := &store{root: abs, opts: opts, locks: make(map[string]*sync.RWMutex)}
	removeStaleTemp(abs)
	return workspace.NewStore(s, workspace.StoreOptions{}), nil
}

// removeStaleTemp removes the temp files that writers killed between write
// and rename left in the namespace directories (see fsutil.RemoveStaleTemp).
// It is best effort: a store that cannot be listed is reported by its reads.
func removeStaleTemp(root string) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return
	}
	now := time.Now()
	for _, e := range ents {
		if e.IsDir() {
			fsutil.RemoveStaleTemp(filepath.Join(root, e.Name()), 0, now)
		}
	}
}

// Location implements workspace.Locator: the store's directory.
func (s *store) Location() string { return s.root }

// Path implements workspace.Pather: the path of an artifact's content
// file, for people and tools that read the store directly. The file may
// not exist.
func (s *store) Path(namespace, id string) (string, error) {
	dir, name, err := s.names(namespace, id)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, name+contentExt), nil
}

func (s *store) nsDir(ns string) (string, error) {
	name, err := fsutil.SafeName(ns)
	if err != nil {
		return "", workspace.ErrInvalidNamespace
	}
	return filepath.Join(s.root, name), nil
}

func (s *store) names(ns, id string) (dir, name string, err error) {
	if dir, err = s.nsDir(ns); err != nil {
		return "", "", err
	}
	if name, err = fsutil.SafeName(id); err != nil {
		return "", "", workspace.ErrInvalidID
	}
	return dir, name, nil
}

func (s *store) nsLock(dir string) *sync.RWMutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.locks[dir]
	if l == nil {
		l = new(sync.RWMutex)
		s.locks[dir] = l
	}
	return l
}

// lockWrite takes the namespace's write lock, in this process and across
// processes. create makes the namespace directory first.
func (s *store) lockWrite(dir string, create bool) (unlock func(), err error) {
	if create {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	}
	l := s.nsLock(dir)
	l.Lock()
	f, err := lockFile(filepath.Join(dir, lockName), true)
	if err != nil && !(errors.Is(err, fs.ErrNotExist) && !create) {
		l.Unlock()
		return nil, err
	}
	return func() {
		unlockFile(f)
		l.Unlock()
	}, nil
}

// lockRead takes the namespace's read lock: it waits for a writer.
func (s *store) lockRead(dir string) (unlock func()) {
	l := s.nsLock(dir)
	l.RLock()
	f, _ := lockFile(filepath.Join(dir, lockName), false)
	return func() {
		unlockFile(f)
		l.RUnlock()
	}
}

// metaFile is the JSON description next to each content file.
type metaFile struct {
	ID          string             `json:"id"`
	Namespace   string             `json:"namespace"`
	Type        string             `json:"type"`
	Created     *time.Time         `json:"created_at,omitempty"`
	Chars       int                `json:"chars"`
	Lines       int                `json:"lines"`
	Bytes       int                `json:"bytes"`
	SHA256      string             `json:"sha256"`
	ContentFile string             `json:"content_file"`
	Metadata    workspace.Metadata `json:"metadata"`
}

func (m *metaFile) info() workspace.Info {
	info := workspace.Info{ID: m.ID, Type: workspace.ArtifactType(m.Type), Metadata: m.Metadata,
		Chars: m.Chars, Lines: m.Lines, Bytes: m.Bytes, SHA256: m.SHA256}
	if m.Created != nil {
		info.Created = m.Created.UTC()
	}
	if info.Metadata == nil {
		info.Metadata = workspace.Metadata{}
	}
	return info
}

func readMeta(path string) (*metaFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m metaFile
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &m, nil
}

// Put implements driver.Store.
func (s *store) Put(ctx context.Context, ns string, a workspace.Artifact) (workspace.Info, error) {
	return s.write(ctx, "put", ns, a)
}

// Create implements driver.Store. The id is checked under the
// namespace's write lock, which every writer takes (across processes with
// flock on Unix; elsewhere within one process only): an artifact whose
// description exists is taken, one whose description a crash left
// unwritten is not.
func (s *store) Create(ctx context.Context, ns string, a workspace.Artifact) (workspace.Info, error) {
	return s.write(ctx, "create", ns, a)
}

// PutStream implements driver.StreamWriter: the content file is written
// as the stream writes it (a compaction's archive of tens of MB is not
// held whole to be stored).
func (s *store) PutStream(ctx context.Context, ns string, st driver.Stream) (workspace.Info, error) {
	return writeContent(ctx, s, "put", ns, st.Info, fsutil.WriteFunc(st.Write))
}

// write stores a under the namespace's write lock; op "create" stores it
// only when its id is free.
func (s *store) write(ctx context.Context, op, ns string, a workspace.Artifact) (workspace.Info, error) {
	return writeContent(ctx, s, op, ns, a.Info, a.Content)
}

// writeContent stores an artifact described by m (measured by the
// portable store) whose content is content.
func writeContent[D fsutil.Data](ctx context.Context, s *store, op, ns string, m workspace.Info, content D) (workspace.Info, error) {
	dir, name, err := s.names(ns, m.ID)
	if err != nil {
		return workspace.Info{}, err
	}
	mf := metaFile{ID: m.ID, Namespace: ns, Type: string(m.Type), Chars: m.Chars, Lines: m.Lines, Bytes: m.Bytes,
		SHA256: m.SHA256, ContentFile: name + contentExt, Metadata: m.Metadata}
	if !m.Created.IsZero() {
		mf.Created = &m.Created
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(mf); err != nil {
		return workspace.Info{}, err
	}
	unlock, err := s.lockWrite(dir, true)
	if err != nil {
		return workspace.Info{}, err
	}
	defer unlock()
	if err := keepNamespace(dir, ns); err != nil {
		return workspace.Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return workspace.Info{}, err
	}
	if op == "create" {
		_, err := os.Lstat(filepath.Join(dir, name+metaExt))
		if err == nil {
			return workspace.Info{}, workspace.ErrExists
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return workspace.Info{}, err
		}
	}
	o := fsutil.Options{Sync: s.opts.Sync}
	if err := fsutil.WriteFile(filepath.Join(dir, name+contentExt), content, o); err != nil {
		return workspace.Info{}, err
	}
	if err := fsutil.WriteFile(filepath.Join(dir, name+metaExt), buf.Bytes(), o); err != nil {
		return workspace.Info{}, err
	}
	return m.Clone(), nil
}

// read returns an artifact whose content matches its description. It reads
// without a lock, and again under the read lock when it caught a writer
// between its two renames; a mismatch that stays (a crash between them)
// is resolved in favour of the content, whose sizes are then recomputed.
func (s *store) read(ctx context.Context, op, ns, id string) (*workspace.Artifact, error) {
	dir, name, err := s.names(ns, id)
	if err != nil {
		return nil, err
	}
	a, ok, err := s.readOnce(dir, name)
	if err == nil && !ok {
		unlock := s.lockRead(dir)
		a, ok, err = s.readOnce(dir, name)
		unlock()
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, workspace.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if !ok {
		m := driver.Measure(*a)
		return &m, nil
	}
	return a, nil
}

func (s *store) readOnce(dir, name string) (*workspace.Artifact, bool, error) {
	mf, err := readMeta(filepath.Join(dir, name+metaExt))
	if err != nil {
		return nil, false, err
	}
	content, err := os.ReadFile(filepath.Join(dir, name+contentExt))
	if err != nil {
		return nil, false, err
	}
	a := &workspace.Artifact{Info: mf.info(), Content: string(content)}
	sum := sha256.Sum256(content)
	return a, hex.EncodeToString(sum[:]) == mf.SHA256, nil
}

// Get implements driver.Store.
func (s *store) Get(ctx context.Context, ns, id string) (*workspace.Artifact, error) {
	return s.read(ctx, "get", ns, id)
}

// Stat implements driver.Store. It reads the description only, and
// the whole artifact when the content file's size shows a writer caught
// between its two renames (or a crash there).
func (s *store) Stat(ctx context.Context, ns, id string) (workspace.Info, error) {
	dir, name, err := s.names(ns, id)
	if err != nil {
		return workspace.Info{}, err
	}
	mf, err := readMeta(filepath.Join(dir, name+metaExt))
	if errors.Is(err, fs.ErrNotExist) {
		return workspace.Info{}, workspace.ErrNotFound
	}
	if err != nil {
		return workspace.Info{}, err
	}
	if fi, err := os.Stat(filepath.Join(dir, name+contentExt)); err == nil && fi.Size() == int64(mf.Bytes) {
		return mf.info(), nil
	}
	a, err := s.read(ctx, "stat", ns, id)
	if err != nil {
		return workspace.Info{}, err
	}
	return a.Info, nil
}

// Grep implements workspace.Searcher: the generic search, but each
// candidate's content is read without its description again (the listing
// has just read it), and whole only if a writer changed it since.
func (s *store) Grep(ctx context.Context, ns string, q workspace.GrepQuery) (*workspace.GrepResult, error) {
	if q.ID != "" {
		return workspace.Grep(ctx, plain{s}, ns, q)
	}
	if _, err := driver.NewGrepper(q); err != nil {
		return nil, err
	}
	list, err := s.query(ctx, "grep", ns, q.Filter)
	if err != nil {
		return nil, err
	}
	dir, _ := s.nsDir(ns)
	return driver.GrepInfos(ctx, ns, q, list, func(info workspace.Info) (string, error) {
		name, _ := fsutil.SafeName(info.ID)
		content, err := os.ReadFile(filepath.Join(dir, name+contentExt))
		if err == nil {
			sum := sha256.Sum256(content)
			if hex.EncodeToString(sum[:]) == info.SHA256 {
				return string(content), nil
			}
		}
		a, err := s.read(ctx, "grep", ns, info.ID)
		if err != nil {
			return "", err
		}
		return a.Content, nil
	})
}

// plain hides the Store's own Grep, for the generic one.
type plain struct{ workspace.Store }

func (s *store) query(ctx context.Context, op, ns string, f workspace.Filter) ([]workspace.Info, error) {
	dir, err := s.nsDir(ns)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return []workspace.Info{}, nil
	}
	if err != nil {
		return nil, err
	}
	list := []workspace.Info{}
	for i, e := range entries {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		n := e.Name()
		if !strings.HasSuffix(n, metaExt) || strings.HasPrefix(n, ".") || !e.Type().IsRegular() {
			continue
		}
		mf, err := readMeta(filepath.Join(dir, n))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted since the listing
		}
		if err != nil {
			return nil, err
		}
		if mf.Namespace != ns {
			continue // a file placed by hand; never another namespace's
		}
		info := mf.info()
		if f.Match(info.Metadata) {
			list = append(list, info)
		}
	}
	driver.SortInfos(list)
	return list, nil
}

// Query implements driver.Store. It reads every description in the
// namespace: use sqlitestore for large workspaces queried often.
func (s *store) Query(ctx context.Context, ns string, f workspace.Filter) ([]workspace.Info, error) {
	list, err := s.query(ctx, "query", ns, f)
	if err != nil {
		return nil, err
	}
	return driver.Page(list, f), nil
}

// Delete implements driver.Store.
func (s *store) Delete(ctx context.Context, ns, id string) error {
	dir, name, err := s.names(ns, id)
	if err != nil {
		return err
	}
	unlock, err := s.lockWrite(dir, false)
	if err != nil {
		return err
	}
	defer unlock()
	err = os.Remove(filepath.Join(dir, name+metaExt))
	if errors.Is(err, fs.ErrNotExist) {
		return workspace.ErrNotFound
	}
	if err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, name+contentExt)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Close implements driver.Store. A store holds no open files between
// calls.
func (s *store) Close() error { return nil }

// nsFile is the file, in a namespace's directory, that holds the
// namespace when the directory's name is a hash of it (a long namespace),
// so that Namespaces can name it.
const nsFile = ".namespace"

func keepNamespace(dir, ns string) error {
	if !strings.Contains(filepath.Base(dir), "~") {
		return nil
	}
	p := filepath.Join(dir, nsFile)
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	return fsutil.WriteFile(p, []byte(ns), fsutil.Options{})
}

// Namespaces implements driver.Store: the directories that hold at
// least one artifact description.
func (s *store) Namespaces(ctx context.Context) ([]string, error) {
	ents, err := os.ReadDir(s.root)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	out := []string{}
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue // SafeName never starts a name with '.' (.sessions is not ours)
		}
		dir := filepath.Join(s.root, e.Name())
		ns, ok := fsutil.UnsafeName(e.Name())
		if !ok {
			b, err := os.ReadFile(filepath.Join(dir, nsFile))
			if err != nil {
				continue
			}
			ns = string(b)
		}
		has, err := hasArtifact(dir)
		if err != nil {
			return nil, err
		}
		if has {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return out, nil
}

// hasArtifact reports whether a namespace directory holds a description.
func hasArtifact(dir string) (bool, error) {
	f, err := os.Open(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	defer f.Close()
	for {
		names, err := f.Readdirnames(256)
		for _, n := range names {
			if strings.HasSuffix(n, metaExt) && !strings.HasPrefix(n, fsutil.TempPrefix) {
				return true, nil
			}
		}
		if err != nil {
			return false, nil // io.EOF: read whole
		}
	}
}
