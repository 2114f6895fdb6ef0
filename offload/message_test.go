package offload_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/offload"
)

// memWriter is a FileWriter that keeps files in memory and records calls.
type memWriter struct {
	mu    sync.Mutex
	files map[string]string
	paths []string
}

func (w *memWriter) WriteFile(_ context.Context, path string, data []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.files == nil {
		w.files = map[string]string{}
	}
	w.files[path] = string(data)
	w.paths = append(w.paths, path)
	return nil
}

func msgRef(path string) string { return "[Tool result offloaded to file: " + path + "]" }

// TestMessageSeed001 covers the use cases and rules of seed 001.
func TestMessageSeed001(t *testing.T) {
	root := "/srv/offload" // absolute: the paths below do not depend on the working directory
	if filepath.Separator != '/' {
		t.Skip("paths in this table are Unix paths")
	}
	long := strings.Repeat("L", 1500)
	tests := []struct {
		name      string
		msg       agentctx.Message
		session   string
		wantPaths []string
		wantData  []string
		wantAfter []string // AsText of each tool result afterwards
	}{
		{
			name:      "UC-001 string content written as is",
			msg:       toolResultMsg("toolu_xyz", agentctx.Text(long)),
			session:   "session-abc123",
			wantPaths: []string{root + "/session-abc123/toolu_xyz.md"},
			wantData:  []string{long},
		},
		{
			name:      "UC-002 block array written as its JSON, replaced by a string",
			msg:       toolResultMsg("toolu_xyz", agentctx.BlockList(agentctx.TextBlock(long), agentctx.TextBlock("<&>"))),
			session:   "s",
			wantPaths: []string{root + "/s/toolu_xyz.md"},
			wantData:  []string{`[{"type":"text","text":"` + long + `"},{"type":"text","text":"<&>"}]`},
		},
		{
			name:      "OpenAI role tool message",
			msg:       toolMsg("call_1", long),
			session:   "s",
			wantPaths: []string{root + "/s/call_1.md"},
			wantData:  []string{long},
		},
		{
			name: "several results: every one, in block order",
			msg: agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(
				agentctx.ToolResultBlock("b", agentctx.Text("second is first"), false),
				agentctx.TextBlock("not a result"),
				agentctx.ToolResultBlock("a", agentctx.Text(long), true),
			)),
			session:   "s",
			wantPaths: []string{root + "/s/b.md", root + "/s/a.md"},
			wantData:  []string{"second is first", long},
		},
		{
			name:      "no threshold check: a short result is offloaded too",
			msg:       toolMsg("c", "tiny"),
			session:   "s",
			wantPaths: []string{root + "/s/c.md"},
			wantData:  []string{"tiny"},
		},
		{
			name:      "empty content is written as an empty file",
			msg:       toolMsg("c", ""),
			session:   "s",
			wantPaths: []string{root + "/s/c.md"},
			wantData:  []string{""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &memWriter{}
			in := []agentctx.Message{tt.msg}
			unchanged := snapshot(t, in)
			res, err := offload.Message(t.Context(), tt.msg, offload.MessageOptions{Dir: root, SessionID: tt.session, Writer: w})
			if err != nil {
				t.Fatalf("Message: %v", err)
			}
			unchanged()
			if !slices.Equal(res.Files, tt.wantPaths) || res.File != tt.wantPaths[0] {
				t.Errorf("File = %q, Files = %q, want %q", res.File, res.Files, tt.wantPaths)
			}
			if !slices.Equal(w.paths, tt.wantPaths) {
				t.Errorf("writer got %q", w.paths)
			}
			wantFreed := 0
			for i, p := range tt.wantPaths {
				if w.files[p] != tt.wantData[i] {
					t.Errorf("%s holds %.60q, want %.60q", p, w.files[p], tt.wantData[i])
				}
				c := contentOf(in, i)
				wantFreed += c.Chars() - utf8.RuneCountInString(msgRef(p))
				got := contentOf([]agentctx.Message{res.Message}, i)
				if !got.IsText() || got.Text() != msgRef(p) {
					t.Errorf("result %d = %v %.80q, want the string %q", i, got.Kind(), got.AsText(), msgRef(p))
				}
			}
			if res.FreedChars != wantFreed {
				t.Errorf("FreedChars = %d, want %d", res.FreedChars, wantFreed)
			}
			if res.Message.Role != tt.msg.Role || res.Message.ToolCallID != tt.msg.ToolCallID {
				t.Errorf("role/tool_call_id changed: %q %q", res.Message.Role, res.Message.ToolCallID)
			}
			// The new message shares no memory with the input (seed: deep copy).
			if bs, ob := res.Message.Content.Blocks(), tt.msg.Content.Blocks(); len(bs) > 0 && len(ob) > 0 && &bs[0] == &ob[0] {
				t.Errorf("result shares blocks with the input")
			}
		})
	}
}

