package decodecache

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/testkit/memtest"
)

type msg struct {
	p    Print
	text string
}

func (m *msg) Print() Print { return m.p }
func (m *msg) Size() int64  { return int64(m.p.N) + 100 }

// scanList scans and decodes the list of body with cache c.
func scanList(t *testing.T, c *Cache[*msg], body string) []*msg {
	t.Helper()
	ls := &Scan[*msg]{Cache: c, Prefix: "p\x00", Member: "messages", Data: []byte(body)}
	if _, err := rawjson.MembersFunc(ls.Data, ls.ValueAt); err != nil {
		t.Fatal(err)
	}
	out, err := ls.Decode(func(raw []byte) (*msg, error) { return &msg{p: c.PrintOf(raw), text: string(raw)}, nil })
	if err != nil {
		t.Fatal(err)
	}
	for k, m := range out {
		if m.text != string(ls.Items[k]) {
			t.Fatalf("item %d is %s, its entry %s", k, ls.Items[k], m.text)
		}
	}
	return out
}

// TestScanReuses: a request that sends the last one's messages again
// reuses their entries; a changed message, a changed first message or
// spaces moved are decoded again.
func TestScanReuses(t *testing.T) {
	c := New[*msg](1 << 20)
	first := scanList(t, c, `{"messages":[{"a":1},{"b":2}]}`)
	for _, tc := range []struct {
		body   string
		reused []bool
	}{
		{`{"messages":[{"a":1},{"b":2},{"c":3}]}`, []bool{true, true, false}},
		{`{"messages":[{"a":1}, {"b":2},{"c":4}]}`, []bool{true, true, false}},
		{`{"messages":[{"a":1},{"b":3},{"c":4}]}`, []bool{true, false, true}},
		{`{"messages":[{"a":2},{"b":3},{"c":4}]}`, []bool{false, false, false}},
		{`{"x":[{"a":1}],"messages":[]}`, nil},
	} {
		prev := map[string]*msg{}
		for _, m := range first {
			prev[m.text] = m
		}
		got := scanList(t, c, tc.body)
		if len(got) != len(tc.reused) {
			t.Fatalf("%s: %d messages", tc.body, len(got))
		}
		for k, m := range got {
			if (prev[m.text] == m) != tc.reused[k] {
				t.Errorf("%s: message %d reused %v, want %v", tc.body, k, prev[m.text] == m, tc.reused[k])
			}
		}
		first = got
	}
}

// TestBound: the cache keeps to its bound, drops the least recently used
// conversation first and does not keep one larger than the bound.
func TestBound(t *testing.T) {
	c := New[*msg](1000)
	put := func(key string, n int) {
		c.Put(key, List[*msg]{Entries: []*msg{{p: Print{N: n}}}})
	}
	put("a", 300) // 400 bytes each
	put("b", 300)
	c.Get("a")
	put("c", 300) // drops b
	if c.Bytes() != 800 || c.Get("b").Entries != nil || c.Get("a").Entries == nil || c.Get("c").Entries == nil {
		t.Fatalf("holds %d bytes, b %v", c.Bytes(), c.Get("b"))
	}
	put("d", 2000)
	if c.Get("d").Entries != nil || c.Bytes() > 1000 {
		t.Fatalf("kept a conversation over the bound (%d bytes)", c.Bytes())
	}
	put("a", 100) // replaced
	if c.Bytes() != 600 || c.Len() != 2 {
		t.Fatalf("holds %d bytes, %d conversations", c.Bytes(), c.Len())
	}
	var nilc *Cache[*msg]
	nilc.Put("a", List[*msg]{})
	if nilc.Get("a").Entries != nil || nilc.Bytes() != 0 || nilc.Len() != 0 {
		t.Fatal("a nil cache holds something")
	}
}

// TestDecodeMessages: the cache keeps the messages once, in the list
// DecodeMessages returned; the next request takes a message it sends
// again from that list instead of decoding it, and its size counts them.
// A list cached without messages (by Decode) has its messages decoded
// again.
func TestDecodeMessages(t *testing.T) {
	c := New[*msg](1 << 20)
	decoded := 0
	var key string
	scan := func(body string) ([]*msg, []agentctx.Message) {
		t.Helper()
		ls := &Scan[*msg]{Cache: c, Prefix: "p\x00", Member: "messages", Data: []byte(body)}
		if _, err := rawjson.MembersFunc(ls.Data, ls.ValueAt); err != nil {
			t.Fatal(err)
		}
		es, ms, err := ls.DecodeMessages(func(raw []byte) (*msg, agentctx.Message, error) {
			decoded++
			m, err := agentctx.DecodeMessage(raw)
			return &msg{p: c.PrintOf(raw), text: string(raw)}, m, err
		})
		if err != nil {
			t.Fatal(err)
		}
		if ls.cached.Entries != nil || ls.cached.Messages != nil {
			t.Fatal("the scan still holds the last request's list")
		}
		key = ls.Key
		return es, ms
	}
	_, first := scan(`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}`)
	es, next := scan(`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]}`)
	if decoded != 3 || len(next) != 3 || len(es) != 3 {
		t.Fatalf("decoded %d messages, returned %d", decoded, len(next))
	}
	for k := range first {
		if next[k].Content.Text() != first[k].Content.Text() {
			t.Fatalf("message %d is %v, was %v", k, next[k], first[k])
		}
	}
	if next[2].Content.Text() != "c" {
		t.Fatalf("new message: %v", next[2])
	}
	if got := c.Get(key); len(got.Messages) != 3 || &got.Messages[0] != &next[0] {
		t.Fatal("the cache does not hold the list returned")
	}
	want := ListBytes(next)
	for _, e := range es {
		want += e.Size()
	}
	if c.Bytes() != want {
		t.Fatalf("holds %d bytes, want %d", c.Bytes(), want)
	}
	// Cached by Decode, without messages: decoded again.
	scanList(t, c, `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}`)
	decoded = 0
	scan(`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}`)
	if decoded != 2 {
		t.Fatalf("decoded %d of 2 messages whose list had none kept", decoded)
	}
}

