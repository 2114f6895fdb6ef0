package proxy

import (
	"fmt"
	"testing"
)

// The registry of conversations is bounded: past its size the least
// recently used conversation is forgotten (a conversation then seen anew
// under a key with none left keeps the key). Keys are derived from the
// opening, the same in every process.
func TestConversationsBoundedAndDeterministic(t *testing.T) {
	h := func(s string) openingHash {
		var o openingHash
		copy(o[:], s)
		return o
	}
	for _, tc := range []struct {
		name string
		run  func(c *conversations) []string
		want []string
	}{
		{"first keeps the key, others a suffix, same opening same key", func(c *conversations) []string {
			return []string{
				c.key("s", "s", h("main"), h(""), false),
				c.key("s", "s", h("sub"), h(""), false),
				c.key("s", "s", h("main"), h("r"), true),
				c.key("s", "s", h("sub"), h("q"), true),
				c.key("s", "s", h("sub"), h("q"), true),
			}
		}, []string{"s", "s-c23e445e8", "s", "s-c23e445e8", "s-c23e445e8"}},
		{"same start, a known reply: a new conversation without a reply is its own", func(c *conversations) []string {
			return []string{
				c.key("s", "s", h("a"), h("ra"), true),
				c.key("s", "s", h("a"), h(""), false),
				c.key("s", "s", h("a"), h("rb"), true),
				c.key("s", "s", h("a"), h(""), false),
				c.key("s", "s", h("a"), h("rc"), true),
			}
		}, []string{"s", "s-cb9f89375", "s-cb9f89375", "s-cf51081ad", "s-cf51081ad"}},
		{"the least recently used is forgotten", func(c *conversations) []string {
			c.max = 2
			out := []string{c.key("t", "t", h("x"), h(""), false), c.key("s", "s", h("a"), h(""), false)}
			out = append(out, c.key("s", "s", h("b"), h(""), false)) // a is first under s; x, the oldest, is forgotten
			out = append(out, c.key("t", "t", h("z"), h(""), false)) // t has none left: z keeps the key
			out = append(out, fmt.Sprint(c.len()))
			return out
		}, []string{"t", "s", "s-c1a84bb37", "t", "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c conversations
			got := tc.run(&c)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("keys %q, want %q", got, tc.want)
			}
		})
	}
}

// openingOf reads the start of a history: the system prompt, the
// messages before the first user message, that message's content, and the
// element after it once another follows; leadingElements splits no more
// of the list than that, and what precedes a fault.
func TestOpeningOf(t *testing.T) {
	for _, tc := range []struct {
		name, body           string
		before, first, reply string
	}{
		{"anthropic, first request", `{"system":"s","messages":[ {"role":"user","content":"hi"} ]}`, "", `"hi"`, ""},
		{"anthropic, prefill is no reply", `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"{"}]}`, "", `"hi"`, ""},
		{"anthropic, answered", `{"messages":[{"role":"user","content":"hi"}, {"role":"assistant","content":"yo"} ,{"role":"user","content":"more"}]}`, "", `"hi"`, `{"role":"assistant","content":"yo"}`},
		{"chat, system message", `{"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"},{"role":"assistant","content":"yo"},{"role":"user","content":"x"}]}`, `{"role":"system","content":"s"}`, `"hi"`, `{"role":"assistant","content":"yo"}`},
		{"responses, string input", `{"instructions":"i","input":"hi"}`, "", `"hi"`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := parseBody([]byte(tc.body), nil)
			if err != nil {
				t.Fatal(err)
			}
			o := openingOf(b)
			before := ""
			for _, el := range o.before {
				before += string(el)
			}
			if before != tc.before || string(o.first) != tc.first || string(o.reply) != tc.reply {
				t.Errorf("opening: before %s, first %s, reply %s; want %s, %s, %s", before, o.first, o.reply, tc.before, tc.first, tc.reply)
			}
		})
	}
	for _, tc := range []struct {
		list string
		want int
	}{
		{`[{"role":"user"},{"role":"assistant"},{"role":"user"},{"role":"assistant"},{"role":"user"}]`, 3},
		{`[{"role":"system"},{"role":"user"},{"role":"assistant"},{"role":"user"},{"role":"assistant"}]`, 4},
		{`[{"role":"user"},{"role":"assistant"},{"bad`, 2},
		{`[ ]`, 0},
	} {
		if got := len(leadingElements([]byte(tc.list))); got != tc.want {
			t.Errorf("leadingElements(%s): %d elements, want %d", tc.list, got, tc.want)
		}
	}
}