// TestMessageFreedChars checks freed_chars against a worked example: a
// 1,000-character result, the reference of a known path.
func TestMessageFreedChars(t *testing.T) {
	if filepath.Separator != '/' {
		t.Skip("Unix paths")
	}
	res, err := offload.Message(t.Context(), toolMsg("toolu_xyz", strings.Repeat("é", 1000)),
		offload.MessageOptions{Dir: "/o", SessionID: "session-abc123", Writer: &memWriter{}})
	if err != nil {
		t.Fatal(err)
	}
	// "[Tool result offloaded to file: /o/session-abc123/toolu_xyz.md]" has 63 characters (32 + 30 + 1).
	if want := 1000 - 63; res.FreedChars != want {
		t.Errorf("FreedChars = %d, want %d", res.FreedChars, want)
	}
	short, err := offload.Message(t.Context(), toolMsg("toolu_xyz", "ok"),
		offload.MessageOptions{Dir: "/o", SessionID: "session-abc123", Writer: &memWriter{}})
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 - 63; short.FreedChars != want {
		t.Errorf("FreedChars for short content = %d, want %d", short.FreedChars, want)
	}
	// The reference is measured in code points too: "/卸载" is 3 characters, 7 bytes.
	wide, err := offload.Message(t.Context(), toolMsg("toolu_xyz", strings.Repeat("é", 1000)),
		offload.MessageOptions{Dir: "/卸载", SessionID: "session-abc123", Writer: &memWriter{}})
	if err != nil {
		t.Fatal(err)
	}
	if want := 1000 - 64; wide.FreedChars != want {
		t.Errorf("FreedChars with a non-ASCII dir = %d, want %d", wide.FreedChars, want)
	}
}

// TestMessageDefaultDir: the seed's path example, .offload/session-abc123/toolu_xyz.md,
// made absolute against the working directory.
func TestMessageDefaultDir(t *testing.T) {
	t.Chdir(t.TempDir())
	wd, _ := os.Getwd()
	w := &memWriter{}
	res, err := offload.Message(t.Context(), toolMsg("toolu_xyz", "x"), offload.MessageOptions{SessionID: "session-abc123", Writer: w})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(wd, ".offload", "session-abc123", "toolu_xyz.md"); res.File != want {
		t.Errorf("File = %q, want %q", res.File, want)
	}
}

// TestMessageOnDisk runs the convenience function and the OS writer:
// directories are created recursively, the same id in a session is
// overwritten, sessions are kept apart, no temp file is left.
func TestMessageOnDisk(t *testing.T) {
	root := filepath.Join(t.TempDir(), "deep", "root")
	first, err := offload.MessageToDir(t.Context(), toolMsg("id1", "first version"), root, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "s1", "id1.md"); first.File != want {
		t.Errorf("File = %q, want %q", first.File, want)
	}
	second, err := offload.MessageToDir(t.Context(), toolMsg("id1", "second"), root, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if second.File != first.File || readFile(t, first.File) != "second" {
		t.Errorf("same id in a session was not overwritten: %q holds %q", second.File, readFile(t, first.File))
	}
	other, err := offload.MessageToDir(t.Context(), toolMsg("id1", "other session"), root, "s2")
	if err != nil {
		t.Fatal(err)
	}
	if other.File == first.File || readFile(t, first.File) != "second" || readFile(t, other.File) != "other session" {
		t.Errorf("sessions are not kept apart")
	}
	fi, err := os.Stat(first.File)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode = %v, %v; want 0600 (the owner only)", fi.Mode(), err)
	}
	noTempFiles(t, root)
}

// failWriter fails every write with err.
func failWriter(err error) offload.FileWriter {
	return offload.WriterFunc(func(context.Context, string, []byte) error { return err })
}

