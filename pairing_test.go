package agentctx_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit/memtest"
)

func parseMsgs(t *testing.T, s string) []agentctx.Message {
	t.Helper()
	msgs, err := agentctx.UnmarshalMessages([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func issueList(rep agentctx.PairingReport) string {
	var out []string
	for _, is := range rep.Issues {
		out = append(out, fmt.Sprintf("%s@%d.%d", is.Kind, is.Message, is.Block))
	}
	return strings.Join(out, " ")
}

const (
	use  = `{"type":"tool_use","id":"%s","name":"bash","input":{}}`
	res  = `{"type":"tool_result","tool_use_id":"%s","content":"ok"}`
	call = `{"id":"%s","type":"function","function":{"name":"bash","arguments":"{}"}}`
)

// orphanText is the text block RepairPairing keeps for an orphan result
// of content "ok".
func orphanText(id string) string {
	return `{"type":"text","text":"Tool result for call \"` + id + `\" (kept as text: it answers no tool call of the turn before it):\nok"}`
}

func asst(blocks ...string) string {
	return `{"role":"assistant","content":[` + strings.Join(blocks, ",") + `]}`
}
func user(blocks ...string) string {
	return `{"role":"user","content":[` + strings.Join(blocks, ",") + `]}`
}
func oaCalls(ids ...string) string {
	var cs []string
	for _, id := range ids {
		cs = append(cs, fmt.Sprintf(call, id))
	}
	return `{"role":"assistant","content":null,"tool_calls":[` + strings.Join(cs, ",") + `]}`
}
func oaTool(id string) string  { return `{"role":"tool","tool_call_id":"` + id + `","content":"ok"}` }
func list(ms ...string) string { return "[" + strings.Join(ms, ",") + "]" }
func u(id string) string       { return fmt.Sprintf(use, id) }
func r(id string) string       { return fmt.Sprintf(res, id) }

const think = `{"type":"thinking","thinking":"hmm","signature":"sig"}`
const txt = `{"type":"text","text":"note"}`
const plainUser = `{"role":"user","content":"go on"}`
const exitMsg = `{"role":"exit","content":"","extra":{"exit_status":"Submitted"}}`

var pairingCases = []struct {
	name   string
	msgs   string
	issues string
}{
	{"empty", list(), ""},
	{"no tools", list(plainUser, `{"role":"assistant","content":"hi"}`), ""},
	{"anthropic pair", list(plainUser, asst(u("a")), user(r("a"))), ""},
	{"parallel calls answered out of order", list(asst(think, u("a"), u("b")), user(r("b"), r("a"))), ""},
	{"thinking and text around calls", list(asst(think, txt, u("a")), user(r("a"), txt)), ""},
	{"unanswered: no next message", list(plainUser, asst(u("a"))), "unanswered_call@1.0"},
	{"unanswered: next is assistant", list(asst(u("a")), `{"role":"assistant","content":"x"}`), "unanswered_call@0.0"},
	{"one of two parallel unanswered", list(asst(think, u("a"), u("b")), user(r("a"))), "unanswered_call@0.2"},
	{"result two messages late", list(asst(u("a")), plainUser, user(r("a"))), "unanswered_call@0.0 orphan_result@2.0"},
	{"orphan result", list(plainUser, user(r("zzz"))), "orphan_result@1.0"},
	{"duplicate result", list(asst(u("a")), user(r("a"), r("a"))), "duplicate_result@1.1"},
	{"tool_use id reused in a later turn", list(asst(u("a")), user(r("a")), asst(u("a")), user(r("a"))), "reused_tool_use_id@2.0"},
	{"duplicate call id in one message", list(asst(u("a"), u("a")), user(r("a"))), "duplicate_call_id@0.1"},
	{"openai id reused across turns", list(oaCalls("k"), oaTool("k"), oaCalls("k"), oaTool("k"), oaCalls("k"), oaTool("k")), ""},
	{"openai reused id answered late", list(oaCalls("k"), oaTool("k"), oaCalls("k"), plainUser, oaTool("k")), "unanswered_call@2.0 orphan_result@4.-1"},
	{"openai duplicate call id in one message", list(oaCalls("k", "k"), oaTool("k")), "duplicate_call_id@0.1"},
	{"exit message", list(plainUser, exitMsg), "not_model_message@1.-1"},
	{"exit message between a call and its result", list(oaCalls("c"), exitMsg, oaTool("c")), "not_model_message@1.-1"},
	{"missing call id", list(asst(u("")), plainUser), "missing_id@0.0"},
	{"result after text", list(asst(u("a")), user(txt, r("a"))), "result_not_first@1.1"},
	{"openai pair", list(plainUser, oaCalls("c1", "c2"), oaTool("c2"), oaTool("c1"), `{"role":"assistant","content":"done"}`), ""},
	{"openai unanswered", list(oaCalls("c1", "c2"), oaTool("c1"), plainUser), "unanswered_call@0.1"},
	{"openai tool after user", list(oaCalls("c1"), plainUser, oaTool("c1")), "unanswered_call@0.0 orphan_result@2.-1"},
	{"openai orphan tool message", list(plainUser, oaTool("x")), "orphan_result@1.-1"},
	{"openai result in a block is not an answer", list(oaCalls("c1"), user(r("c1"))), "unanswered_call@0.0 orphan_result@1.0"},
	// A window longer than the check searches in order (it indexes it).
	{"twenty parallel calls", list(asst(blocks(u, 0, 20, -1)...), user(blocks(r, 0, 20, -1)...)), ""},
	{"twenty parallel calls: one unanswered, a duplicate id, a duplicate result",
		list(asst(append(blocks(u, 0, 20, -1), u("c7"))...), user(append(blocks(r, 0, 20, 12), r("c3"))...), user(r("c12"))),
		"unanswered_call@0.7 duplicate_call_id@0.20 duplicate_result@1.19 orphan_result@2.0"},
}

// blocks returns the blocks f makes for the ids c<from> to c<to-1>,
// without c<skip>, in reverse order.
func blocks(f func(string) string, from, to, skip int) []string {
	var out []string
	for k := to - 1; k >= from; k-- {
		if k != skip {
			out = append(out, f(fmt.Sprintf("c%d", k)))
		}
	}
	return out
}

func TestValidatePairing(t *testing.T) {
	for _, tt := range pairingCases {
		t.Run(tt.name, func(t *testing.T) {
			rep := agentctx.ValidatePairing(parseMsgs(t, tt.msgs))
			if got := issueList(rep); got != tt.issues {
				t.Errorf("issues = %q, want %q", got, tt.issues)
			}
			if rep.Valid != (tt.issues == "") {
				t.Errorf("valid = %v", rep.Valid)
			}
		})
	}
}

func TestRepairPairing(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"valid unchanged", list(asst(u("a")), user(r("a"))), list(asst(u("a")), user(r("a")))},
		{"synthetic result in next user message",
			list(asst(think, u("a"), u("b")), user(r("a"), txt)),
			list(asst(think, u("a"), u("b")), user(r("a"), `{"type":"tool_result","tool_use_id":"b","content":"`+agentctx.MissingResultText+`","is_error":true}`, txt))},
		{"synthetic result message at the end",
			list(plainUser, asst(u("a"))),
			list(plainUser, asst(u("a")), user(`{"type":"tool_result","tool_use_id":"a","content":"`+agentctx.MissingResultText+`","is_error":true}`))},
		{"string user message gets results first",
			list(asst(u("a")), plainUser),
			list(asst(u("a")), user(`{"type":"tool_result","tool_use_id":"a","content":"`+agentctx.MissingResultText+`","is_error":true}`, `{"type":"text","text":"go on"}`))},
		// A message of nothing but orphans keeps its turn, the orphans as
		// text: dropping it would join two turns, or end the list on the
		// assistant's turn (a prefill the client did not send).
		{"orphan alone in its message kept as text",
			list(plainUser, user(r("x")), `{"role":"assistant","content":"y"}`),
			list(plainUser, user(orphanText("x")), `{"role":"assistant","content":"y"}`)},
		{"orphan alone in the last message kept as text",
			list(plainUser, `{"role":"assistant","content":"y"}`, user(r("x"))),
			list(plainUser, `{"role":"assistant","content":"y"}`, user(orphanText("x")))},
		{"orphan and duplicate alone in the last message kept as text",
			list(asst(u("a")), user(r("a")), `{"role":"assistant","content":"y"}`, user(r("x"), r("a"))),
			list(asst(u("a")), user(r("a")), `{"role":"assistant","content":"y"}`, user(orphanText("x"), orphanText("a")))},
		{"orphan alone in the only message kept as text", list(user(r("x"))), list(user(orphanText("x")))},
		{"openai orphan tool messages at the end become the user's turn",
			list(plainUser, `{"role":"assistant","content":"y"}`, oaTool("x"), oaTool("z")),
			list(plainUser, `{"role":"assistant","content":"y"}`, `{"role":"user","content":"Tool result for call \"x\" (kept as text: it answers no tool call of the turn before it):\nok\n\nTool result for call \"z\" (kept as text: it answers no tool call of the turn before it):\nok"}`)},
		{"openai orphan tool message alone becomes the user's turn",
			list(oaTool("x")),
			list(`{"role":"user","content":"Tool result for call \"x\" (kept as text: it answers no tool call of the turn before it):\nok"}`)},
		{"openai orphan tool message before a user message dropped",
			list(plainUser, `{"role":"assistant","content":"y"}`, oaTool("x"), plainUser),
			list(plainUser, `{"role":"assistant","content":"y"}`, plainUser)},
		{"orphan dropped, text kept",
			list(plainUser, user(r("x"), txt)),
			list(plainUser, user(txt))},
		{"results moved first", list(asst(u("a")), user(txt, r("a"))), list(asst(u("a")), user(r("a"), txt))},
		{"openai synthetic tool message after the run",
			list(oaCalls("c1", "c2"), oaTool("c1"), plainUser),
			list(oaCalls("c1", "c2"), oaTool("c1"), `{"role":"tool","content":"`+agentctx.MissingResultText+`","tool_call_id":"c2"}`, plainUser)},
		{"openai orphan tool message dropped", list(plainUser, oaTool("x")), list(plainUser)},
		{"reused tool_use id renamed with its result",
			list(asst(u("a")), user(r("a")), asst(u("a")), user(r("a"))),
			list(asst(u("a")), user(r("a")), asst(u("a_2")), user(r("a_2")))},
		{"renamed id is unused",
			list(asst(u("a")), user(r("a")), asst(u("a_2")), user(r("a_2")), asst(u("a")), user(r("a"))),
			list(asst(u("a")), user(r("a")), asst(u("a_2")), user(r("a_2")), asst(u("a_3")), user(r("a_3")))},
		{"reused unanswered tool_use gets a result with its new id",
			list(asst(u("a")), user(r("a")), asst(u("a"))),
			list(asst(u("a")), user(r("a")), asst(u("a_2")), user(`{"type":"tool_result","tool_use_id":"a_2","content":"`+agentctx.MissingResultText+`","is_error":true}`))},
		{"openai reused ids kept", list(oaCalls("k"), oaTool("k"), oaCalls("k"), oaTool("k")), list(oaCalls("k"), oaTool("k"), oaCalls("k"), oaTool("k"))},
		{"exit message dropped", list(plainUser, exitMsg), list(plainUser)},
		{"exit message between call and result dropped", list(oaCalls("c"), exitMsg, oaTool("c")), list(oaCalls("c"), oaTool("c"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := parseMsgs(t, tt.in)
			before, _ := agentctx.MarshalMessages(in)
			out, repairs := agentctx.RepairPairing(in)
			got, err := agentctx.MarshalMessages(out)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("repaired\n got: %s\nwant: %s\nrepairs: %+v", got, tt.want, repairs)
			}
			if rep := agentctx.ValidatePairing(out); !rep.Valid {
				t.Errorf("repair left issues: %s", issueList(rep))
			}
			if after, _ := agentctx.MarshalMessages(in); string(after) != string(before) {
				t.Error("RepairPairing modified its input")
			}
			if (tt.in == tt.want) != (len(repairs) == 0) {
				t.Errorf("repairs = %+v", repairs)
			}
		})
	}
}

// TestRepairProperty: for random histories of both shapes with random
// damage, ids reused across turns and stray role "exit" messages, the
// repaired history is valid whenever no message holds two calls with one id.
func TestRepairProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 2000 {
		msgs := randomHistory(rng, iter)
		in := parseMsgs(t, list(msgs...))
		if slices.ContainsFunc(agentctx.ValidatePairing(in).Issues, func(is agentctx.PairingIssue) bool {
			return is.Kind == agentctx.IssueDuplicateCallID
		}) {
			continue // two calls of one message share an id: not repairable
		}
		out, _ := agentctx.RepairPairing(in)
		// Repair never makes the list end on the assistant's turn when
		// the client's last model message was not the assistant's.
		if last := lastModelRole(in); last != "" && last != agentctx.RoleAssistant &&
			(len(out) == 0 || out[len(out)-1].Role == agentctx.RoleAssistant) {
			b, _ := agentctx.MarshalMessages(in)
			o, _ := agentctx.MarshalMessages(out)
			t.Fatalf("case %d: the repaired list ends on the assistant's turn\n in: %s\nout: %s", iter, b, o)
		}
		rep := agentctx.ValidatePairing(out)
		var left []agentctx.PairingIssue
		for _, is := range rep.Issues {
			if is.Kind != agentctx.IssueDuplicateCallID && is.Kind != agentctx.IssueMissingID {
				left = append(left, is)
			}
		}
		if len(left) > 0 {
			b, _ := agentctx.MarshalMessages(in)
			o, _ := agentctx.MarshalMessages(out)
			t.Fatalf("case %d: repair left %v\n in: %s\nout: %s", iter, left, b, o)
		}
	}
}