// TestScanErrors: a list the scan cannot split is an error, not a panic.
func TestScanErrors(t *testing.T) {
	c := New[*msg](1 << 20)
	scanList(t, c, `{"messages":[{"a":1},{"b":2}]}`)
	for _, body := range []string{`{"messages":[{"a":1},{"b":2}`, `{"messages":[{"a":1} {"b":2}]}`, `{"messages":[{"a":1},{"b":2` + strings.Repeat(" ", 3)} {
		ls := &Scan[*msg]{Cache: c, Prefix: "p\x00", Member: "messages", Data: []byte(body)}
		if _, err := rawjson.MembersFunc(ls.Data, ls.ValueAt); err == nil {
			t.Errorf("%s: no error", body)
		}
	}
	if n := CountNew([]*msg{nil, {}, nil}); n != 2 {
		t.Fatal(fmt.Sprint(n))
	}
}

// TestScanGrowsByDoubling holds the lists of a first request of 100,000
// elements to 2.7 times their final size in allocation, and those of like
// elements (100,000 messages of about 100 bytes) to 2.2 times: append
// grows a long slice by a quarter at a time, and it allocated five times
// their size (12 MB for Items alone; issue 24, item 7), doubling 2.6
// times. A request the cache knows sizes them once. A few small elements
// before a large one do not size the lists for a body of small ones.
func TestScanGrowsByDoubling(t *testing.T) {
	list := func(n int, elem func(i int) string) []byte {
		var b strings.Builder
		b.WriteString(`{"messages":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(elem(i))
		}
		b.WriteString(`]}`)
		return []byte(b.String())
	}
	tiny := list(100_000, func(int) string { return `{"a":1}` })
	like := list(100_000, func(i int) string {
		return fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%07d","content":"ok %d"}]}`, i, i)
	})
	big := list(21, func(i int) string {
		if i == 20 {
			return `{"a":"` + strings.Repeat("x", 1<<20) + `"}`
		}
		return `{"a":1}`
	})
	// enough small elements to size the lists from, then a large one
	manyThenBig := list(2001, func(i int) string {
		if i == 2000 {
			return `{"a":"` + strings.Repeat("x", 4<<20) + `"}`
		}
		return `{"a":1}`
	})
	const item = 24 + 8 // a []byte and an entry
	for _, tc := range []struct {
		name string
		body []byte
		n    int
		max  float64 // allocated, in units of n items
		// maxBody bounds what is allocated as a share of the body (0: not)
		maxBody float64
	}{
		{"first", tiny, 100_000, 2.7, 0},  // doubling: twice the last capacity, 131,072 here
		{"known", tiny, 100_000, 1.05, 0}, // the cached request's length
		{"like", like, 100_000, 1.2, 0},   // sized from the average: 2.2 in steps of at most 8
		{"small first", big, 21, 0, 0.01},
		{"many small first", manyThenBig, 2001, 0, 0.1}, // in steps of 8 (0.07): the average is not the body's (4.4 sized from it)
	} {
		c := New[*msg](1 << 30)
		if tc.name == "known" {
			ls := &Scan[*msg]{Cache: c, Prefix: "p\x00", Member: "messages", Data: tc.body}
			if _, err := ls.scan(len(`{"messages":`)); err != nil {
				t.Fatal(err)
			}
			if _, err := ls.Decode(func(raw []byte) (*msg, error) { return &msg{p: c.PrintOf(raw)}, nil }); err != nil {
				t.Fatal(err)
			}
		}
		ls := &Scan[*msg]{Cache: c, Prefix: "p\x00", Member: "messages", Data: tc.body}
		got := memtest.AllocatedBy(func() {
			if _, err := ls.scan(len(`{"messages":`)); err != nil {
				t.Fatal(err)
			}
		})
		if len(ls.Items) != tc.n {
			t.Fatalf("%s: %d items", tc.name, len(ls.Items))
		}
		t.Logf("%s request: %d bytes (%.2f items' worth each, %.2f of the body)", tc.name, got, float64(got)/float64(tc.n*item), float64(got)/float64(len(tc.body)))
		if tc.max > 0 && float64(got) > tc.max*float64(tc.n*item) {
			t.Errorf("%s request: splitting %d elements allocated %d bytes, want at most %.0f", tc.name, tc.n, got, tc.max*float64(tc.n*item))
		}
		if tc.maxBody > 0 && float64(got) > tc.maxBody*float64(len(tc.body)) {
			t.Errorf("%s request: splitting %d elements of %d bytes allocated %d", tc.name, tc.n, len(tc.body), got)
		}
	}
}
