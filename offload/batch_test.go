package offload_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/offload"
)

func ref(name string) string { return "[Content offloaded to: ./" + name + "]" }

// textBlocks returns block-array content with one text block of text.
func textBlocks(text string) agentctx.Content {
	return agentctx.BlockList(agentctx.TextBlock(text))
}

// TestBatchSeed000 covers the use cases, boundaries and rules of seed 000.
func TestBatchSeed000(t *testing.T) {
	a := strings.Repeat
	tests := []struct {
		name      string
		msgs      []agentctx.Message
		minChars  int
		wantFiles []string // file names, in order
		wantData  []string // their contents
		wantAfter []string // AsText of every tool result afterwards, in order
		wantFreed int
	}{
		{
			name:      "UC-001 large result is offloaded",
			msgs:      []agentctx.Message{toolUseMsg("toolu_01abc"), toolResultMsg("toolu_01abc", agentctx.Text(a("x", 150)))},
			wantFiles: []string{"tool-result-toolu_01abc.md"},
			wantData:  []string{a("x", 150)},
			wantAfter: []string{ref("tool-result-toolu_01abc.md")},
			wantFreed: 150,
		},
		{
			name:      "UC-002 small result is kept",
			msgs:      []agentctx.Message{toolUseMsg("t1"), toolResultMsg("t1", agentctx.Text(a("x", 50)))},
			wantAfter: []string{a("x", 50)},
		},
		{
			name: "UC-003 mixed: only large ones go",
			msgs: []agentctx.Message{
				toolUseMsg("t1", "t2", "t3"),
				agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(
					agentctx.ToolResultBlock("t1", agentctx.Text(a("a", 200)), false),
					agentctx.ToolResultBlock("t2", agentctx.Text(a("b", 10)), false),
					agentctx.ToolResultBlock("t3", agentctx.Text(a("c", 120)), false),
				)),
			},
			wantFiles: []string{"tool-result-t1.md", "tool-result-t3.md"},
			wantData:  []string{a("a", 200), a("c", 120)},
			wantAfter: []string{ref("tool-result-t1.md"), a("b", 10), ref("tool-result-t3.md")},
			wantFreed: 320,
		},
		{
			name: "UC-004 no tool result",
			msgs: []agentctx.Message{
				agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(a("q", 500))),
				agentctx.NewMessage(agentctx.RoleAssistant, textBlocks(a("r", 500))),
			},
		},
		{
			name:      "boundary 99 characters kept",
			msgs:      []agentctx.Message{toolResultMsg("t", agentctx.Text(a("x", 99)))},
			wantAfter: []string{a("x", 99)},
		},
		{
			name:      "boundary 100 characters offloaded",
			msgs:      []agentctx.Message{toolResultMsg("t", agentctx.Text(a("x", 100)))},
			wantFiles: []string{"tool-result-t.md"},
			wantData:  []string{a("x", 100)},
			wantAfter: []string{ref("tool-result-t.md")},
			wantFreed: 100,
		},
		{
			name:      "boundary empty string kept",
			msgs:      []agentctx.Message{toolResultMsg("t", agentctx.Text(""))},
			wantAfter: []string{""},
		},
		{
			name:      "characters are code points: 100 two-byte runes offloaded",
			msgs:      []agentctx.Message{toolResultMsg("t", agentctx.Text(a("é", 100)))},
			wantFiles: []string{"tool-result-t.md"},
			wantData:  []string{a("é", 100)},
			wantAfter: []string{ref("tool-result-t.md")},
			wantFreed: 100,
		},
		{
			name:      "characters are code points: 99 three-byte runes kept",
			msgs:      []agentctx.Message{toolResultMsg("t", agentctx.Text(a("界", 99)))},
			wantAfter: []string{a("界", 99)},
		},
		{
			name:      "characters are code points, not UTF-16 units: 99 emoji kept",
			msgs:      []agentctx.Message{toolResultMsg("t", agentctx.Text(a("😀", 99)))},
			wantAfter: []string{a("😀", 99)},
		},
		{
			// [{"type":"text","text":"…"}] is 27 characters plus the text.
			name:      "block array of 100 JSON characters offloaded as compact JSON, replaced by a string",
			msgs:      []agentctx.Message{toolResultMsg("t", textBlocks(a("x", 73)))},
			wantFiles: []string{"tool-result-t.md"},
			wantData:  []string{`[{"type":"text","text":"` + a("x", 73) + `"}]`},
			wantAfter: []string{ref("tool-result-t.md")},
			wantFreed: 100,
		},
		{
			name:      "block array of 99 JSON characters kept as blocks",
			msgs:      []agentctx.Message{toolResultMsg("t", textBlocks(a("x", 72)))},
			wantAfter: []string{`[{"type":"text","text":"` + a("x", 72) + `"}]`},
		},
		{
			name:      "block array JSON is not HTML-escaped",
			msgs:      []agentctx.Message{toolResultMsg("t", textBlocks("<a href='x'>&</a>"+a("x", 83)))},
			wantFiles: []string{"tool-result-t.md"},
			wantData:  []string{`[{"type":"text","text":"<a href='x'>&</a>` + a("x", 83) + `"}]`},
			wantAfter: []string{ref("tool-result-t.md")},
			wantFreed: 127,
		},
		{
			name:      "OpenAI role tool message",
			msgs:      []agentctx.Message{toolMsg("call_1", a("o", 300)), toolMsg("call_2", "small")},
			wantFiles: []string{"tool-result-call_1.md"},
			wantData:  []string{a("o", 300)},
			wantAfter: []string{ref("tool-result-call_1.md"), "small"},
			wantFreed: 300,
		},
		{
			name: "same id three times: -1, -2 (even for identical content)",
			msgs: []agentctx.Message{
				toolResultMsg("dup", agentctx.Text(a("1", 100))),
				toolResultMsg("dup", agentctx.Text(a("1", 100))),
				toolMsg("dup", a("3", 100)),
			},
			wantFiles: []string{"tool-result-dup.md", "tool-result-dup-1.md", "tool-result-dup-2.md"},
			wantData:  []string{a("1", 100), a("1", 100), a("3", 100)},
			wantAfter: []string{ref("tool-result-dup.md"), ref("tool-result-dup-1.md"), ref("tool-result-dup-2.md")},
			wantFreed: 300,
		},
		{
			name:      "configurable threshold: 10 offloaded, 9 kept",
			msgs:      []agentctx.Message{toolMsg("a", a("x", 10)), toolMsg("b", a("y", 9))},
			minChars:  10,
			wantFiles: []string{"tool-result-a.md"},
			wantData:  []string{a("x", 10)},
			wantAfter: []string{ref("tool-result-a.md"), a("y", 9)},
			wantFreed: 10,
		},
		{
			name: "oldest first across messages",
			msgs: []agentctx.Message{
				toolMsg("z", a("1", 100)), toolMsg("y", a("2", 101)), toolResultMsg("x", agentctx.Text(a("3", 102))),
			},
			wantFiles: []string{"tool-result-z.md", "tool-result-y.md", "tool-result-x.md"},
			wantData:  []string{a("1", 100), a("2", 101), a("3", 102)},
			wantAfter: []string{ref("tool-result-z.md"), ref("tool-result-y.md"), ref("tool-result-x.md")},
			wantFreed: 303,
		},
		{
			name:      "empty id on a small result is fine",
			msgs:      []agentctx.Message{toolMsg("", "short")},
			wantAfter: []string{"short"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			unchanged := snapshot(t, tt.msgs)
			res, err := offload.Batch(t.Context(), tt.msgs, offload.BatchOptions{Dir: dir, MinChars: tt.minChars})
			if err != nil {
				t.Fatalf("Batch: %v", err)
			}
			unchanged()
			if res.OffloadedCount != len(tt.wantFiles) {
				t.Errorf("OffloadedCount = %d, want %d", res.OffloadedCount, len(tt.wantFiles))
			}
			if res.FreedChars != tt.wantFreed {
				t.Errorf("FreedChars = %d, want %d", res.FreedChars, tt.wantFreed)
			}
			var wantPaths []string
			for _, n := range tt.wantFiles {
				wantPaths = append(wantPaths, filepath.Join(dir, n))
			}
			if res.Files == nil || !slices.Equal(res.Files, wantPaths) {
				t.Errorf("Files = %q, want %q", res.Files, wantPaths)
			}
			for i, p := range res.Files {
				if !filepath.IsAbs(p) {
					t.Errorf("file %q is not absolute", p)
				}
				if i < len(tt.wantData) {
					if got := readFile(t, p); got != tt.wantData[i] {
						t.Errorf("file %s holds %q, want %q", filepath.Base(p), got, tt.wantData[i])
					}
				}
			}
			if len(tt.wantFiles) == 0 {
				if _, err := os.Stat(dir); !os.IsNotExist(err) {
					t.Errorf("dir was created although nothing was offloaded (stat: %v)", err)
				}
			} else if got := listDir(t, dir); !slices.Equal(got, slices.Sorted(slices.Values(tt.wantFiles))) {
				t.Errorf("dir holds %q, want %q", got, tt.wantFiles)
			}
			if len(res.Messages) != len(tt.msgs) {
				t.Fatalf("got %d messages, want %d", len(res.Messages), len(tt.msgs))
			}
			for i, want := range tt.wantAfter {
				c := contentOf(res.Messages, i)
				if c.AsText() != want {
					t.Errorf("tool result %d = %.80q, want %.80q", i, c.AsText(), want)
				}
				if strings.HasPrefix(want, "[Content offloaded") && !c.IsText() {
					t.Errorf("tool result %d: replaced content is %v, want a string", i, c.Kind())
				}
				if orig := contentOf(tt.msgs, i); !strings.HasPrefix(want, "[Content offloaded") && !c.Equal(orig) {
					t.Errorf("tool result %d was changed although kept", i)
				}
			}
			if v := agentctx.ValidatePairing(tt.msgs); v.Valid && !agentctx.ValidatePairing(res.Messages).Valid {
				t.Errorf("offloading broke tool pairing")
			}
			noTempFiles(t, dir)
		})
	}
}

