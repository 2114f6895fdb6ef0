package cli_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/app/cli"
	"github.com/agentctx/agentctx/tokens"
)

var compactResultKeys = []string{"messages", "compacted", "stats", "archive", "summary",
	"tokens", "threshold_tokens", "below_threshold", "reason", "attempts"}

// compactHistory is a session with a system prompt, a long middle with a
// failed and a fixed build, and a short tail.
func compactHistory() string {
	long := strings.Repeat("log line of the build output\\n", 300)
	return `[
{"role":"system","content":"You are a coding agent."},
{"role":"user","content":"Make the build pass."},
{"role":"assistant","content":[{"type":"text","text":"Building first."},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"make"}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":"Exit code 2\nmain.c:3: error: x undeclared\n` + long + `"}]},
{"role":"assistant","content":[{"type":"tool_use","id":"toolu_2","name":"Edit","input":{"file_path":"/src/main.c","old_string":"x","new_string":"int x"}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","content":"The file /src/main.c has been updated."}]},
{"role":"assistant","content":[{"type":"tool_use","id":"toolu_3","name":"Bash","input":{"command":"make"}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_3","content":"` + long + `"}]},
{"role":"assistant","content":"The build passes."},
{"role":"user","content":"Thanks. Now run the tests."},
{"role":"assistant","content":"Running them."}
]`
}

