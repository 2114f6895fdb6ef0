package proxy

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
)

// The instruction goes at the very end; every byte before it is the
// forwarded body's, for each wire format.
func TestCachedSummaryBody(t *testing.T) {
	r := compact.Request{Messages: []agentctx.Message{agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("fix the build"))}}
	cases := []struct {
		api    API
		body   string
		prefix string // the forwarded bytes the summary body must start with
	}{
		{APIAnthropic, `{"model":"m","stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}]}]}`,
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"text","text":`},
		{APIAnthropic, `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"text","text":"b"}]}]}`,
			`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"text","text":"b"}]},{"role":"user","content":[{"type":"text","text":`},
		{APIChat, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"a"}]}`,
			`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":`},
		{APIResponses, `{"model":"m","store":false,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"a"}]}],"stream":true}`,
			`{"model":"m","store":false,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"a"}]},{"type":"message","role":"user","content":[{"type":"input_text","text":`},
	}
	for _, c := range cases {
		got, err := cachedSummaryBody(c.api, []byte(c.body), r)
		if err != nil {
			t.Fatalf("%s: %v", c.api, err)
		}
		if !bytes.HasPrefix(got, []byte(c.prefix)) || !json.Valid(got) || !bytes.HasSuffix(got, []byte(`"stream":false}`)) {
			t.Errorf("%s:\n%s\nwant it to start with\n%s", c.api, got, c.prefix)
		}
		if !strings.Contains(string(got), `the user message that begins \"fix the build\"`) {
			t.Errorf("%s: the instruction does not name where the summary ends", c.api)
		}
	}
	if _, err := cachedSummaryBody(APIAnthropic, []byte(`{"model":"m"}`), r); err == nil {
		t.Error("a body without messages gave a summary body")
	}
}