// lastModelRole is the role of the last message of msgs a model accepts,
// or "".
func lastModelRole(msgs []agentctx.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if agentctx.IsModelRole(msgs[i].Role) {
			return msgs[i].Role
		}
	}
	return ""
}

func randomHistory(rng *rand.Rand, seed int) []string {
	var msgs []string
	id := 0
	next := func() string {
		if id > 0 && rng.IntN(8) == 0 {
			return fmt.Sprintf("t%d_%d", seed, rng.IntN(id)+1) // a model reusing an id
		}
		id++
		return fmt.Sprintf("t%d_%d", seed, id)
	}
	for range rng.IntN(8) + 1 {
		switch rng.IntN(6) {
		case 0:
			msgs = append(msgs, plainUser)
		case 1, 2: // anthropic turn
			var calls, results []string
			var ids []string
			for range rng.IntN(3) + 1 {
				x := next()
				ids = append(ids, x)
				calls = append(calls, u(x))
			}
			if rng.IntN(2) == 0 {
				calls = append([]string{think}, calls...)
			}
			msgs = append(msgs, asst(calls...))
			for _, x := range ids {
				if rng.IntN(5) > 0 {
					results = append(results, r(x))
				}
			}
			rng.Shuffle(len(results), func(i, j int) { results[i], results[j] = results[j], results[i] })
			if rng.IntN(4) == 0 {
				results = append([]string{txt}, results...)
			}
			if rng.IntN(6) == 0 {
				results = append(results, r("orphan"+next()))
			}
			if len(results) > 0 {
				msgs = append(msgs, user(results...))
			}
		case 3, 4: // openai turn
			var ids []string
			for range rng.IntN(3) + 1 {
				ids = append(ids, next())
			}
			msgs = append(msgs, oaCalls(ids...))
			for _, x := range ids {
				if rng.IntN(5) > 0 {
					msgs = append(msgs, oaTool(x))
				}
			}
		case 5:
			msgs = append(msgs, oaTool("stray"+next()))
		}
		if rng.IntN(20) == 0 {
			msgs = append(msgs, exitMsg)
		}
	}
	if rng.IntN(5) == 0 && len(msgs) > 1 {
		i := rng.IntN(len(msgs))
		msgs = slices.Delete(msgs, i, i+1)
	}
	return msgs
}

