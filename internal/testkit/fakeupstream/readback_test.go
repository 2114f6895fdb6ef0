package fakeupstream_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
)

// readBackOptions are a ReadBack model's options in these tests: "make"
// produces, "fill" fills, "read" reads a path, "byid" reads an id.
func readBackOptions(mode fakeupstream.ReadMode) fakeupstream.ReadBackOptions {
	return fakeupstream.ReadBackOptions{
		Mode: mode,
		Produce: func(*fakeupstream.Call) (fakeupstream.ToolCall, bool) {
			return fakeupstream.ToolCall{Name: "make"}, true
		},
		Fillers: 1,
		Filler: func(*fakeupstream.Call, int) (fakeupstream.ToolCall, bool) {
			return fakeupstream.ToolCall{Name: "fill"}, true
		},
		ReadPath: func(_ *fakeupstream.Call, path string) (fakeupstream.ToolCall, bool) {
			return fakeupstream.ToolCall{Name: "read", Input: map[string]any{"path": path}}, true
		},
		ReadID: func(_ *fakeupstream.Call, id string, offset int) (fakeupstream.ToolCall, bool) {
			return fakeupstream.ToolCall{Name: "byid", Input: map[string]any{"id": id, "offset": offset}}, true
		},
	}
}

func call(results ...string) *fakeupstream.Call {
	return &fakeupstream.Call{Header: http.Header{}, Results: results, AllText: strings.Join(results, "\n"),
		Body: map[string]any{}}
}

const ref = "<knowledge_list>\n<knowledge id=\"tool_result_t1\" chars=\"62000\">\n<head>\nline 1\n</head>\n</knowledge>\n</knowledge_list>\n<file>/ws/t1.txt</file> (the whole content: read it with your file tool)"

func TestReadBackByPath(t *testing.T) {
	m := fakeupstream.NewReadBack(readBackOptions(fakeupstream.ByPath))
	steps := []struct {
		call *fakeupstream.Call
		tool string
	}{
		{call(), "make"},
		{call(ref), "fill"},
		{&fakeupstream.Call{Header: http.Header{}, Results: []string{"filled"}, AllText: ref + "\nfilled"}, "read"},
	}
	for i, s := range steps {
		r := m.Script(s.call)
		if len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != s.tool {
			t.Fatalf("step %d: %+v, want a call of %s\n%s", i, r, s.tool, m.Report())
		}
	}
	if got := m.Reads()[0].Call.Input["path"]; got != "/ws/t1.txt" {
		t.Errorf("read path %v", got)
	}
	r := m.Script(call("line 1\nSECRET_TOKEN=tok_abc\nline 3"))
	if r.Text != "TOKEN=tok_abc" || m.Answer() != r.Text || m.Leaked() != "" || m.Early() != ref {
		t.Errorf("answer %q (%q), leaked %q, early %q\n%s", r.Text, m.Answer(), m.Leaked(), m.Early(), m.Report())
	}
}

func TestReadBackByIDPages(t *testing.T) {
	m := fakeupstream.NewReadBack(readBackOptions(fakeupstream.ByID))
	m.Script(call())
	m.Script(call(ref))
	r := m.Script(&fakeupstream.Call{Header: http.Header{}, Results: []string{"filled"}, AllText: ref + "\nfilled"})
	if len(r.ToolCalls) != 1 || r.ToolCalls[0].Input["id"] != "tool_result_t1" || r.ToolCalls[0].Input["offset"] != 0 {
		t.Fatalf("first read %+v", r)
	}
	r = m.Script(call("page one\n\n[Read limit reached. Continue with get_knowledge_by_id(artifact_id=\"tool_result_t1\", offset=40000)]"))
	if len(r.ToolCalls) != 1 || r.ToolCalls[0].Input["offset"] != 40000 {
		t.Fatalf("second read %+v\n%s", r, m.Report())
	}
	if r = m.Script(call("page two SECRET_TOKEN=tok_xyz")); r.Text != "TOKEN=tok_xyz" || len(m.Reads()) != 2 {
		t.Errorf("answer %q after %d reads\n%s", r.Text, len(m.Reads()), m.Report())
	}
}

func TestReadBackFromSummaryOnly(t *testing.T) {
	o := readBackOptions(fakeupstream.ByPath)
	o.FromSummary, o.SummaryTitle = true, "# Summary"
	m := fakeupstream.NewReadBack(o)
	m.Script(call())
	m.Script(call(ref))
	// No summary yet: another filler, though the reference is there.
	if r := m.Script(call(ref, "filled")); len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != "fill" {
		t.Fatalf("before the summary: %+v", r)
	}
	// A summary without pointers: the pointer elsewhere in the request
	// may not be used.
	c := call("filled", ref)
	c.Body = map[string]any{"messages": []any{map[string]any{"role": "user", "content": "# Summary\n\nnothing to point at"}}}
	if r := m.Script(c); r.Text != "TOKEN=not found" || len(m.Reads()) != 0 {
		t.Errorf("answer %+v after %d reads\n%s", r, len(m.Reads()), m.Report())
	}
	// A summary request gets a summary without pointers.
	sc := call()
	sc.Header.Set(fakeupstream.DefaultSummaryHeader, "1")
	if r := m.Script(sc); !strings.HasPrefix(r.Text, "# Summary") || strings.Contains(r.Text, "<file>") {
		t.Errorf("summary %q", r.Text)
	}
}
