package sdkmw

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/lib/wire"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pricing"
)

type identity struct{ calls int }

func (p *identity) PrepareDocument(_ context.Context, doc *agentctx.Document) (*pipeline.Result, error) {
	p.calls++
	return &pipeline.Result{Messages: doc.Messages}, nil
}

type recorder struct{ got []pricing.Usage }

func (r *recorder) Observe(_ context.Context, u pricing.Usage) { r.got = append(r.got, u) }

// provider reads Chat Completions usage; the last one seen wins.
var provider = Provider{
	Name:  "test",
	Match: func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/messages") },
	API:   wire.Chat,
}

func do(t *testing.T, mw Middleware, path, body string, resp *http.Response) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://x"+path, strings.NewReader(body))
	var sent string
	res, err := mw(req, func(r *http.Request) (*http.Response, error) {
		b, _ := io.ReadAll(r.Body)
		sent = string(b)
		if r.ContentLength != int64(len(b)) {
			t.Errorf("ContentLength %d, body %d bytes", r.ContentLength, len(b))
		}
		if rb, _ := r.GetBody(); rb != nil {
			again, _ := io.ReadAll(rb)
			if string(again) != sent {
				t.Errorf("GetBody differs")
			}
		}
		return resp, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return res, sent
}

func TestUsageOfStreamsAndBodies(t *testing.T) {
	stream := "event: a\ndata: {\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":1}}\n\nevent: b\r\ndata: {\"delta\":\"x\"}\r\n\r\ndata: {\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":7}}"
	cases := []struct {
		name, ct, body string
		status         int
		read           func(io.Reader) io.Reader
		closeEarly     bool
		want           []pricing.Usage
	}{
		{"sse byte by byte", "text/event-stream", stream, 200, iotest.OneByteReader, false, []pricing.Usage{{Uncached: 10, Output: 7}}},
		{"sse half", "text/event-stream; charset=utf-8", stream, 200, iotest.HalfReader, false, []pricing.Usage{{Uncached: 10, Output: 7}}},
		// Line ends of CR alone, and an event's data over several lines
		// (the old line readers lost both).
		{"sse cr", "text/event-stream", "data: {\"usage\":null}\r\rdata: {\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":2}}\r\r", 200, iotest.HalfReader, false, []pricing.Usage{{Uncached: 9, Output: 2}}},
		{"sse multi-line data", "text/event-stream", "data: {\"choices\":[],\ndata: \"usage\":{\"prompt_tokens\":5,\ndata: \"completion_tokens\":1}}\n\n", 200, iotest.OneByteReader, false, []pricing.Usage{{Uncached: 5, Output: 1}}},
		{"json", "application/json", `{"id":"x","usage":{"prompt_tokens":3,"completion_tokens":4}}`, 200, iotest.OneByteReader, false, []pricing.Usage{{Uncached: 3, Output: 4}}},
		{"json closed early", "application/json", `{"id":"x","usage":{"prompt_tokens":3,"completion_tokens":4}}`, 200, iotest.OneByteReader, true, nil},
		{"error status", "application/json", `{"usage":{"prompt_tokens":3,"completion_tokens":4}}`, 400, iotest.OneByteReader, false, nil},
		{"no usage", "application/json", `{"id":"x"}`, 200, iotest.OneByteReader, false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := &recorder{}
			mw := New(&identity{}, provider, Options{Observer: rec})
			resp := &http.Response{StatusCode: c.status, Header: http.Header{"Content-Type": {c.ct}}, Body: io.NopCloser(c.read(strings.NewReader(c.body)))}
			res, _ := do(t, mw, "/v1/messages", `{"messages":[{"role":"user","content":"hi"}]}`, resp)
			var got bytes.Buffer
			if c.closeEarly {
				io.CopyN(&got, res.Body, 5)
			} else {
				io.Copy(&got, res.Body)
				if got.String() != c.body {
					t.Errorf("body relayed as %q", got.String())
				}
			}
			res.Body.Close()
			res.Body.Close()
			if len(rec.got) != len(c.want) || len(c.want) > 0 && rec.got[0] != c.want[0] {
				t.Errorf("observed %+v, want %+v", rec.got, c.want)
			}
		})
	}
}

