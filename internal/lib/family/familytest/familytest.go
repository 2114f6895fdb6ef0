// Package familytest is the conformance suite every API family
// (internal/lib/family) passes: a family's test calls Run with fixtures of
// its own wire format, as testing/slogtest's callers do with a handler. A
// failure names the rule it broke.
package familytest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/internal/lib/family"
	"github.com/agentctx/agentctx/internal/lib/wire"
	"github.com/agentctx/agentctx/pricing"
)

// Fixtures are what a family's wire format looks like, for Run.
type Fixtures struct {
	// Stream is the data of each event of a streamed answer, in order:
	// its usage is Usage, its last event the terminal one.
	Stream [][]byte
	// Array is a streamed answer written as a JSON array (a
	// family.ArrayStreamer's), whose usage is Usage, its last element
	// the terminal one; ArrayPath and ArrayQuery name a request it
	// answers.
	Array      []byte
	ArrayPath  string
	ArrayQuery url.Values
	// Whole is a whole (non-streamed) answer whose usage is Usage.
	Whole []byte
	// Usage is the usage of Stream and of Whole.
	Usage pricing.Usage
	// Editable are request bodies the proxy edits; Uneditable ones it
	// passes on (Editable false), when the family has any.
	Editable, Uneditable [][]byte
	// Answer is a whole answer whose texts are AnswerParts (a family
	// with family.Summaries).
	Answer      []byte
	AnswerParts []string
}

// Endpoints returns the editable paths of the families the proxy serves
// (Gemini's with a model): a family claims none but its own.
func Endpoints() []string {
	return []string{"/v1/messages", "/v1/chat/completions", "/v1/responses",
		"/v1beta/models/gemini-2.5-pro:generateContent", "/v1beta/models/gemini-2.5-pro:streamGenerateContent"}
}

type rule struct {
	name string
	test func(t *testing.T, f family.Family, fx Fixtures)
}

