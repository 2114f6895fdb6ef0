package compact

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/fsutil"
)

// Archive file names: ArchivePrefix + timestamp + "-" + seq + ArchiveExt,
// the timestamp in ISO 8601 basic format, UTC, to the second
// (compact-20261122T071400Z-1.json).
const (
	ArchivePrefix     = "compact-"
	ArchiveExt        = ".json"
	ArchiveTimeLayout = "20060102T150405Z"
)

// claimPrefix and claimExt name the empty files that reserve a sequence
// number in an archive directory (.compact-<seq>.seq).
const (
	claimPrefix = ".compact-"
	claimExt    = ".seq"
)

// Archived names the archive that keeps a compacted middle.
type Archived struct {
	// ID is the archive's stable name, the one a summary may mention: an
	// artifact id for archives kept in a workspace, the file's path for
	// FileArchiver.
	ID string
	// Path is the absolute path of the archive file, "" when the archive
	// is not a file.
	Path string
	// Bytes is the archive's size.
	Bytes int
}

// An Archiver keeps the original messages of a middle before they are
// replaced by a summary, so that nothing is lost. Archive must not modify
// msgs, must honour ctx, and may be called from several goroutines.
type Archiver interface {
	Archive(ctx context.Context, sessionID string, msgs []agentctx.Message) (Archived, error)
}

// ConversationArchiver is an Archiver that can also be given the facts of
// the messages it archives: the encodings they hold are archived as they
// are, not written again (EncodeArchiveConversation). Compact uses it
// when Options.Facts gives the facts.
type ConversationArchiver interface {
	Archiver
	// ArchiveConversation is Archive of conv.Messages, whose facts are
	// conv.Facts (nil or index for index). The archive is the same.
	ArchiveConversation(ctx context.Context, sessionID string, conv agentctx.Conversation) (Archived, error)
}

// FileArchiver writes each archive as a file with WriteArchive (seed 002:
// <Dir>/<session>/compact-<timestamp>-<seq>.json); ID and Path are the
// file's absolute path.
type FileArchiver struct {
	Dir  string           // empty means DefaultDir
	Now  func() time.Time // nil means time.Now
	Sync bool             // fsync before the file becomes visible
}

var _ ConversationArchiver = FileArchiver{}

// Archive implements Archiver.
func (a FileArchiver) Archive(ctx context.Context, sessionID string, msgs []agentctx.Message) (Archived, error) {
	return a.ArchiveConversation(ctx, sessionID, agentctx.Conversation{Messages: msgs})
}

// ArchiveConversation implements ConversationArchiver.
func (a FileArchiver) ArchiveConversation(ctx context.Context, sessionID string, conv agentctx.Conversation) (Archived, error) {
	opts := ArchiveOptions{Dir: a.Dir, SessionID: sessionID, Now: a.Now, Sync: a.Sync}
	dir, err := opts.dir()
	if err != nil {
		return Archived{}, err
	}
	data, err := indentMessages(conv)
	if err != nil {
		return Archived{}, &ArchiveError{Op: "encode", Path: dir, Err: err}
	}
	if path, ok := existingArchive(dir, data); ok {
		return Archived{ID: path, Path: path, Bytes: len(data)}, nil
	}
	path, err := writeArchive(ctx, dir, data, opts)
	if err != nil {
		return Archived{}, err
	}
	return Archived{ID: path, Path: path, Bytes: len(data)}, nil
}

// existingArchive returns an archive in dir that already holds data (a
// compaction retried after its summary failed, a command run again): the
// same messages are archived once. Files are compared by size, then by a
// hash read in small pieces.
func existingArchive(dir string, data []byte) (string, bool) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", false
	}
	var want [sha256.Size]byte
	hashed := false
	for _, e := range entries {
		if _, ok := ArchiveSeq(e.Name()); !ok || !strings.HasPrefix(e.Name(), ArchivePrefix) {
			continue
		}
		fi, err := e.Info()
		if err != nil || fi.Size() != int64(len(data)) {
			continue
		}
		if !hashed {
			want, hashed = sha256.Sum256(data), true
		}
		path := filepath.Join(dir, e.Name())
		if got, ok := fileHash(path); ok && got == want {
			return path, true
		}
	}
	return "", false
}

func fileHash(path string) ([sha256.Size]byte, bool) {
	var sum [sha256.Size]byte
	f, err := os.Open(path)
	if err != nil {
		return sum, false
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, false
	}
	h.Sum(sum[:0])
	return sum, true
}

// EncodeArchive returns msgs as an archive holds them: an indented JSON
// array, each message exactly as it came, members in order.
func EncodeArchive(msgs []agentctx.Message) ([]byte, error) {
	return indentMessages(agentctx.Conversation{Messages: msgs})
}

// EncodeArchiveConversation is EncodeArchive of conv.Messages, whose
// facts are conv.Facts (nil or index for index): a message whose encoding
// they hold is indented from it, not encoded again. The bytes are the
// same.
func EncodeArchiveConversation(conv agentctx.Conversation) ([]byte, error) {
	return indentMessages(conv)
}

