// Package familytest is the conformance suite every API family
// (internal/lib/family) passes: a family's test calls Run with fixtures of
// its own wire format, as testing/slogtest's callers do with a handler. A
// failure names the rule it broke.
package familytest

import (
	"bytes"
	"encoding/json"
	"net/http"
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

// Endpoints returns the editable paths of the families the proxy knows
// of, served or refused (Gemini's generateContent): a family claims none
// but its own.
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
			if p != f.Info().Endpoint {
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
		if got, editable := r.Route(http.MethodPost, f.Info().Endpoint, http.Header{}); got.Info().Name != f.Info().Name || !editable {
			t.Errorf("Route(POST %s) = %s, %v", f.Info().Endpoint, got.Info().Name, editable)
		}
		if _, editable := r.Route(http.MethodGet, f.Info().Endpoint, http.Header{}); editable {
			t.Errorf("Route(GET %s) is editable", f.Info().Endpoint)
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

func split(t *testing.T, raw []byte) *wire.Body {
	t.Helper()
	b, err := wire.SplitBody(raw, nil)
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return b
}