func TestBatchEmpty(t *testing.T) {
	for _, msgs := range [][]agentctx.Message{nil, {}} {
		dir := filepath.Join(t.TempDir(), "never")
		res, err := offload.Batch(t.Context(), msgs, offload.BatchOptions{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if res.Messages == nil || len(res.Messages) != 0 || res.OffloadedCount != 0 || res.FreedChars != 0 || res.Files == nil || len(res.Files) != 0 {
			t.Errorf("Batch(%#v) = %+v, want empty non-nil lists and zero counts", msgs, res)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("dir created for an empty list")
		}
	}
}

func TestBatchErrors(t *testing.T) {
	large := strings.Repeat("x", 200)
	file := filepath.Join(t.TempDir(), "regular")
	if err := os.WriteFile(file, []byte("I am a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	tests := []struct {
		name     string
		ctx      context.Context
		msgs     []agentctx.Message
		dir      string // "" → a fresh temp path
		minChars int
		check    func(t *testing.T, err error)
	}{
		{
			name: "empty tool_use_id on a large result",
			msgs: []agentctx.Message{toolMsg("ok", large), toolResultMsg("", agentctx.Text(large))},
			check: func(t *testing.T, err error) {
				var ie *offload.IDError
				if !errors.As(err, &ie) || ie.Message != 1 || ie.Block != 0 {
					t.Errorf("err = %v, want *IDError for message 1 block 0", err)
				}
				if !errors.Is(err, offload.ErrEmptyID) || !errors.Is(err, agentctx.ErrInvalidInput) {
					t.Errorf("err = %v, want ErrEmptyID and ErrInvalidInput", err)
				}
			},
		},
		{
			name: "empty tool_call_id on a large role tool message",
			msgs: []agentctx.Message{toolMsg("", large)},
			check: func(t *testing.T, err error) {
				var ie *offload.IDError
				if !errors.As(err, &ie) || ie.Block != -1 || !errors.Is(err, offload.ErrEmptyID) {
					t.Errorf("err = %v, want *IDError with block -1", err)
				}
			},
		},
		{
			name:     "negative threshold",
			msgs:     []agentctx.Message{toolMsg("a", large)},
			minChars: -1,
			check: func(t *testing.T, err error) {
				if err == nil || !strings.Contains(err.Error(), "MinChars") {
					t.Errorf("err = %v, want a MinChars error", err)
				}
			},
		},
		{
			name: "cancelled context",
			ctx:  cancelled,
			msgs: []agentctx.Message{toolMsg("a", large)},
			check: func(t *testing.T, err error) {
				if !errors.Is(err, context.Canceled) {
					t.Errorf("err = %v, want context.Canceled", err)
				}
			},
		},
		{
			name: "dir is a regular file: write failure wraps the cause",
			msgs: []agentctx.Message{toolMsg("a", large)},
			dir:  file,
			check: func(t *testing.T, err error) {
				var we *offload.WriteError
				if !errors.As(err, &we) || we.Path != file || we.Err == nil {
					t.Fatalf("err = %v, want *WriteError for %s", err, file)
				}
				if !errors.Is(err, syscall.ENOTDIR) && !errors.Is(err, syscall.EEXIST) {
					t.Errorf("err = %v does not wrap the OS cause", err)
				}
			},
		},
		{
			name: "parent of dir is a regular file",
			msgs: []agentctx.Message{toolMsg("a", large)},
			dir:  filepath.Join(file, "sub", "dir"),
			check: func(t *testing.T, err error) {
				if !errors.Is(err, syscall.ENOTDIR) {
					t.Errorf("err = %v, want ENOTDIR wrapped", err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = t.Context()
			}
			dir := tt.dir
			if dir == "" {
				dir = filepath.Join(t.TempDir(), "out")
			}
			unchanged := snapshot(t, tt.msgs)
			res, err := offload.Batch(ctx, tt.msgs, offload.BatchOptions{Dir: dir, MinChars: tt.minChars})
			if err == nil {
				t.Fatalf("Batch succeeded: %+v", res)
			}
			tt.check(t, err)
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			if res.Messages != nil || len(res.Files) != 0 {
				t.Errorf("result on error = %+v, want no messages and no files", res)
			}
			if tt.dir == "" {
				if _, err := os.Stat(dir); !os.IsNotExist(err) {
					t.Errorf("dir was created on an input error")
				}
			}
			unchanged()
		})
	}
}

// TestBatchCreatesDirRecursively covers F-005: a missing dir and its parents
// are created; an existing one is fine.
func TestBatchCreatesDirRecursively(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b", "c")
	msgs := []agentctx.Message{toolMsg("x", strings.Repeat("x", 100))}
	for range 2 {
		res, err := offload.Batch(t.Context(), msgs, offload.BatchOptions{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(dir, "tool-result-x.md"); len(res.Files) != 1 || res.Files[0] != want {
			t.Errorf("Files = %q, want [%q]", res.Files, want)
		}
	}
}

// TestBatchRelativeDir: a relative Dir (and the default) give absolute
// files, while the reference stays relative to the dir.
func TestBatchRelativeDir(t *testing.T) {
	tmp := t.TempDir()
	t.Chdir(tmp)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	msgs := []agentctx.Message{toolMsg("x", strings.Repeat("x", 100))}
	for _, tt := range []struct{ dir, want string }{
		{"rel/out", filepath.Join(wd, "rel", "out", "tool-result-x.md")},
		{"", filepath.Join(wd, ".offload", "tool-result-x.md")},
	} {
		res, err := offload.Batch(t.Context(), msgs, offload.BatchOptions{Dir: tt.dir})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Files) != 1 || res.Files[0] != tt.want {
			t.Errorf("Dir %q: Files = %q, want [%q]", tt.dir, res.Files, tt.want)
		}
		if got := res.Messages[0].Content.Text(); got != ref("tool-result-x.md") {
			t.Errorf("Dir %q: reference %q", tt.dir, got)
		}
	}
}

// TestBatchSharesUnchanged: the input is never modified, changed messages
// are copies, unchanged ones are shared, and every other member is kept.
func TestBatchSharesUnchanged(t *testing.T) {
	big := strings.Repeat("y", 150)
	msgs := parse(t, `[
		{"role":"system","content":"be brief"},
		{"role":"user","content":[{"type":"text","text":"list files"}],"timestamp":1700000000000},
		{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"tool_use","id":"t1","name":"bash","input":{"cmd":"ls -la"}},{"type":"tool_use","id":"t2","name":"bash","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"`+big+`","is_error":true,"cache_control":{"type":"ephemeral"}},{"type":"tool_result","tool_use_id":"t2","content":"small"},{"type":"text","text":"go on"}],"timestamp":1700000001000,"messageStatus":"success"},
		{"role":"assistant","content":"done","x-extra":{"keep":[1,2]}}
	]`)
	unchanged := snapshot(t, msgs)
	res, err := offload.Batch(t.Context(), msgs, offload.BatchOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	unchanged()
	if res.OffloadedCount != 1 {
		t.Fatalf("OffloadedCount = %d, want 1", res.OffloadedCount)
	}
	for _, i := range []int{1, 2} {
		if &res.Messages[i].Content.Blocks()[0] != &msgs[i].Content.Blocks()[0] {
			t.Errorf("unchanged message %d is not shared", i)
		}
	}
	if &res.Messages[3].Content.Blocks()[0] == &msgs[3].Content.Blocks()[0] {
		t.Errorf("changed message 3 shares its blocks with the input")
	}
	// Appending to the result must not reach the input's backing array.
	res.Messages = append(res.Messages[:1], agentctx.NewMessage("user", agentctx.Text("x")))
	unchanged()

	want := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"[Content offloaded to: ./tool-result-t1.md]","is_error":true,"cache_control":{"type":"ephemeral"}},{"type":"tool_result","tool_use_id":"t2","content":"small"},{"type":"text","text":"go on"}],"timestamp":1700000001000,"messageStatus":"success"}`
	res2, _ := offload.Batch(t.Context(), msgs, offload.BatchOptions{Dir: t.TempDir()})
	got, err := res2.Messages[3].AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("changed message:\n got %s\nwant %s", got, want)
	}
	if a, b := encode(t, res2.Messages[4:]), encode(t, msgs[4:]); a != b {
		t.Errorf("unchanged message re-encoded differently: %s vs %s", a, b)
	}
}

// TestBatchNoOverwrite covers the no-data-loss Decision of SPEC §3.1.
func TestBatchNoOverwrite(t *testing.T) {
	X, Y, Z := strings.Repeat("X", 100), strings.Repeat("Y", 100), strings.Repeat("Z", 100)
	tests := []struct {
		name      string
		existing  map[string]string // files present before the call
		msgs      []agentctx.Message
		wantFiles []string
		wantDir   map[string]string // every file afterwards
	}{
		{
			name:      "different content takes the next free suffix",
			existing:  map[string]string{"tool-result-a.md": X},
			msgs:      []agentctx.Message{toolMsg("a", Y)},
			wantFiles: []string{"tool-result-a-1.md"},
			wantDir:   map[string]string{"tool-result-a.md": X, "tool-result-a-1.md": Y},
		},
		{
			name:      "identical content reuses the file",
			existing:  map[string]string{"tool-result-a.md": X},
			msgs:      []agentctx.Message{toolMsg("a", X)},
			wantFiles: []string{"tool-result-a.md"},
			wantDir:   map[string]string{"tool-result-a.md": X},
		},
		{
			name:      "suffixes already taken are skipped",
			existing:  map[string]string{"tool-result-a.md": X, "tool-result-a-1.md": Y},
			msgs:      []agentctx.Message{toolMsg("a", Z)},
			wantFiles: []string{"tool-result-a-2.md"},
			wantDir:   map[string]string{"tool-result-a.md": X, "tool-result-a-1.md": Y, "tool-result-a-2.md": Z},
		},
		{
			name:      "a repeated id reuses an identical earlier file it did not claim",
			existing:  map[string]string{"tool-result-a.md": X},
			msgs:      []agentctx.Message{toolMsg("a", Y), toolMsg("a", X)},
			wantFiles: []string{"tool-result-a-1.md", "tool-result-a.md"},
			wantDir:   map[string]string{"tool-result-a.md": X, "tool-result-a-1.md": Y},
		},
		{
			name:      "an id that looks like a suffix does not clobber a repeat",
			msgs:      []agentctx.Message{toolMsg("a", X), toolMsg("a", Y), toolMsg("a-1", Z)},
			wantFiles: []string{"tool-result-a.md", "tool-result-a-1.md", "tool-result-a-1-1.md"},
			wantDir:   map[string]string{"tool-result-a.md": X, "tool-result-a-1.md": Y, "tool-result-a-1-1.md": Z},
		},
		{
			name:      "same length, different bytes is different",
			existing:  map[string]string{"tool-result-a.md": strings.Repeat("X", 99) + "x"},
			msgs:      []agentctx.Message{toolMsg("a", X)},
			wantFiles: []string{"tool-result-a-1.md"},
			wantDir:   map[string]string{"tool-result-a.md": strings.Repeat("X", 99) + "x", "tool-result-a-1.md": X},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for n, c := range tt.existing {
				if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			res, err := offload.Batch(t.Context(), tt.msgs, offload.BatchOptions{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, f := range res.Files {
				names = append(names, filepath.Base(f))
			}
			if !slices.Equal(names, tt.wantFiles) {
				t.Errorf("files = %q, want %q", names, tt.wantFiles)
			}
			for i, n := range tt.wantFiles {
				if got := contentOf(res.Messages, i).Text(); got != ref(n) {
					t.Errorf("result %d references %q, want %q", i, got, ref(n))
				}
			}
			got := map[string]string{}
			for _, n := range listDir(t, dir) {
				got[n] = readFile(t, filepath.Join(dir, n))
			}
			if len(got) != len(tt.wantDir) {
				t.Errorf("dir holds %q, want %d files", listDir(t, dir), len(tt.wantDir))
			}
			for n, c := range tt.wantDir {
				if got[n] != c {
					t.Errorf("%s holds %.20q..., want %.20q...", n, got[n], c)
				}
			}
		})
	}
}

// TestBatchNameTakenByDirectory: a directory in the way is not a file with
// the same content; the next suffix is used.
func TestBatchNameTakenByDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "tool-result-a.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := offload.Batch(t.Context(), []agentctx.Message{toolMsg("a", strings.Repeat("x", 100))}, offload.BatchOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "tool-result-a-1.md"); len(res.Files) != 1 || res.Files[0] != want {
		t.Errorf("Files = %q, want [%q]", res.Files, want)
	}
}

// TestBatchIdempotent: a second run on the same history and directory gives
// the same result and writes nothing new; a run on its own output does
// nothing, even with a threshold of 1.
func TestBatchIdempotent(t *testing.T) {
	dir := t.TempDir()
	msgs := []agentctx.Message{
		toolMsg("a", strings.Repeat("1", 120)),
		toolMsg("a", strings.Repeat("2", 120)),
		toolResultMsg("b", textBlocks(strings.Repeat("3", 200))),
	}
	first, err := offload.Batch(t.Context(), msgs, offload.BatchOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	files := listDir(t, dir)
	second, err := offload.Batch(t.Context(), msgs, offload.BatchOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(first.Files, second.Files) || encode(t, first.Messages) != encode(t, second.Messages) ||
		first.FreedChars != second.FreedChars || first.OffloadedCount != second.OffloadedCount {
		t.Errorf("second run differs:\n%+v\n%+v", first, second)
	}
	if got := listDir(t, dir); !slices.Equal(got, files) {
		t.Errorf("second run changed the dir: %q → %q", files, got)
	}
	again, err := offload.Batch(t.Context(), first.Messages, offload.BatchOptions{Dir: dir, MinChars: 1})
	if err != nil {
		t.Fatal(err)
	}
	if again.OffloadedCount != 0 {
		t.Errorf("references were offloaded again: %q", again.Files)
	}
}

func TestIsReference(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"[Content offloaded to: ./tool-result-a.md]", true},
		{"[Content offloaded to: ./tool-result-a-1.md]", true},
		{"[Tool result offloaded to file: /x/.offload/s/a.md]", true},
		{"[Tool result offloaded to file: /x/.offload/s/a.md] and more", false},
		{"[Content offloaded to: ./a.txt]", false},
		{"[Content offloaded to: ./a.md]\n[Content offloaded to: ./b.md]", false},
		{"Content offloaded to: ./a.md", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := offload.IsReference(tt.s); got != tt.want {
			t.Errorf("IsReference(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}
