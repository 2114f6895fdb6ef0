package compact

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
)

// parseInputJSON is parseInput as json.Unmarshal reads it: what parseInput
// must agree with.
func parseInputJSON(raw json.RawMessage) (in toolInput, ok bool) {
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &in) != nil {
		return toolInput{}, false
	}
	in.cmd = commandOfJSON(in.Command, in.Cmd)
	if len(in.Todos) == 0 {
		in.Todos = in.TaskList
	}
	in.TaskList = nil
	in.Command, in.Cmd = nil, nil
	return in, true
}

func commandOfJSON(raws ...json.RawMessage) string {
	for _, raw := range raws {
		if len(raw) == 0 {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		var argv []string
		if json.Unmarshal(raw, &argv) == nil {
			return strings.Join(argv, " ")
		}
	}
	return ""
}

var toolInputCases = []string{
	``, `null`, `[]`, `"x"`, `{}`, ` {}`, `{"command":"ls -la"}`, `{"cmd":["git","status"]}`, `{"command":["a",1]}`,
	`{"command":null}`, `{"command":5,"cmd":"echo"}`, `{"command":{"a":1}}`,
	`{"file_path":"/a.go","old_string":"x","new_string":"y"}`, `{"path":"a","path":null}`, `{"path":null,"path":"b"}`,
	`{"path":"a","path":"b"}`, `{"file_path":5}`, `{"file_path":true}`, `{"file_path":["a"]}`, `{"file_path":{}}`,
	`{"File_Path":"/upper.go"}`, `{"COMMAND":"ls"}`, `{"command":"a","Command":"b"}`, `{"Command":"b","command":"a"}`,
	`{"path":"\u0041\n\t\"q\"","url":"http://x/\u00e9"}`, `{"pattern":"\ud800"}`, "{\"query\":\"\xff\xfe\"}",
	`{"todos":[{"content":"a","status":"done"}],"task_list":[{"title":"b"}]}`, `{"task_list":[{"title":"b"}]}`,
	`{"todos":null,"task_list":[{"Title":"c"}]}`, `{"todos":"no"}`, `{"todos":[1]}`, `{"todos":[{"content":5}]}`,
	`{"unknown":{"deep":[1,2,{"x":null}]},"description":"d","prompt":"p"}`, `{"unknown":5}`, `{"a":1,}`, `{"a" 1}`,
	`{"command":"ls"} x`, `{"command":"ls"`, `{"filename":"f","target_file":"t","notebook_path":"n"}`,
	// U+212A KELVIN SIGN and U+017F LATIN SMALL LETTER LONG S fold to k and s.
	"{\"tas\u212a_list\":[{\"title\":\"kelvin\"}]}", "{\"ſtr\":1,\"old_\u017ftr\":\"long s\"}", `{"new_str":"n","old_str":"o"}`,
	// todos as todosOf reads them, and the forms it leaves to json.Unmarshal
	`{"todos":[]}`, `{"todos":null}`, `{"todos":[null,{"content":"a","status":null,"x":[1,{"y":2}]}]}`,
	`{"todos":[{"Content":"a"}]}`, "{\"todos\":[{\"ſtatus\":\"s\"}]}", `{"todos":[{"status":true}]}`, `{"todos":[[]]}`,
	`{"todos":[{"content":"a","content":"b"}]}`, `{"todos":[{"content":"a","title":"t"}],"todos":[{"status":"done"}]}`,
	`{"todos":[{"cont\u0065nt":"esc \"q\" \n"}],"task_list":[{"title":"x"}]}`, `{"todos":{"content":"a"}}`,
}

// parseInput reads every input as json.Unmarshal does: exact names,
// names that match only ignoring case, duplicates, nulls, values of the
// wrong type, escapes, invalid UTF-8 and invalid JSON.
func TestParseInputIsUnmarshal(t *testing.T) {
	for _, c := range toolInputCases {
		want, wok := parseInputJSON(json.RawMessage(c))
		for name, parse := range map[string]func(json.RawMessage) (toolInput, bool){"parseInput": parseInput, "borrowInput": borrowInput} {
			got, gok := parse(json.RawMessage(c))
			if gok != wok || !reflect.DeepEqual(got, want) {
				t.Errorf("%s(%s):\n got %+v %v\nwant %+v %v", name, c, got, gok, want, wok)
			}
		}
	}
}

func FuzzParseInput(f *testing.F) {
	for _, c := range toolInputCases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, c string) {
		want, wok := parseInputJSON(json.RawMessage(c))
		got, gok := parseInput(json.RawMessage(c))
		if gok != wok || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %+v %v\nwant %+v %v", c, got, gok, want, wok)
		}
		if got, gok := borrowInput(json.RawMessage(c)); gok != wok || !reflect.DeepEqual(got, want) {
			t.Fatalf("borrowInput(%q):\n got %+v %v\nwant %+v %v", c, got, gok, want, wok)
		}
	})
}

