package respitems_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/lib/respcompact"
	"github.com/agentctx/agentctx/internal/lib/respitems"
)

var input = []string{
	`{"type":"message","role":"developer","content":"Be brief."}`,
	`{"role":"user","content":[{"type":"input_text","text":"Fix it."}]}`,
	`{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"e"}`,
	`{"type":"function_call","id":"fc_1","call_id":"c1","name":"bash","arguments":"{\"command\":\"make\"}","status":"completed"}`,
	`{"type":"function_call_output","call_id":"c1","output":"make: ok","status":"completed"}`,
	`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done.","annotations":[]}]}`,
}

// items returns the input items as subslices of one body, the array
// written compactly (as clients write it), and the body.
func items() ([][]byte, []byte) {
	body := []byte("[" + strings.Join(input, ",") + "]")
	out := make([][]byte, len(input))
	at := 1
	for i, s := range input {
		out[i] = body[at : at+len(s)]
		at += len(s) + 1
	}
	return out, body
}

// spliced returns AppendSplice's array, checking that SpliceParts' parts
// make the same bytes, in at most parts parts (when not 0).
func spliced(t *testing.T, body []byte, its [][]byte, msgs []agentctx.Message, groups [][]int, out []agentctx.Message, match []int, parts int) string {
	t.Helper()
	want := respitems.AppendSplice(nil, its, msgs, groups, out, match)
	got := respitems.SpliceParts(body, its, msgs, groups, out, match)
	if !bytes.Equal(bytes.Join(got, nil), want) {
		t.Errorf("SpliceParts makes %s, AppendSplice %s", bytes.Join(got, nil), want)
	}
	if parts > 0 && len(got) > parts {
		t.Errorf("%d parts, want at most %d", len(got), parts)
	}
	return string(want)
}

func TestMessagesAndSplice(t *testing.T) {
	its, body := items()
	msgs, groups, err := respitems.Messages(its)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 5 || msgs[0].Role != agentctx.RoleSystem || msgs[2].Role != agentctx.RoleAssistant || len(msgs[2].ToolCalls) != 1 ||
		msgs[3].Role != agentctx.RoleTool || msgs[3].ToolCallID != "c1" || len(groups[2]) != 2 {
		t.Fatalf("mapped to %d messages, groups %v", len(msgs), groups)
	}
	all := "[" + input[0] + "," + input[1] + "," + input[2] + "," + input[3] + "," + input[4] + "," + input[5] + "]"

	// Kept as they are: the items as they came.
	match, err := respitems.Match(msgs, msgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	// (one part of the body's, between the brackets)
	if got := spliced(t, body, its, msgs, groups, msgs, match, 3); got != all {
		t.Errorf("unchanged messages spliced as %s", got)
	}

	// A result pruned: its item with only "output" replaced; an equal
	// message built apart matches by its encoding.
	out := append([]agentctx.Message(nil), msgs...)
	out[3] = agentctx.NewMessage(agentctx.RoleTool, agentctx.Text("[pruned]"))
	out[3].ToolCallID = "c1"
	out[1] = agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.TextBlock("Fix it.")))
	match, _ = respitems.Match(msgs, out, nil)
	// What the pipeline says of out (unchanged but for message 3) finds
	// the same match without encoding the kept messages.
	if m2, _ := respitems.Match(msgs, out, []int{0, -1, 2, -1, 4}); !slices.Equal(m2, match) {
		t.Errorf("match with sources %v, without %v", m2, match)
	}
	want := "[" + input[0] + "," + input[1] + "," + input[2] + "," + input[3] + `,{"type":"function_call_output","call_id":"c1","output":"[pruned]","status":"completed"},` + input[5] + "]"
	if got := spliced(t, body, its, msgs, groups, out, match, 7); got != want {
		t.Errorf("pruned result spliced as\n%s\nwant\n%s", got, want)
	}

	// A summary holding a provider's window: the window's items, then its
	// text.
	window := []json.RawMessage{json.RawMessage(input[1]), json.RawMessage(`{"type":"compaction","id":"cmp_1","encrypted_content":"x"}`)}
	sum, err := respcompact.Summary(window)
	if err != nil {
		t.Fatal(err)
	}
	out = []agentctx.Message{msgs[0], agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(sum)), msgs[4]}
	match, _ = respitems.Match(msgs, out, nil)
	_, rest, _ := respcompact.Split(sum)
	text, _ := json.Marshal(rest)
	want = "[" + input[0] + "," + input[1] + `,{"type":"compaction","id":"cmp_1","encrypted_content":"x"},{"type":"message","role":"user","content":[{"type":"input_text","text":` + string(text) + `}]},` + input[5] + "]"
	if got := spliced(t, body, its, msgs, groups, out, match, 0); got != want {
		t.Errorf("summary spliced as\n%s\nwant\n%s", got, want)
	}
}

func TestParseErrors(t *testing.T) {
	for _, s := range []string{`[]`, `"x"`, `{"role":"user","content":3}`, `{`} {
		if _, _, err := respitems.Messages([][]byte{[]byte(s)}); err == nil {
			t.Errorf("%s: no error", s)
		}
	}
}

// FuzzSplice: any input array maps without a panic, and the items of
// unchanged messages splice back to a valid array of the same items.
func FuzzSplice(f *testing.F) {
	f.Add("[" + input[0] + "," + input[2] + "," + input[3] + "," + input[4] + "]")
	f.Add(`[{"type":"custom_tool_call","call_id":"x","input":"a"},{"type":"custom_tool_call_output","call_id":"x","output":[{"type":"input_text","text":"t"}]}]`)
	f.Add(`[{"type":"web_search_call","id":"ws"},{"role":"user","content":[{"type":"input_image","image_url":"u"}]}]`)
	f.Fuzz(func(t *testing.T, s string) {
		var raw []json.RawMessage
		if json.Unmarshal([]byte(s), &raw) != nil {
			return
		}
		its := make([][]byte, len(raw))
		for i, r := range raw {
			its[i] = r
		}
		msgs, groups, err := respitems.Messages(its)
		if err != nil {
			return
		}
		match, err := respitems.Match(msgs, msgs, nil)
		if err != nil {
			return
		}
		out := respitems.AppendSplice(nil, its, msgs, groups, msgs, match)
		if parts := respitems.SpliceParts([]byte(s), its, msgs, groups, msgs, match); !bytes.Equal(bytes.Join(parts, nil), out) {
			t.Fatalf("SpliceParts makes %s, AppendSplice %s", bytes.Join(parts, nil), out)
		}
		var back []json.RawMessage
		if err := json.Unmarshal(out, &back); err != nil || len(back) != len(raw) {
			t.Fatalf("spliced %s as %s (%v)", s, out, err)
		}
	})
}