func TestSendableMessages(t *testing.T) {
	in := parseMsgs(t, list(plainUser, exitMsg, `{"role":"developer","content":"d"}`, `{"role":"model","content":"m"}`))
	out, repairs := agentctx.SendableMessages(in)
	got, _ := agentctx.MarshalMessages(out)
	if string(got) != list(plainUser, `{"role":"developer","content":"d"}`) {
		t.Errorf("sendable = %s", got)
	}
	if len(repairs) != 2 || repairs[0] != (agentctx.Repair{Action: agentctx.RepairDroppedNonModel, Message: 1, Block: -1, Role: "exit"}) || repairs[1].Message != 3 {
		t.Errorf("repairs = %+v", repairs)
	}
	if out, repairs := agentctx.SendableMessages(out); len(out) != 2 || len(repairs) != 0 {
		t.Errorf("second pass changed %+v", repairs)
	}
}

// pairingHistory is a 400-message history of parallel Anthropic calls and
// OpenAI calls, with an unanswered call, an orphan result and a result
// after text every 50 turns, for the benchmarks.
func pairingHistory(b *testing.B) []agentctx.Message {
	b.Helper()
	var parts []string
	for turn := range 100 {
		a, c := fmt.Sprintf("toolu_%d_a", turn), fmt.Sprintf("toolu_%d_b", turn)
		o := fmt.Sprintf("call_%d", turn)
		switch {
		case turn%50 == 7:
			parts = append(parts, asst(fmt.Sprintf(use, a), fmt.Sprintf(use, c)), user(`{"type":"text","text":"hi"}`, fmt.Sprintf(res, a), fmt.Sprintf(res, "nowhere")))
		default:
			parts = append(parts, asst(`{"type":"text","text":"working"}`, fmt.Sprintf(use, a), fmt.Sprintf(use, c)), user(fmt.Sprintf(res, c), fmt.Sprintf(res, a)))
		}
		parts = append(parts, `{"role":"assistant","content":null,"tool_calls":[`+fmt.Sprintf(call, o)+`]}`,
			`{"role":"tool","tool_call_id":"`+o+`","content":"done"}`)
	}
	msgs, err := agentctx.UnmarshalMessages([]byte("[" + strings.Join(parts, ",") + "]"))
	if err != nil {
		b.Fatal(err)
	}
	return msgs
}