// Reading a shell call's input allocates its strings and nothing else (a
// summary of a long history reads tens of thousands).
func TestParseInputAllocatesItsStrings(t *testing.T) {
	raw := json.RawMessage(`{"command":"go test ./...","description":"run the tests","timeout":120000}`)
	if n := testing.AllocsPerRun(100, func() { parseInput(raw) }); n > 2 {
		t.Errorf("parseInput allocates %v times, want the 2 strings", n)
	}
}

// borrowInput reads an input's plain strings in place: a long Edit or
// command is not copied to be summarized (issue 24 item 7); a string with
// an escape is decoded.
func TestBorrowInputCopiesNothingPlain(t *testing.T) {
	raw := json.RawMessage(`{"file_path":"/src/main.go","old_string":"` + strings.Repeat("func old() {}", 100) + `","new_string":"a\tb"}`)
	if n := testing.AllocsPerRun(100, func() { borrowInput(raw) }); n > 2 {
		t.Errorf("borrowInput allocates %v times, want the 1 string with an escape", n)
	}
	if in, _ := borrowInput(raw); in.NewString != "a\tb" || len(in.OldString) != 1300 || in.FilePath != "/src/main.go" {
		t.Errorf("borrowInput = %+v", in)
	}
}

// A TodoWrite input (the whole list at every call) is read without
// reflection: borrowed, its list and the spans of its elements are the
// allocations (json.Unmarshal made 52 for this one; a long session has
// thousands; issue 24 item 7).
func TestTodosReadDirectly(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"todos":[`)
	for i := range 20 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"content":"step %d of the port","status":"pending","activeForm":"Doing step %d"}`, i, i)
	}
	b.WriteString(`]}`)
	raw := json.RawMessage(b.String())
	in, ok := borrowInput(raw)
	want, wok := parseInputJSON(raw)
	if !ok || !wok || !reflect.DeepEqual(in, want) || len(in.Todos) != 20 {
		t.Fatalf("borrowInput = %+v %v, want %+v", in, ok, want)
	}
	if n := testing.AllocsPerRun(100, func() { borrowInput(raw) }); n > 2 {
		t.Errorf("borrowInput of a TodoWrite allocates %.0f times", n)
	}
}

// Each TodoWrite call carries the whole list, and only the last one is
// summarized: a call is read without rendering its list (20 strings a
// call; issue 24 item 7), and the summary shows the last list.
func TestTodosRenderedOnce(t *testing.T) {
	list := func(done int) json.RawMessage {
		var b strings.Builder
		b.WriteString(`{"todos":[`)
		for i := range 20 {
			if i > 0 {
				b.WriteByte(',')
			}
			status := "pending"
			if i < done {
				status = "completed"
			}
			fmt.Fprintf(&b, `{"content":"step %d of the port","status":%q,"activeForm":"Doing step %d"}`, i, status, i)
		}
		b.WriteString(`]}`)
		return json.RawMessage(b.String())
	}
	x := newExtraction(100, 0)
	raw := list(3)
	if n := testing.AllocsPerRun(50, func() { x.call(1, "t", "TodoWrite", raw) }); n > 6 {
		t.Errorf("reading a TodoWrite call allocates %.0f times", n)
	}
	var msgs []agentctx.Message
	for i := range 5 {
		id := fmt.Sprint("todo_", i)
		msgs = append(msgs,
			agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.ToolUseBlock(id, "TodoWrite", list(i)))),
			agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock(id, agentctx.Text("ok"), false))))
	}
	summary, err := Extractive{}.Summarize(context.Background(), Request{Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(summary, "[x] step 3 of the port") || strings.Contains(summary, "[ ] step 3 of the port") {
		t.Errorf("the summary does not show the last todo list:\n%s", summary)
	}
}

// TestExtractiveSizesItsCalls: the extractive summary of 20,000 calls
// makes its list of calls once (with its map): grown step by step, they
// left 5.4 MB of garbage for 50,000 calls (issue 24, item 7).
func TestExtractiveSizesItsCalls(t *testing.T) {
	const n = 20_000
	var msgs []agentctx.Message
	for i := range n {
		id := fmt.Sprint("toolu_", i)
		msgs = append(msgs,
			agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.ToolUseBlock(id, "Bash", json.RawMessage(fmt.Sprintf(`{"command":"ls %d"}`, i))))),
			agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock(id, agentctx.Text("ok"), false))))
	}
	x := newExtraction(n, 0)
	made := cap(x.calls)
	for i := range msgs {
		x.add(i, &msgs[i])
	}
	if len(x.calls) != n || made < n || cap(x.calls) != made {
		t.Errorf("%d calls in a list made for %d, now of %d", len(x.calls), made, cap(x.calls))
	}
	if len(x.byID) != n {
		t.Errorf("%d calls by id", len(x.byID))
	}
}