func TestRequests(t *testing.T) {
	p := &identity{}
	mw := New(p, provider, Options{})
	ok := &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("{}"))}
	// Metadata is stripped, members kept.
	_, sent := do(t, mw, "/v1/messages", `{"model":"m","system":"s","messages":[{"role":"user","content":"hi","timestamp":5}],"x":[1]}`, ok)
	if sent != `{"model":"m","system":"s","messages":[{"role":"user","content":"hi"}],"x":[1]}` {
		t.Errorf("sent %q", sent)
	}
	// Other paths pass through untouched.
	_, sent = do(t, mw, "/v1/messages/count_tokens", `not json`, ok)
	if sent != `not json` || p.calls != 1 {
		t.Errorf("count_tokens: %q, %d preparations", sent, p.calls)
	}
	// A body that is not a request with messages fails, or passes with FailOpen.
	req, _ := http.NewRequest(http.MethodPost, "http://x/v1/messages", strings.NewReader(`[{"role":"user","content":"hi"}]`))
	if _, err := mw(req, nil); err == nil || !strings.Contains(err.Error(), "not a JSON object with messages") {
		t.Errorf("array body: %v", err)
	}
	open := New(p, provider, Options{FailOpen: true})
	_, sent = do(t, open, "/v1/messages", `{"messages": 5}`, ok)
	if sent != `{"messages": 5}` {
		t.Errorf("fail open sent %q", sent)
	}
}

func FuzzUsageReader(f *testing.F) {
	f.Add([]byte("data: {\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}\n"), uint8(3))
	f.Add([]byte("data:{\"usage\":null}\r\n\r\ndata: [DONE]"), uint8(1))
	f.Fuzz(func(t *testing.T, body []byte, chunk uint8) {
		for _, sse := range []bool{true, false} {
			rec := &recorder{}
			r := &usageReader{rc: io.NopCloser(bytes.NewReader(body)), ctx: context.Background(), prov: provider, obs: rec, sse: sse}
			buf := make([]byte, int(chunk)%7+1)
			var out []byte
			for {
				n, err := r.Read(buf)
				out = append(out, buf[:n]...)
				if err != nil {
					break
				}
			}
			r.Close()
			if !bytes.Equal(out, body) || len(rec.got) > 1 {
				t.Fatalf("relayed %q of %q, observed %d times", out, body, len(rec.got))
			}
		}
	})
}

// TestFinish: a provider's Finish sees the result before it is written, may
// replace its messages, set a header and set top-level members.
func TestFinish(t *testing.T) {
	prov := provider
	prov.Finish = func(req *http.Request, body []byte, doc *agentctx.Document, res *pipeline.Result, _ Known) (map[string][]byte, []int, error) {
		req.Header.Set("X-Test", "1")
		res.Messages = res.Messages[:1]
		return map[string][]byte{"b": []byte(`{"x":2}`), "a": []byte(`1`)}, nil, nil
	}
	mw := New(&identity{}, prov, Options{})
	req, _ := http.NewRequest(http.MethodPost, "http://x/v1/messages", strings.NewReader(`{"a":0,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]}`))
	var sent, header string
	_, err := mw(req, func(r *http.Request) (*http.Response, error) {
		b, _ := io.ReadAll(r.Body)
		sent, header = string(b), r.Header.Get("X-Test")
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("{}"))}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if sent != `{"a":1,"messages":[{"role":"user","content":"hi"}],"b":{"x":2}}` || header != "1" {
		t.Errorf("sent %s, header %q", sent, header)
	}
}

// TestFinishSources: the body is written with the known encodings of the
// messages a Finish says are the input's, and a message it replaced and
// says so (-1) is encoded anew, on a warm request (whose messages the
// decode cache knows) as on a cold one.
func TestFinishSources(t *testing.T) {
	prov := provider
	prov.Finish = func(_ *http.Request, _ []byte, _ *agentctx.Document, res *pipeline.Result, k Known) (map[string][]byte, []int, error) {
		if len(k.Sources) != len(res.Messages) {
			return nil, nil, nil
		}
		src := slices.Clone(k.Sources)
		res.Messages = slices.Clone(res.Messages)
		res.Messages[1] = res.Messages[1].WithContent(agentctx.Text("replaced"))
		src[1] = -1
		return nil, src, nil
	}
	mw := New(&identity{}, prov, Options{})
	body := `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"},{"role":"user","content":"go on"}]}`
	want := `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"replaced"},{"role":"user","content":"go on"}]}`
	for i := range 2 {
		req, _ := http.NewRequest(http.MethodPost, "http://x/v1/messages", strings.NewReader(body))
		var sent string
		_, err := mw(req, func(r *http.Request) (*http.Response, error) {
			b, _ := io.ReadAll(r.Body)
			sent = string(b)
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("{}"))}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if sent != want {
			t.Errorf("request %d sent %s, want %s", i, sent, want)
		}
	}
}

// TestReadBody: a body is read whole whatever its Content-Length says
// (right, short, long, none), as io.ReadAll reads it.
func TestReadBody(t *testing.T) {
	const body = `{"messages":[]}`
	for _, n := range []int64{int64(len(body)), 3, int64(len(body)) + 10, 0, -1, maxPresized + 1} {
		req, _ := http.NewRequest(http.MethodPost, "http://x/", strings.NewReader(body))
		req.ContentLength = n
		got, err := readBody(req)
		if err != nil || string(got) != body {
			t.Errorf("Content-Length %d: %q, %v", n, got, err)
		}
	}
}