func TestMessageErrors(t *testing.T) {
	diskFull := errors.New("no space left on device")
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		msg     agentctx.Message
		session string
		writer  offload.FileWriter
		want    []error // errors.Is targets
		wantAs  func(error) bool
		inMsg   string // text the error must contain
	}{
		{
			name: "UC-003 write failure wraps the original error", msg: toolMsg("a", "x"), session: "s",
			writer: failWriter(diskFull), want: []error{diskFull}, inMsg: "no space left on device",
			wantAs: func(err error) bool {
				var we *offload.WriteError
				return errors.As(err, &we) && we.ID == "a" && strings.HasSuffix(we.Path, filepath.Join("s", "a.md"))
			},
		},
		{
			name: "permission error keeps its identity", msg: toolMsg("a", "x"), session: "s",
			writer: failWriter(&fs.PathError{Op: "open", Path: "/x", Err: fs.ErrPermission}), want: []error{fs.ErrPermission},
		},
		{
			name: "empty session id", msg: toolMsg("a", "x"), session: "",
			want: []error{offload.ErrEmptySessionID, agentctx.ErrInvalidInput},
		},
		{
			name: "no tool result", msg: agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(strings.Repeat("x", 2000))), session: "s",
			want: []error{offload.ErrNoToolResult, agentctx.ErrInvalidInput},
		},
		{
			name: "empty id", msg: toolResultMsg("", agentctx.Text("x")), session: "s",
			want: []error{offload.ErrEmptyID, agentctx.ErrInvalidInput},
			wantAs: func(err error) bool {
				var ie *offload.IDError
				return errors.As(err, &ie) && ie.Block == 0
			},
		},
		{
			name: "empty id on a role tool message", msg: toolMsg("", "x"), session: "s",
			want: []error{offload.ErrEmptyID},
		},
		{
			name: "two results with one id", session: "s",
			msg: agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(
				agentctx.ToolResultBlock("a", agentctx.Text("1"), false),
				agentctx.ToolResultBlock("a", agentctx.Text("2"), false))),
			want: []error{offload.ErrDuplicateID, agentctx.ErrInvalidInput},
			wantAs: func(err error) bool {
				var ie *offload.IDError
				return errors.As(err, &ie) && ie.Block == 1 && ie.ID == "a"
			},
		},
		{
			name: "cancelled context", ctx: cancelled, msg: toolMsg("a", "x"), session: "s",
			want: []error{context.Canceled},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = t.Context()
			}
			rec := &memWriter{}
			var w offload.FileWriter = rec
			if tt.writer != nil {
				w = tt.writer
			}
			in := []agentctx.Message{tt.msg}
			unchanged := snapshot(t, in)
			_, err := offload.Message(ctx, tt.msg, offload.MessageOptions{Dir: t.TempDir(), SessionID: tt.session, Writer: w})
			if err == nil {
				t.Fatal("Message succeeded")
			}
			for _, target := range tt.want {
				if !errors.Is(err, target) {
					t.Errorf("err = %v, want errors.Is %v", err, target)
				}
			}
			if tt.wantAs != nil && !tt.wantAs(err) {
				t.Errorf("err = %#v has the wrong type or fields", err)
			}
			if !strings.Contains(err.Error(), tt.inMsg) {
				t.Errorf("err = %q, want it to contain %q", err, tt.inMsg)
			}
			if tt.writer == nil && len(rec.paths) != 0 {
				t.Errorf("something was written on an input error: %q", rec.paths)
			}
			unchanged()
		})
	}
}

// TestMessageWriteFailureOnDisk: the OS writer's error for a root that is a
// regular file reaches the caller.
func TestMessageWriteFailureOnDisk(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := offload.MessageToDir(t.Context(), toolMsg("a", "x"), file, "s")
	if !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("err = %v, want ENOTDIR wrapped", err)
	}
}

// TestMessageStopsAtFirstFailure: files written before a failure are
// reported; later results are not attempted.
func TestMessageStopsAtFirstFailure(t *testing.T) {
	boom := errors.New("boom")
	var calls int
	w := offload.WriterFunc(func(_ context.Context, path string, _ []byte) error {
		calls++
		if calls == 2 {
			return boom
		}
		return nil
	})
	msg := agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(
		agentctx.ToolResultBlock("a", agentctx.Text("1"), false),
		agentctx.ToolResultBlock("b", agentctx.Text("2"), false),
		agentctx.ToolResultBlock("c", agentctx.Text("3"), false)))
	res, err := offload.Message(t.Context(), msg, offload.MessageOptions{Dir: t.TempDir(), SessionID: "s", Writer: w})
	if !errors.Is(err, boom) || calls != 2 || len(res.Files) != 1 {
		t.Errorf("err = %v, calls = %d, files = %q; want boom after 2 calls, 1 file", err, calls, res.Files)
	}
}