// TestInputStringsBorrows: the strings of a tool input without escapes
// are its own bytes, not copies (a compaction of 10,000 calls copied 5 MB
// of inputs only to scan them; issue 24 item 7).
func TestInputStringsBorrows(t *testing.T) {
	raw := []byte(`{"command":"go test ./...","file_path":"/src/main.go","n":3}`)
	var got []string
	inputStrings(raw, nil, func(s string) { got = append(got, strings.Clone(s)) })
	if want := []string{"go test ./...", "/src/main.go"}; !slices.Equal(got, want) {
		t.Fatalf("inputStrings = %q, want %q", got, want)
	}
	if n := testing.AllocsPerRun(100, func() { inputStrings(raw, nil, func(string) {}) }); n > 0 {
		t.Errorf("inputStrings allocates %.0f times for strings without escapes", n)
	}
}

// TestExtractionKeepsNoInputBytes: what the summary's scans keep of a
// tool input (its terms) is copied, so a caller that reuses the input's
// bytes afterwards changes nothing the extraction holds.
func TestExtractionKeepsNoInputBytes(t *testing.T) {
	input := []byte(`{"command":"go test ./pkg/sync_session/... -run TestHandleInfo","file_path":"/src/handleInfo.go"}`)
	snapshot := func(keys []string) []string { // copies of the bytes
		out := make([]string, len(keys))
		for i, k := range keys {
			out[i] = strings.Clone(k)
		}
		slices.Sort(out)
		return out
	}
	x := newExtraction(1, 0)
	x.call(0, "t1", "Bash", input)
	var terms []string
	for k := range x.terms {
		terms = append(terms, k)
	}
	ts := termsOf([]agentctx.Message{agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.ToolUseBlock("t1", "Bash", input)))}, false)
	before, order := snapshot(terms), snapshot(ts.order)
	if len(before) == 0 || len(order) == 0 {
		t.Fatalf("no terms found in %s", input)
	}
	for i := range input {
		input[i] = 'Z'
	}
	var after []string
	for k := range x.terms {
		after = append(after, k)
	}
	if got := snapshot(after); !slices.Equal(got, before) || !slices.Equal(snapshot(ts.order), order) {
		t.Errorf("the terms changed with the input's bytes: %q, %q; were %q, %q", got, ts.order, before, order)
	}
}

// keepingCounter counts bytes and keeps a copy-free reference to every
// text it is given, as a caller's Counter may.
type keepingCounter struct{ kept []string }

func (k *keepingCounter) Count(s string) int { k.kept = append(k.kept, s); return len(s) / 4 }