func compactTokens(t *testing.T, in string) int {
	msgs, err := agentctx.UnmarshalMessages([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	return tokens.NewMessageCounter(tokens.MessageOptions{}).Count(msgs)
}

func TestCompactCheck(t *testing.T) {
	in := compactHistory()
	n := compactTokens(t, in)
	tests := []struct {
		name   string
		input  string
		args   []string
		should bool
		thresh int
	}{
		{"defaults", in, nil, false, 184_000},
		{"exactly at the threshold (≥)", in, []string{"--limit", strconv.Itoa(n), "--threshold", "1"}, true, n},
		{"one token below", in, []string{"--limit", strconv.Itoa(n + 1), "--threshold", "1"}, false, n + 1},
		{"empty list", "[]", []string{"--limit", "1"}, false, 1},
		{"top-level system counts", `{"system":"` + strings.Repeat(" word", 50) + `","messages":[{"role":"user","content":"hi"}]}`, []string{"--limit", "51", "--threshold", "1"}, true, 51},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(t, tc.input, append([]string{"compact", "--check"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			m := jsonKeys(t, out, "should_compact", "tokens", "threshold_tokens")
			var should bool
			var tokens, thresh int
			json.Unmarshal(m["should_compact"], &should)
			json.Unmarshal(m["tokens"], &tokens)
			json.Unmarshal(m["threshold_tokens"], &thresh)
			if should != tc.should || thresh != tc.thresh || (tc.input == in && tokens != n) {
				t.Errorf("got should %v tokens %d threshold %d; want %v %d %d", should, tokens, thresh, tc.should, n, tc.thresh)
			}
		})
	}
}

type compactOutput struct {
	Messages       []json.RawMessage          `json:"messages"`
	Compacted      bool                       `json:"compacted"`
	Stats          map[string]json.RawMessage `json:"stats"`
	Archive        string                     `json:"archive"`
	Summary        string                     `json:"summary"`
	Tokens         int                        `json:"tokens"`
	Threshold      int                        `json:"threshold_tokens"`
	BelowThreshold bool                       `json:"below_threshold"`
	Reason         string                     `json:"reason"`
	Attempts       int                        `json:"attempts"`
}

func decodeCompact(t *testing.T, out string) compactOutput {
	t.Helper()
	var o compactOutput
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		t.Fatalf("bad output: %v\n%s", err, out)
	}
	return o
}

func TestCompactCommand(t *testing.T) {
	in := compactHistory()
	file := filepath.Join(t.TempDir(), "session.json")
	if err := os.WriteFile(file, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "nested", "archive")
	n := compactTokens(t, in)
	code, out, errs := runCLI(t, "", "compact", "--dir", dir, "--session", "s/1", "--limit", strconv.Itoa(n), file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	jsonKeys(t, out, compactResultKeys...)
	o := decodeCompact(t, out)
	if !o.Compacted || !o.BelowThreshold || o.Reason != "" || o.Attempts != 1 {
		t.Fatalf("compacted %v below %v reason %q attempts %d", o.Compacted, o.BelowThreshold, o.Reason, o.Attempts)
	}
	var statKeys []string
	for k := range o.Stats {
		statKeys = append(statKeys, k)
	}
	slices.Sort(statKeys)
	if want := []string{"compacted_message_count", "compacted_token_count", "compaction_ratio", "original_token_count", "retained_message_count"}; !slices.Equal(statKeys, want) {
		t.Errorf("stats keys = %q, want %q", statKeys, want)
	}
	if string(o.Stats["original_token_count"]) != strconv.Itoa(n) {
		t.Errorf("original_token_count = %s, want %d", o.Stats["original_token_count"], n)
	}
	// Archive: <dir>/<safe session>/compact-<basic ISO 8601 UTC>-1.json.
	if ok, _ := regexp.MatchString(`^compact-\d{8}T\d{6}Z-1\.json$`, filepath.Base(o.Archive)); !ok || filepath.Dir(o.Archive) != filepath.Join(dir, "s%2F1") {
		t.Errorf("archive = %s", o.Archive)
	}
	data, err := os.ReadFile(o.Archive)
	if err != nil {
		t.Fatal(err)
	}
	archived, err := agentctx.UnmarshalMessages(data)
	if err != nil || len(archived) == 0 || !bytes.Contains(data, []byte("\n  {\n    \"role\": ")) {
		t.Errorf("archive is not the indented middle: %v", err)
	}
	// The messages: head, the summary, the tail; still paired.
	msgs, err := agentctx.UnmarshalMessages([]byte("[" + string(bytes.Join(rawSlices(o.Messages), []byte(","))) + "]"))
	if err != nil {
		t.Fatal(err)
	}
	if msgs[0].Role != agentctx.RoleSystem || msgs[1].Role != agentctx.RoleUser || msgs[1].Content.Text() != o.Summary {
		t.Errorf("head/summary wrong: %s %s", o.Messages[0], o.Messages[1])
	}
	if len(archived)+len(msgs)-1 != 11 {
		t.Errorf("archived %d + kept %d != 11 messages", len(archived), len(msgs)-1)
	}
	if rep := agentctx.ValidatePairing(msgs); !rep.Valid {
		t.Errorf("output unpaired: %v", rep.Err())
	}
	for _, w := range []string{"## Goals and key decisions", "Make the build pass.", "## Errors and fixes", "make"} {
		if !strings.Contains(o.Summary, w) {
			t.Errorf("summary lacks %q", w)
		}
	}
	// The summary's pointers name the archive's file (issue 21); nothing
	// volatile (issue 14): the same input gives the same archive, so the
	// same summary (checked below).
	if !strings.Contains(o.Summary, "\n## "+compact.PointersTitle+"\n") || !strings.Contains(o.Summary, "→ "+o.Archive+" (") {
		t.Error("the summary's pointers do not name the archive")
	}
	if after, _ := os.ReadFile(file); string(after) != in {
		t.Error("the input file changed")
	}

	// A second run of the same input reuses its archive: the same messages
	// are archived once.
	code, out, _ = runCLI(t, in, "compact", "--dir", dir, "--session", "s/1", "--limit", strconv.Itoa(n))
	if o2 := decodeCompact(t, out); code != 0 || o2.Archive != o.Archive || o2.Summary != o.Summary {
		t.Errorf("second archive = %s (exit %d), want %s; same summary %v", o2.Archive, code, o.Archive, o2.Summary == o.Summary)
	}
}

func rawSlices(rs []json.RawMessage) [][]byte {
	out := make([][]byte, len(rs))
	for i, r := range rs {
		out[i] = r
	}
	return out
}

func TestCompactNotNeeded(t *testing.T) {
	in := compactHistory()
	dir := t.TempDir()
	twice := strconv.Itoa(2 * compactTokens(t, in)) // below the threshold, with a tail of a tenth
	for _, tc := range []struct {
		name      string
		args      []string
		compacted bool
		reason    string
	}{
		{"below the threshold", []string{"--limit", twice}, false, "below_threshold"},
		{"--force", []string{"--force", "--limit", twice}, true, ""},
		{"--force with a tail of everything (default limit)", []string{"--force"}, false, "nothing_to_compact"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(t, in, append([]string{"compact", "--dir", dir}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			o := decodeCompact(t, out)
			if o.Compacted != tc.compacted || o.Reason != tc.reason {
				t.Fatalf("compacted %v reason %q", o.Compacted, o.Reason)
			}
			if !tc.compacted {
				for k, v := range o.Stats {
					if string(v) != "0" {
						t.Errorf("stats %s = %s, want 0", k, v)
					}
				}
				if len(o.Messages) != 11 || o.Summary != "" || o.Archive != "" {
					t.Errorf("not compacted, but %d messages, summary %q, archive %q", len(o.Messages), o.Summary, o.Archive)
				}
			}
		})
	}
}

func TestCompactUsageErrors(t *testing.T) {
	in := compactHistory()
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	for _, tc := range []struct {
		name  string
		input string
		args  []string
		want  string
	}{
		{"limit 0", in, []string{"--limit", "0"}, "--limit"},
		{"negative threshold", in, []string{"--threshold", "-1"}, "--threshold"},
		{"NaN threshold", in, []string{"--threshold", "NaN"}, "--threshold"},
		{"negative tail ratio", in, []string{"--tail-ratio", "-0.1"}, "--tail-ratio"},
		{"negative retries", in, []string{"--max-retries", "-1"}, "--max-retries"},
		{"negative backoff", in, []string{"--backoff", "-1s"}, "--backoff"},
		{"unknown summarizer", in, []string{"--summarizer", "gpt"}, "--summarizer"},
		{"model without a model summarizer", in, []string{"--model", "x"}, "--model"},
		{"openai without key or base URL", in, []string{"--summarizer", "openai"}, "OPENAI_API_KEY"},
		{"empty session", in, []string{"--session", ""}, "--session"},
		{"unknown flag", in, []string{"--bogus"}, "bogus"},
		{"bad JSON", `[{"role":`, nil, "line 1"},
		{"missing file", "", []string{filepath.Join(t.TempDir(), "nope.json")}, "nope.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(t, tc.input, append([]string{"compact"}, tc.args...)...)
			if code != cli.ExitUsage || out != "" {
				t.Errorf("exit %d, stdout %q; want 2 and nothing written", code, out)
			}
			if !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
				t.Errorf("stderr = %q, want one line mentioning %q", errs, tc.want)
			}
		})
	}
}

// fakeMessagesAPI answers the Anthropic Messages API from a list of
// statuses (200 answers with summary text), then repeats the last one.
type fakeMessagesAPI struct {
	mu       sync.Mutex
	statuses []int
	calls    int
	keys     []string
}

func (f *fakeMessagesAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	f.mu.Lock()
	st := f.statuses[min(f.calls, len(f.statuses)-1)]
	f.calls++
	f.keys = append(f.keys, r.Header.Get("X-Api-Key")+r.Header.Get("Authorization"))
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "0")
	w.WriteHeader(st)
	if st != 200 {
		io.WriteString(w, `{"type":"error","error":{"type":"api_error","message":"scripted"}}`)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/v1/chat/") {
		io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"## Goals and key decisions\n- Build and test."}}]}`)
		return
	}
	io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"## Goals and key decisions\n- Build and test."}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
}

func TestCompactModelSummarizers(t *testing.T) {
	const key = "sk-SECRET-KEY-do-not-log"
	in := compactHistory()
	n := compactTokens(t, in)
	tests := []struct {
		name      string
		env       map[string]string
		args      []string
		statuses  []int
		code      int
		compacted bool
		calls     int
	}{
		{"anthropic, key from the environment", map[string]string{"ANTHROPIC_API_KEY": key}, []string{"--summarizer", "anthropic"}, []int{200}, 0, true, 1},
		{"anthropic, key by flag, 500 then success", nil, []string{"--summarizer", "anthropic", "--api-key", key}, []int{500, 200}, 0, true, 2},
		{"anthropic, always 500: original messages", map[string]string{"ANTHROPIC_API_KEY": key}, []string{"--summarizer", "anthropic"}, []int{500}, 0, false, 3},
		{"anthropic, always 500, --strict", map[string]string{"ANTHROPIC_API_KEY": key}, []string{"--summarizer", "anthropic", "--strict"}, []int{500}, 1, false, 3},
		{"anthropic, --max-retries 0", map[string]string{"ANTHROPIC_API_KEY": key}, []string{"--summarizer", "anthropic", "--max-retries", "0"}, []int{500, 200}, 0, false, 1},
		{"openai-compatible local server, no key", nil, []string{"--summarizer", "openai", "--model", "qwen3:8b"}, []int{429, 200}, 0, true, 2},
		{"openai, key from the environment", map[string]string{"OPENAI_API_KEY": key}, []string{"--summarizer", "openai"}, []int{200}, 0, true, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"} {
				t.Setenv(k, tc.env[k])
			}
			api := &fakeMessagesAPI{statuses: tc.statuses}
			srv := httptest.NewServer(api)
			defer srv.Close()
			base := srv.URL
			if strings.Contains(tc.name, "openai") {
				base += "/v1"
			}
			args := append([]string{"compact", "-v", "--no-archive", "--backoff", "1ms", "--limit", strconv.Itoa(n), "--base-url", base}, tc.args...)
			code, out, errs := runCLI(t, in, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, errs)
			}
			if api.calls != tc.calls {
				t.Errorf("%d calls, want %d", api.calls, tc.calls)
			}
			if strings.Contains(errs, key) || strings.Contains(out, key) {
				t.Errorf("the API key was printed:\n%s", errs)
			}
			if tc.code != 0 {
				if out != "" {
					t.Errorf("stdout on failure: %q", out)
				}
				return
			}
			o := decodeCompact(t, out)
			if o.Compacted != tc.compacted {
				t.Fatalf("compacted %v, want %v\n%s", o.Compacted, tc.compacted, errs)
			}
			if tc.compacted && !strings.Contains(o.Summary, "- Build and test.") {
				t.Errorf("summary = %q", o.Summary)
			}
			if !tc.compacted && (o.Reason != "summarizer_failed" || len(o.Messages) != 11) {
				t.Errorf("reason %q, %d messages", o.Reason, len(o.Messages))
			}
			// A failed summary is said on stderr without -v too.
			if warned := strings.Contains(errs, "agentctx: warning: the summarizer failed after"); warned == tc.compacted {
				t.Errorf("summarizer failure warning printed: %v, want %v:\n%s", warned, !tc.compacted, errs)
			}
			if failed := strings.Count(errs, "summary attempt failed"); failed != tc.calls-btoiCompact(tc.compacted) {
				t.Errorf("%d failed attempts logged, want %d:\n%s", failed, tc.calls-btoiCompact(tc.compacted), errs)
			}
			if strings.Contains(tc.name, "key") && !strings.Contains(tc.name, "no key") && api.keys[0] != key && api.keys[0] != "Bearer "+key {
				t.Errorf("key sent = %q", api.keys[0])
			}
		})
	}
}

func btoiCompact(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestCompactStrictArchive(t *testing.T) {
	in := compactHistory()
	n := compactTokens(t, in)
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Not strict: logged, compaction goes on.
	code, out, errs := runCLI(t, in, "compact", "--dir", blocker, "--limit", strconv.Itoa(n))
	if o := decodeCompact(t, out); code != 0 || !o.Compacted || o.Archive != "" || !strings.Contains(errs, "not archived") || strings.Count(errs, "\n") != 1 {
		t.Errorf("exit %d compacted %v archive %q stderr %q", code, o.Compacted, o.Archive, errs)
	}
	// Strict: exit 1 with the cause, nothing written.
	code, out, errs = runCLI(t, in, "compact", "--strict", "--dir", blocker, "--limit", strconv.Itoa(n))
	if code != cli.ExitFailure || out != "" || !strings.Contains(errs, blocker) {
		t.Errorf("exit %d stdout %q stderr %q", code, out, errs)
	}
}