var rules = []rule{
	{"info is complete and stable", func(t *testing.T, f family.Family, _ Fixtures) {
		in := f.Info()
		if in.Name == "" || in.Provider == "" || !strings.HasPrefix(in.Endpoint, "/v1") || in.List == "" || in.System == "" || len(in.Credentials) == 0 {
			t.Errorf("Info() = %+v: every field is needed", in)
		}
		if again := f.Info(); !reflect.DeepEqual(in, again) {
			t.Errorf("Info() changed between calls: %+v, then %+v", in, again)
		}
	}},
	{"claims its endpoint", func(t *testing.T, f family.Family, _ Fixtures) {
		if c := f.Claim(f.Info().Endpoint, http.Header{}); c < family.ClaimHint {
			t.Errorf("Claim(%s, no header) = %d, want at least ClaimHint", f.Info().Endpoint, c)
		}
	}},
	{"claims no other family's endpoint", func(t *testing.T, f family.Family, _ Fixtures) {
		for _, p := range Endpoints() {
			if !owns(f, p) {
				if c := f.Claim(p, http.Header{}); c != family.ClaimNone {
					t.Errorf("Claim(%s, no header) = %d, want ClaimNone", p, c)
				}
			}
		}
	}},
	{"a registry of the family alone routes its endpoint to it, editable", func(t *testing.T, f family.Family, _ Fixtures) {
		r, err := family.NewRegistry(f)
		if err != nil {
			t.Fatal(err)
		}
		if got, editable := r.Route(http.MethodPost, f.Info().Endpoint, nil, http.Header{}); got.Info().Name != f.Info().Name || !editable {
			t.Errorf("Route(POST %s) = %s, %v", f.Info().Endpoint, got.Info().Name, editable)
		}
		if _, editable := r.Route(http.MethodGet, f.Info().Endpoint, nil, http.Header{}); editable {
			t.Errorf("Route(GET %s) is editable", f.Info().Endpoint)
		}
	}},
	{"model endpoints: its paths with a model route to it, editable, with the model", func(t *testing.T, f family.Family, _ Fixtures) {
		me, ok := f.(family.ModelEndpoints)
		if !ok {
			t.Skip("no family.ModelEndpoints")
		}
		r, err := family.NewRegistry(f)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range Endpoints() {
			model, ok := me.EndpointModel(p)
			if !ok {
				continue
			}
			n++
			if model == "" || strings.ContainsAny(model, "/:") {
				t.Errorf("EndpointModel(%s) = %q", p, model)
			}
			if got, editable := r.Route(http.MethodPost, p, nil, http.Header{}); got.Info().Name != f.Info().Name || !editable {
				t.Errorf("Route(POST %s) = %s, %v", p, got.Info().Name, editable)
			}
			if c := f.Claim(p, http.Header{}); c != family.ClaimPath {
				t.Errorf("Claim(%s) = %d, want ClaimPath", p, c)
			}
		}
		if n == 0 {
			t.Error("no path of Endpoints() is one of its endpoints")
		}
	}},
	{"reads the usage of a whole answer", func(t *testing.T, f family.Family, fx Fixtures) {
		var r wire.UsageReader
		f.ReadWhole(&r, fx.Whole)
		if !r.Got || !r.Final || r.Usage != fx.Usage {
			t.Errorf("ReadWhole: usage %+v, got %v, final %v; want %+v", r.Usage, r.Got, r.Final, fx.Usage)
		}
	}},
	{"reads the usage of a stream, its last event terminal", func(t *testing.T, f family.Family, fx Fixtures) {
		var r wire.UsageReader
		for i, data := range fx.Stream {
			f.ReadEvent(&r, data)
			last := i == len(fx.Stream)-1
			if done := f.Terminal(data, r.Final); done != last {
				t.Errorf("event %d (%.60s): Terminal = %v, want %v", i, data, done, last)
			}
		}
		if !r.Got || !r.Final || r.Usage != fx.Usage {
			t.Errorf("ReadEvent: usage %+v, got %v, final %v; want %+v", r.Usage, r.Got, r.Final, fx.Usage)
		}
	}},
	{"array streams: reads the usage of a JSON array stream, its last element terminal", func(t *testing.T, f family.Family, fx Fixtures) {
		as, ok := f.(family.ArrayStreamer)
		if !ok {
			t.Skip("no family.ArrayStreamer")
		}
		if !as.ArrayStream(fx.ArrayPath, fx.ArrayQuery) {
			t.Errorf("ArrayStream(%s, %v) = false", fx.ArrayPath, fx.ArrayQuery)
		}
		if as.ArrayStream(f.Info().Endpoint, nil) {
			t.Errorf("ArrayStream(%s) = true: a whole answer", f.Info().Endpoint)
		}
		var els [][]byte
		var a wire.JSONArray
		emit := func(el []byte) { els = append(els, append([]byte(nil), el...)) }
		for i := range fx.Array { // a byte at a time: as cut as it can be
			a.Feed(fx.Array[i:i+1], emit)
		}
		a.End(emit)
		var r wire.UsageReader
		for i, el := range els {
			f.ReadEvent(&r, el)
			if done, last := f.Terminal(el, r.Final), i == len(els)-1; done != last {
				t.Errorf("element %d (%.60s): Terminal = %v, want %v", i, el, done, last)
			}
		}
		if len(els) < 2 || !r.Got || !r.Final || r.Usage != fx.Usage {
			t.Errorf("%d elements: usage %+v, got %v, final %v; want %+v", len(els), r.Usage, r.Got, r.Final, fx.Usage)
		}
		var whole wire.UsageReader
		f.ReadWhole(&whole, fx.Array)
		if !whole.Got || !whole.Final || whole.Usage != fx.Usage {
			t.Errorf("ReadWhole(the array): usage %+v, got %v, final %v; want %+v", whole.Usage, whole.Got, whole.Final, fx.Usage)
		}
	}},
	{"passes over what is not JSON", func(t *testing.T, f family.Family, _ Fixtures) {
		var r wire.UsageReader
		for _, data := range [][]byte{nil, []byte("not json"), []byte(`{"usage":`), []byte(`[1,2]`), []byte(`"usage"`)} {
			f.ReadEvent(&r, data)
			f.ReadWhole(&r, data)
			f.Terminal(data, false)
		}
		if r.Got {
			t.Errorf("usage read from no JSON: %+v", r.Usage)
		}
	}},
	{"editable bodies", func(t *testing.T, f family.Family, fx Fixtures) {
		for _, raw := range fx.Editable {
			if !f.Editable(split(t, raw)) {
				t.Errorf("Editable(%s) = false", raw)
			}
		}
		for _, raw := range fx.Uneditable {
			if f.Editable(split(t, raw)) {
				t.Errorf("Editable(%s) = true", raw)
			}
		}
	}},
	{"error bodies are one JSON object and a newline, with the message", func(t *testing.T, f family.Family, _ Fixtures) {
		e := family.Error{Type: "permission_error", Code: "forbidden", Message: `no "quotes" \ here`}
		b := f.ErrorBody(e)
		var v map[string]any
		if !bytes.HasSuffix(b, []byte("}\n")) || json.Unmarshal(b, &v) != nil || !strings.Contains(string(b), `no \"quotes\" \\ here`) {
			t.Errorf("ErrorBody = %s", b)
		}
	}},
	{"summaries: a request and its answer's text", func(t *testing.T, f family.Family, fx Fixtures) {
		s, ok := f.(family.Summaries)
		if !ok {
			t.Skip("no family.Summaries")
		}
		var v map[string]any
		if b := s.SummaryBody("m", "sys", "prompt", 100); json.Unmarshal(b, &v) != nil || v["model"] != "m" ||
			!strings.Contains(string(b), `"sys"`) || !strings.Contains(string(b), `"prompt"`) {
			t.Errorf("SummaryBody = %s", b)
		}
		h := http.Header{}
		s.SummaryHeader(h)
		if h.Get("Authorization") != "" || h.Get("X-Api-Key") != "" {
			t.Errorf("SummaryHeader set credentials: %v", h)
		}
		if got := s.AnswerParts(fx.Answer); !reflect.DeepEqual(got, fx.AnswerParts) {
			t.Errorf("AnswerParts = %q, want %q", got, fx.AnswerParts)
		}
		if got := s.AnswerParts([]byte("not json")); len(got) != 0 {
			t.Errorf("AnswerParts(not json) = %q", got)
		}
	}},
}

// Run checks f against every rule, each a subtest named by the rule.
func Run(t *testing.T, f family.Family, fx Fixtures) {
	t.Helper()
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) { r.test(t, f, fx) })
	}
}

// owns reports whether p is one of f's editable paths.
func owns(f family.Family, p string) bool {
	if p == f.Info().Endpoint {
		return true
	}
	me, ok := f.(family.ModelEndpoints)
	if !ok {
		return false
	}
	_, ok = me.EndpointModel(p)
	return ok
}

func split(t *testing.T, raw []byte) *wire.Body {
	t.Helper()
	b, err := wire.SplitBody(raw, nil)
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return b
}