// TestSummaryKeepsNoInputBytes: the extractive summary reads tool inputs
// in place (borrowInput, inputStrings), and neither what it returns nor
// what it hands the Counter shares their bytes: a caller who reuses an
// input's bytes afterwards changes neither.
func TestSummaryKeepsNoInputBytes(t *testing.T) {
	var msgs []agentctx.Message
	var inputs []json.RawMessage
	msgs = append(msgs, agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("fix the failing test in the session package")))
	for i := range 40 {
		var in json.RawMessage
		switch i % 4 {
		case 0:
			in = json.RawMessage(fmt.Sprintf(`{"command":"go test ./pkg/sync_session/... -run TestHandleInfo%d","description":"run it"}`, i))
		case 1:
			in = json.RawMessage(fmt.Sprintf(`{"file_path":"/work/src/pkg/sync_session/handle_info%d.go","old_string":"return nil","new_string":"return errClosed"}`, i))
		case 2:
			in = json.RawMessage(fmt.Sprintf(`{"command":"cat /work/src/pkg/sync_session/store%d.go"}`, i))
		default:
			in = json.RawMessage(fmt.Sprintf(`{"pattern":"handleInfo%d","path":"/work/src/pkg"}`, i))
		}
		inputs = append(inputs, in)
		id := fmt.Sprint("toolu_", i)
		name := []string{"Bash", "Edit", "Bash", "Grep"}[i%4]
		msgs = append(msgs,
			agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.ToolUseBlock(id, name, in))),
			agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock(id, agentctx.Text(fmt.Sprintf("ok %d\n/work/src/pkg/sync_session/handle_info%d.go:12: fixed", i, i)), i%5 == 3))))
	}
	todos := json.RawMessage(`{"todos":[{"content":"port the session store","status":"in_progress"},{"content":"run the sync_session tests","status":"pending"}]}`)
	inputs = append(inputs, todos)
	msgs = append(msgs,
		agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.ToolUseBlock("todo_1", "TodoWrite", todos))),
		agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock("todo_1", agentctx.Text("ok"), false))))
	k := &keepingCounter{}
	summary, err := Extractive{Counter: k}.Summarize(context.Background(), Request{Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	before := strings.Clone(summary)
	kept := make([]string, len(k.kept))
	for i, s := range k.kept {
		kept[i] = strings.Clone(s)
	}
	if !strings.Contains(summary, "sync_session") || !strings.Contains(summary, "port the session store") {
		t.Fatalf("the summary names none of the inputs, or not the todo list:\n%s", summary)
	}
	for _, in := range inputs {
		for i := range in {
			in[i] = '#'
		}
	}
	if summary != before {
		t.Errorf("the summary changed with the inputs' bytes:\n%s", summary)
	}
	for i, s := range k.kept {
		if s != kept[i] {
			t.Errorf("a text the counter kept changed with the inputs' bytes: %q, was %q", s, kept[i])
		}
	}
}

// collectInputStrings returns what inputStrings calls its function with.
func collectInputStrings(raw []byte) []string {
	var out []string
	inputStrings(raw, nil, func(s string) { out = append(out, strings.Clone(s)) })
	return out
}

// An escaped string of an input is decoded as json.Unmarshal decodes it
// (escapes, surrogates, invalid UTF-8), and one json.Unmarshal refuses is
// passed over, without json.Unmarshal's reflection (4.5 MB for a 10 MB
// request's compaction; issue 24 item 7).
func TestInputStringsDecodesAsUnmarshal(t *testing.T) {
	for _, lit := range []string{`"a\nb"`, `"\u00e9\t\"q\""`, `"\ud800x"`, `"\ud83d\ude00"`, "\"\\n\xff\"", `"\/\\"`, `"\q"`, `"\u12"`} {
		raw := []byte(`{"k":` + lit + `}`)
		var want []string
		var s string
		if json.Unmarshal([]byte(lit), &s) == nil {
			want = []string{s}
		}
		if got := collectInputStrings(raw); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", lit, got, want)
		}
	}
	raw := []byte(`{"command":"printf 'a\nb'","description":"two \"lines\""}`)
	if n := testing.AllocsPerRun(100, func() { inputStrings(raw, nil, func(string) {}) }); n > 2 {
		t.Errorf("inputStrings allocates %.0f times for two escaped strings", n)
	}
	// With a scratch of its caller's, the escaped strings of input after
	// input are decoded into one buffer: a compaction of real turns made a
	// string of each (2.3 MB for 10 MB of a Claude Code port's turns).
	var scratch []byte
	var got []string
	inputStrings(raw, &scratch, func(s string) { got = append(got, strings.Clone(s)) })
	if want := []string{"printf 'a\nb'", `two "lines"`}; !slices.Equal(got, want) {
		t.Errorf("with a scratch: %q, want %q", got, want)
	}
	if n := testing.AllocsPerRun(100, func() { inputStrings(raw, &scratch, func(string) {}) }); n > 0 {
		t.Errorf("inputStrings allocates %.0f times for two escaped strings with a scratch", n)
	}
}