func BenchmarkValidatePairing(b *testing.B) {
	msgs := pairingHistory(b)
	b.ReportAllocs()
	for b.Loop() {
		if agentctx.ValidatePairing(msgs).Valid {
			b.Fatal("valid")
		}
	}
}

func BenchmarkRepairPairing(b *testing.B) {
	msgs := pairingHistory(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, reps := agentctx.RepairPairing(msgs); len(reps) == 0 {
			b.Fatal("no repairs")
		}
	}
}

// TestHoldsToolResult: a message answers a tool call when it is an OpenAI
// "tool" message or holds a tool_result block, among other blocks or not;
// calls, text and other forms of content do not.
func TestHoldsToolResult(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want bool
	}{
		{`{"role":"tool","tool_call_id":"c1","content":"ok"}`, true},
		{`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}`, true},
		{`{"role":"user","content":[{"type":"text","text":"and"},{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}`, true},
		{`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]}`, false},
		{`{"role":"user","content":"tool_result"}`, false},
		{`{"role":"user","content":{"type":"tool_result"}}`, false},
		{`{"role":"user"}`, false},
	} {
		m, err := agentctx.DecodeMessage([]byte(tc.raw))
		if err != nil {
			t.Fatal(err)
		}
		if got := m.HoldsToolResult(); got != tc.want {
			t.Errorf("%s: HoldsToolResult() = %v, want %v", tc.raw, got, tc.want)
		}
	}
}