// WriteArchiveConversation writes EncodeArchiveConversation(conv) to w,
// a message at a time: an archive of a long history (tens of MB) is never
// held whole. A write error stops it and is returned.
func WriteArchiveConversation(w io.Writer, conv agentctx.Conversation) error {
	msgs := conv.Messages
	known := len(conv.Facts) == len(msgs)
	var enc, out []byte
	for i := range msgs {
		e := []byte(nil)
		if known {
			e = conv.Facts[i].Encoding
		}
		if e == nil {
			var err error
			if enc, err = msgs[i].AppendJSON(enc[:0]); err != nil {
				return fmt.Errorf("message %d: %w", i, err)
			}
			e = enc
		}
		out = out[:0]
		if i == 0 {
			out = append(out, '[')
		} else {
			out = append(out, ',')
		}
		out = append(out, "\n  "...)
		out = appendIndented(out, e, "  ", "  ")
		if _, err := w.Write(out); err != nil {
			return err
		}
	}
	tail := "[]\n"
	if len(msgs) > 0 {
		tail = "\n]\n"
	}
	_, err := io.WriteString(w, tail)
	return err
}

// maxClaims bounds the search for a free sequence number; it is only
// reached when something keeps taking the numbers WriteArchive tries.
const maxClaims = 10_000

// ArchiveOptions configure WriteArchive. The zero value means the defaults:
// .offload/default, the system clock, no fsync.
type ArchiveOptions struct {
	// Dir is the archive directory. Empty means DefaultDir.
	Dir string
	// SessionID names the subdirectory, made safe with fsutil.SafeName
	// (a name can never leave Dir). Empty means DefaultSessionID.
	SessionID string
	// Now is the clock for the file name. Nil means time.Now.
	Now func() time.Time
	// Sync fsyncs the file before it becomes visible.
	Sync bool
}

// ArchiveError is a failure to write an archive.
type ArchiveError struct {
	Op   string // "mkdir", "read dir", "write", "encode"
	Path string
	Err  error
}

func (e *ArchiveError) Error() string {
	return fmt.Sprintf("compact: archive: %s %s: %v", e.Op, e.Path, e.Err)
}

// Unwrap returns Err.
func (e *ArchiveError) Unwrap() error { return e.Err }

// WriteArchive writes msgs as indented JSON (a JSON array, each message
// exactly as it came, members in order) to
// <Dir>/<SessionID>/compact-<timestamp>-<seq>.json and returns the file's
// absolute path (seed 002 F-006). The directories are created. seq is 1 +
// the highest sequence number in the directory, so archives made in the
// same second are told apart, and concurrent calls (from any process) never
// take the same number: each number is reserved by creating an empty
// .compact-<seq>.seq file, which only one caller can do. The file is
// written atomically; an existing file is never replaced.
//
// Errors are *ArchiveError values wrapping the cause.
func WriteArchive(ctx context.Context, msgs []agentctx.Message, opts ArchiveOptions) (string, error) {
	dir, err := opts.dir()
	if err != nil {
		return "", err
	}
	data, err := indentMessages(agentctx.Conversation{Messages: msgs})
	if err != nil {
		return "", &ArchiveError{Op: "encode", Path: dir, Err: err}
	}
	return writeArchive(ctx, dir, data, opts)
}

// dir returns the absolute directory of the archives of opts' session.
func (opts ArchiveOptions) dir() (string, error) {
	if opts.Dir == "" {
		opts.Dir = DefaultDir
	}
	if opts.SessionID == "" {
		opts.SessionID = DefaultSessionID
	}
	name, err := fsutil.SafeName(opts.SessionID)
	if err != nil {
		return "", &ArchiveError{Op: "name", Path: opts.SessionID, Err: err}
	}
	dir, err := filepath.Abs(filepath.Join(opts.Dir, name))
	if err != nil {
		return "", &ArchiveError{Op: "mkdir", Path: opts.Dir, Err: err}
	}
	return dir, nil
}

// writeArchive writes the encoded archive data in dir (see WriteArchive).
func writeArchive(ctx context.Context, dir string, data []byte, opts ArchiveOptions) (string, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", &ArchiveError{Op: "mkdir", Path: dir, Err: err}
	}
	seq, err := highestSeq(dir)
	if err != nil {
		return "", &ArchiveError{Op: "read dir", Path: dir, Err: err}
	}
	stamp := opts.Now().UTC().Format(ArchiveTimeLayout)
	fo := fsutil.Options{Sync: opts.Sync}
	for range maxClaims {
		seq++
		if err := ctx.Err(); err != nil {
			return "", err
		}
		claim := filepath.Join(dir, claimPrefix+strconv.Itoa(seq)+claimExt)
		if err := fsutil.CreateFile(claim, "", fo); err != nil {
			if errors.Is(err, fs.ErrExist) {
				continue
			}
			return "", &ArchiveError{Op: "write", Path: claim, Err: err}
		}
		path := filepath.Join(dir, ArchivePrefix+stamp+"-"+strconv.Itoa(seq)+ArchiveExt)
		if err := fsutil.CreateFile(path, data, fo); err != nil {
			if errors.Is(err, fs.ErrExist) {
				continue
			}
			return "", &ArchiveError{Op: "write", Path: path, Err: err}
		}
		return path, nil
	}
	return "", &ArchiveError{Op: "write", Path: dir, Err: fmt.Errorf("no free sequence number after %d tries", maxClaims)}
}