// A result of several blocks is joined into the extraction's scratch, not
// a string of its own (2 MB for a compaction of 10 MB of a Claude Code
// port's turns; issue 24 item 7): the summary is the one of the same
// results as one text each, which it is not when a key line keeps the
// scratch's bytes (the next result's text overwrites them).
func TestJoinedResultsKeepNoScratch(t *testing.T) {
	var joined, single []agentctx.Message
	for _, msgs := range []*[]agentctx.Message{&joined, &single} {
		*msgs = append(*msgs, agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("make the build pass")))
	}
	for i := range 12 {
		id := fmt.Sprint("toolu_", i)
		in := json.RawMessage(fmt.Sprintf(`{"command":"go build ./cmd/tool%d"}`, i))
		parts := []string{fmt.Sprintf("error: tool%d.go:%d: undefined: handler%d", i, i+3, i), strings.Repeat(fmt.Sprintf("detail %d ", i), 4*i+1)}
		var blocks []agentctx.Block
		for _, p := range parts {
			blocks = append(blocks, agentctx.TextBlock(p))
		}
		for k, msgs := range []*[]agentctx.Message{&joined, &single} {
			content := agentctx.BlockList(blocks...)
			if k == 1 {
				content = agentctx.Text(strings.Join(parts, "\n"))
			}
			*msgs = append(*msgs,
				agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.ToolUseBlock(id, "Bash", in))),
				agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock(id, content, false))))
		}
	}
	got, err := Extractive{}.Summarize(context.Background(), Request{Messages: joined})
	if err != nil {
		t.Fatal(err)
	}
	want, err := Extractive{}.Summarize(context.Background(), Request{Messages: single})
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("joined results summarized otherwise:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(got, "undefined: handler0") {
		t.Errorf("the first failure's line is lost:\n%s", got)
	}
}

// scratchResultText is resultText, into one buffer.
func TestScratchResultText(t *testing.T) {
	img := agentctx.Block{Type: "image"}
	var scratch []byte
	for _, c := range []agentctx.Content{
		agentctx.Text("plain"),
		agentctx.BlockList(),
		agentctx.BlockList(agentctx.TextBlock("one")),
		agentctx.BlockList(agentctx.TextBlock("a"), agentctx.TextBlock("b\nc")),
		agentctx.BlockList(agentctx.TextBlock("see"), img, agentctx.TextBlock("")),
		agentctx.BlockList(img),
	} {
		got, _ := scratchResultText(c, &scratch)
		if want := resultText(c); got != want {
			t.Errorf("scratchResultText = %q, want %q", got, want)
		}
	}
	c := agentctx.BlockList(agentctx.TextBlock("a"), agentctx.TextBlock("b"))
	if n := testing.AllocsPerRun(100, func() { scratchResultText(c, &scratch) }); n > 0 {
		t.Errorf("scratchResultText allocates %.0f times with a scratch grown", n)
	}
}

// unixNewlines is the two replacements it stands for, in one copy.
func TestUnixNewlines(t *testing.T) {
	for _, s := range []string{"", "a", "\r", "\n", "\r\n", "\r\r\n", "\n\r", "a\r\nb\rc\n\r\r", "\r\n\r\n", "x\r"} {
		want := strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
		if got := unixNewlines(s); got != want {
			t.Errorf("unixNewlines(%q) = %q, want %q", s, got, want)
		}
	}
	s := strings.Repeat("line\r\n", 100) + "last\rend"
	if n := testing.AllocsPerRun(100, func() { unixNewlines(s) }); n > 1 {
		t.Errorf("unixNewlines allocates %.0f times", n)
	}
}