// TestHoldsToolCall: a message makes a call with an id when a tool_use
// block or an OpenAI tool_calls entry has it; a result of the id, text
// naming it, or another id do not.
func TestHoldsToolCall(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want bool
	}{
		{`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]}`, true},
		{`{"role":"assistant","content":[{"type":"text","text":"t1"},{"type":"tool_use","id":"t2","name":"Bash","input":{}},{"type":"tool_use","id":"t1","name":"Read","input":{}}]}`, true},
		{`{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"{}"}}]}`, true},
		{`{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Bash","input":{}}]}`, false},
		{`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}`, false},
		{`{"role":"tool","tool_call_id":"t1","content":"ok"}`, false},
		{`{"role":"assistant","content":"t1"}`, false},
	} {
		m, err := agentctx.DecodeMessage([]byte(tc.raw))
		if err != nil {
			t.Fatal(err)
		}
		if got := m.HoldsToolCall("t1"); got != tc.want {
			t.Errorf("%s: HoldsToolCall(t1) = %v, want %v", tc.raw, got, tc.want)
		}
	}
}

// ValidatePairing's map of ids is sized for the calls the messages make,
// not for half of them (1.3 MB for 10 MB of OpenHands' turns, whose
// actions are text; issue 24 item 7).
func TestPairingSizedForItsCalls(t *testing.T) {
	var msgs []agentctx.Message
	for i := range 20_000 {
		role := agentctx.RoleUser
		if i%2 == 1 {
			role = agentctx.RoleAssistant
		}
		msgs = append(msgs, agentctx.NewMessage(role, agentctx.Text(fmt.Sprint("step ", i))))
	}
	msgs = append(msgs,
		agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.ToolUseBlock("toolu_1", "Bash", nil))),
		agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock("toolu_1", agentctx.Text("ok"), false))))
	var rep agentctx.PairingReport
	n := memtest.AllocatedBy(func() { rep = agentctx.ValidatePairing(msgs) })
	if !rep.Valid {
		t.Fatalf("invalid: %+v", rep.Issues)
	}
	if n > 64<<10 {
		t.Errorf("ValidatePairing of 20,002 messages and one call allocated %d bytes", n)
	}
}
