package agentctx_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctx/agentctx"
)

// FuzzParseDocument: no input makes the request reader (what the proxy and
// the SDK middleware run on every body) panic; whatever it accepts encodes
// to output that reads back to the same output. Agent transcripts are
// fuzzed in package transcript.
func FuzzParseDocument(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json*")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{`[]`, `{}`, `{"messages":[]}`, `[{"role":"user","content":[{"type":"tool_result"}]}]`,
		"\"\\ud800\"", `[{"role":"tool","content":"\u00e9\ud83d"}]`, `{"history":[]}`, `{"role":"user","content":"a"}` + "\n" + `{"role":"assistant","con`,
		`{"system":"s","messages":[{"role":"assistant","tool_calls":[{"id":"k","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"k"},{"role":"exit","content":""}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := agentctx.ParseDocument(context.Background(), append([]byte(nil), data...))
		if err != nil {
			return
		}
		out, err := doc.AppendJSON(nil)
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		doc.Notice()
		if len(doc.Messages) == 0 && len(doc.NonModel()) == 0 && doc.Format == agentctx.FormatJSONL {
			if len(out) != 0 {
				t.Fatalf("empty %s document encoded as %q", doc.Format, out)
			}
			return
		}
		again, err := agentctx.ParseDocument(context.Background(), append([]byte(nil), out...))
		if err != nil {
			t.Fatalf("output does not parse: %v\n%s", err, out)
		}
		if again.Format != doc.Format {
			t.Fatalf("read back as %s, was %s", again.Format, doc.Format)
		}
		out2, err := again.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, out2) {
			t.Fatalf("not stable:\n%s\n%s", out, out2)
		}
	})
}