// A user message's text is made once for all the extraction asks of it
// (three times before: the CRLF of 10 MB of OpenHands' turns were
// replaced 7.5 MB over).
func TestUserTextMadeOnce(t *testing.T) {
	m := agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(strings.Repeat("please fix it\r\n", 50)))
	x := newExtraction(0, 0)
	x.add(0, &m) // the terms, once
	if n := testing.AllocsPerRun(50, func() { x.add(0, &m) }); n > 2 {
		t.Errorf("adding a user message with CRLF allocates %.0f times", n)
	}
}

// The pointers of a compaction are filled from the calls of the results
// that lack a tool or an input, not from a map of every call the
// compacted messages hold (1.6 MB for 10 MB of real turns; issue 24 item
// 7): the last call of an id fills it, and the allocations do not grow
// with the calls.
func TestPointersFilledFromTheirCalls(t *testing.T) {
	source := func(n int) []agentctx.Message {
		var msgs []agentctx.Message
		for i := range n {
			id := fmt.Sprint("toolu_", i%(n-1)) // the last id twice: the second call fills it
			in := json.RawMessage(fmt.Sprintf(`{"command":"make target%d"}`, i))
			msgs = append(msgs,
				agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.ToolUseBlock(id, fmt.Sprint("Bash", i), in))),
				agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock(id, agentctx.Text("ok"), false))))
		}
		return msgs
	}
	extra := []Pointer{{Kind: PointerResult, ArtifactID: "a", ToolCallID: "toolu_0"}, {Kind: PointerResult, ArtifactID: "b", ToolCallID: "toolu_7", ToolName: "Kept"}, {Kind: PointerResult, ArtifactID: "c", ToolCallID: "toolu_none"}}
	got := pointersOf(source(10), extra, nil)
	want := map[string][2]string{"a": {"Bash9", "make target9"}, "b": {"Kept", "make target7"}, "c": {"", ""}}
	for _, p := range got {
		if w := want[p.ArtifactID]; p.ToolName != w[0] || p.Input != w[1] {
			t.Errorf("pointer %s: tool %q input %q, want %q %q", p.ArtifactID, p.ToolName, p.Input, w[0], w[1])
		}
	}
	small, large := source(10), source(2000)
	few := testing.AllocsPerRun(20, func() { pointersOf(small, extra, nil) })
	many := testing.AllocsPerRun(20, func() { pointersOf(large, extra, nil) })
	if many > few+4 {
		t.Errorf("pointersOf allocates %.0f times over 2,000 calls, %.0f over 10", many, few)
	}
}

// The sentences of a text are yielded as its substrings, with no list of
// its lines or of them (2.3 MB for a compaction of 10 MB of OpenHands'
// turns; issue 24 item 7).
func TestSentencesAllocateNothing(t *testing.T) {
	text := "I looked at the handler first. Then the store seemed wrong here! Why is it closed? ok\n```go\nx := 1. y\n```\n- the fix: return errClosed from Close.\n\n"
	var got []string
	for s := range sentences(text) {
		got = append(got, s)
	}
	want := []string{"I looked at the handler first.", "Then the store seemed wrong here!", "Why is it closed? ok", "the fix: return errClosed from Close."}
	if !slices.Equal(got, want) {
		t.Fatalf("sentences = %q, want %q", got, want)
	}
	for s := range sentences(text) {
		if s != want[0] {
			t.Fatalf("first sentence %q", s)
		}
		break // the iterator stops when told
	}
	if n := testing.AllocsPerRun(100, func() {
		for range sentences(text) {
		}
	}); n > 0 {
		t.Errorf("sentences allocates %.0f times", n)
	}
}

// The assistant's texts are a list in message order, looked up by index
// (a map of them and a list of their indices were 2.7 MB for OpenHands'
// turns).
func TestAssistantTextOf(t *testing.T) {
	x := newExtraction(0, 3)
	for _, i := range []int{1, 4, 7} {
		m := agentctx.NewMessage(agentctx.RoleAssistant, agentctx.Text(fmt.Sprint("  text ", i, " ")))
		x.add(i, &m)
	}
	if cap(x.texts) != 3 {
		t.Errorf("the list of 3 texts grew to %d", cap(x.texts))
	}
	for i := range 9 {
		got, ok := x.textOf(i)
		if want := i == 1 || i == 4 || i == 7; ok != want || ok && got != fmt.Sprint("text ", i) {
			t.Errorf("textOf(%d) = %q, %v", i, got, ok)
		}
	}
}