// ArchiveSeq returns the sequence number of an archive or claim file name,
// and whether the name is one.
func ArchiveSeq(name string) (int, bool) {
	var rest string
	switch {
	case strings.HasPrefix(name, ArchivePrefix) && strings.HasSuffix(name, ArchiveExt):
		rest = strings.TrimSuffix(name, ArchiveExt)
		i := strings.LastIndexByte(rest, '-')
		if i <= len(ArchivePrefix) || rest[i-1] == '-' {
			return 0, false // no timestamp part
		}
		rest = rest[i+1:]
	case strings.HasPrefix(name, claimPrefix) && strings.HasSuffix(name, claimExt):
		rest = strings.TrimSuffix(strings.TrimPrefix(name, claimPrefix), claimExt)
	default:
		return 0, false
	}
	if rest == "" || rest[0] == '+' || rest[0] == '-' {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}

// highestSeq returns the highest sequence number of the archives and claims
// in dir (0 when there are none).
func highestSeq(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	high := 0
	for _, e := range entries {
		if n, ok := ArchiveSeq(e.Name()); ok && n > high {
			high = n
		}
	}
	return high, nil
}

// indentMessages returns the messages of conv as an indented JSON array
// with a final newline. Message bytes are kept as they are (no HTML
// escaping); an encoding conv.Facts holds is used as it is. The output is
// sized in a first pass, so the only large allocation is the result
// itself.
func indentMessages(conv agentctx.Conversation) ([]byte, error) {
	msgs := conv.Messages
	known := len(conv.Facts) == len(msgs)
	var scratch []byte
	encoding := func(i int) ([]byte, error) {
		if known && conv.Facts[i].Encoding != nil {
			return conv.Facts[i].Encoding, nil
		}
		var err error
		if scratch, err = msgs[i].AppendJSON(scratch[:0]); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		return scratch, nil
	}
	size := len("[\n]\n")
	for i := range msgs {
		enc, err := encoding(i)
		if err != nil {
			return nil, err
		}
		size += len(",\n  ") + indentedSize(enc, 2, 2)
	}
	out := make([]byte, 0, size)
	out = append(out, '[')
	for i := range msgs {
		enc, err := encoding(i)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, "\n  "...)
		out = appendIndented(out, enc, "  ", "  ")
	}
	if len(msgs) > 0 {
		out = append(out, '\n')
	}
	return append(out, "]\n"...), nil
}

// appendIndented appends what json.Indent writes for src, compact JSON
// (as Message.AppendJSON writes it), with prefix and indent: the same
// bytes, without json.Indent's validating scanner (a third of an
// archive's time) or its buffer of twice the input. indentedSize is its
// length.
func appendIndented(dst, src []byte, prefix, indent string) []byte {
	depth := 0
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch c {
		case '"':
			// Copy the string whole, up to its closing quote.
			j := i + 1
			for j < len(src) {
				if src[j] == '\\' {
					j += 2
					continue
				}
				if src[j] == '"' {
					break
				}
				j++
			}
			j = min(j, len(src)-1)
			dst = append(dst, src[i:j+1]...)
			i = j
		case '{', '[':
			if i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']') {
				dst = append(dst, c, src[i+1])
				i++
				continue
			}
			dst = append(dst, c)
			depth++
			dst = appendNewline(dst, prefix, indent, depth)
		case '}', ']':
			depth--
			dst = appendNewline(dst, prefix, indent, depth)
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			dst = appendNewline(dst, prefix, indent, depth)
		case ':':
			dst = append(dst, ':', ' ')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// appendNewline appends a newline, prefix and depth indents.
func appendNewline(dst []byte, prefix, indent string, depth int) []byte {
	dst = append(dst, '\n')
	dst = append(dst, prefix...)
	for range depth {
		dst = append(dst, indent...)
	}
	return dst
}

// indentedSize returns the length of what json.Indent writes for the
// compact JSON src with the given prefix and indent lengths. It only sizes
// a buffer: a wrong answer costs an allocation, nothing else.
func indentedSize(src []byte, prefix, indent int) int {
	n, depth := 0, 0
	inString, escaped := false, false
	for i := 0; i < len(src); i++ {
		c := src[i]
		n++
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			if i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']') {
				i++
				n++
				continue
			}
			depth++
			n += 1 + prefix + depth*indent
		case '}', ']':
			depth--
			n += 1 + prefix + depth*indent
		case ',':
			n += 1 + prefix + depth*indent
		case ':':
			n++
		}
	}
	return n
}
