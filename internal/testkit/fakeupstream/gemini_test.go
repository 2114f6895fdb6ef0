package fakeupstream_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
)

// gemPost posts body to the Gemini method of model (method may carry a
// query, "streamGenerateContent?alt=sse"), with the API key key in the
// x-goog-api-key header unless it is "".
func gemPost(t *testing.T, url, model, method, key, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/v1beta/models/"+model+":"+method, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("X-Goog-Api-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Contents of the table below.
const (
	gUser  = `{"role":"user","parts":[{"text":"run it"}]}`
	gCall  = `{"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"ls"}}}]}`
	gResp  = `{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"output":"a b"}}}]}`
	gCallD = `{"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"ls"}},"thoughtSignature":"skip_thought_signature_validator"}]}`
)

func contents(cs ...string) string { return `{"contents":[` + strings.Join(cs, ",") + `]}` }

// Every rule of the Gemini family, with the API's status and message.
func TestGeminiRejectsWhatTheAPIRejects(t *testing.T) {
	srv := httptest.NewServer(fakeupstream.New(fakeupstream.Options{}))
	defer srv.Close()
	small := httptest.NewServer(fakeupstream.New(fakeupstream.Options{ContextWindow: 100}))
	defer small.Close()
	for _, tc := range []struct {
		name, model, method, key, body string
		url                            string // "" is srv's
		status                         int
		want                           string // in the body
	}{
		{"valid", "gemini-2.5-flash", "generateContent", "k", contents(gUser), "", 200, `"candidates"`},
		{"no key", "gemini-2.5-flash", "generateContent", "", contents(gUser), "", 403, `"status":"PERMISSION_DENIED"`},
		{"key= in the query", "gemini-2.5-flash", "generateContent?key=q", "", contents(gUser), "", 200, `"candidates"`},
		{"an empty key", "gemini-2.5-flash", "generateContent?key=", "", contents(gUser), "", 403, `"status":"PERMISSION_DENIED"`},
		{"unknown method", "gemini-2.5-flash", "embedContent", "k", contents(gUser), "", 404, `"status":"NOT_FOUND"`},
		{"invalid JSON", "gemini-2.5-flash", "generateContent", "k", `{"contents":`, "", 400, "Invalid JSON payload received"},
		{"not an object", "gemini-2.5-flash", "generateContent", "k", `[1]`, "", 400, "Invalid JSON payload received"},
		{"unknown request field", "gemini-2.5-flash", "generateContent", "k", `{"contents":[` + gUser + `],"messages":[]}`, "", 400, `Unknown name \"messages\"`},
		{"unknown part field", "gemini-2.5-flash", "generateContent", "k", contents(`{"role":"user","parts":[{"text":"x","cache_control":{"type":"ephemeral"}}]}`), "", 400, `Unknown name \"cache_control\" at 'contents[0].parts[0]'`},
		{"unknown call field", "gemini-2.5-flash", "generateContent", "k", contents(gUser, `{"role":"model","parts":[{"functionCall":{"name":"f","input":{}}}]}`), "", 400, `Unknown name \"input\" at 'contents[1].parts[0].function_call'`},
		{"snake_case fields", "gemini-2.5-flash", "generateContent", "k", `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"system_instruction":{"parts":[{"text":"be brief"}]},"generation_config":{"max_output_tokens":100}}`, "", 200, `"candidates"`},
		{"two data fields", "gemini-2.5-flash", "generateContent", "k", contents(`{"role":"user","parts":[{"text":"x","functionResponse":{"name":"f","response":{}}}]}`), "", 400, "Oneof field 'data' is already set"},
		{"no data field", "gemini-2.5-flash", "generateContent", "k", contents(`{"role":"user","parts":[{"thought":true}]}`), "", 400, "required oneof field 'data'"},
		{"text not a string", "gemini-2.5-flash", "generateContent", "k", contents(`{"role":"user","parts":[{"text":5}]}`), "", 400, "Invalid value at 'contents[0].parts[0].text' (TYPE_STRING)"},
		{"args not an object", "gemini-2.5-flash", "generateContent", "k", contents(gUser, `{"role":"model","parts":[{"functionCall":{"name":"f","args":"ls"}}]}`), "", 400, "function_call.args"},
		{"signature not base64", "gemini-2.5-flash", "generateContent", "k", contents(gUser, `{"role":"model","parts":[{"text":"a","thoughtSignature":"not base64!"}]}`, gUser), "", 400, "Base64 decoding failed"},
		{"contents not a list", "gemini-2.5-flash", "generateContent", "k", `{"contents":{"role":"user"}}`, "", 400, "Invalid value at 'contents'"},
		{"role not a string", "gemini-2.5-flash", "generateContent", "k", contents(`{"role":1,"parts":[{"text":"x"}]}`), "", 400, "Invalid value at 'contents[0].role'"},
		{"unknown response field", "gemini-2.5-flash", "generateContent", "k", contents(gUser, gCall, `{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","content":"x"}}]}`), "", 400, `Unknown name \"content\" at 'contents[2].parts[0].function_response'`},
		{"declaration without a name", "gemini-2.5-flash", "generateContent", "k", `{"contents":[` + gUser + `],"tools":[{"functionDeclarations":[{"description":"x"}]}]}`, "", 400, "function_declarations[0].name"},
		{"includeThoughts not a bool", "gemini-2.5-flash", "generateContent", "k", `{"contents":[` + gUser + `],"generationConfig":{"thinkingConfig":{"includeThoughts":"yes"}}}`, "", 400, "include_thoughts"},
		{"maxOutputTokens not an int32", "gemini-2.5-flash", "generateContent", "k", `{"contents":[` + gUser + `],"generationConfig":{"maxOutputTokens":1.5}}`, "", 400, "max_output_tokens"},
		{"no contents", "gemini-2.5-flash", "generateContent", "k", `{"contents":[]}`, "", 400, "contents is not specified"},
		{"empty parts", "gemini-2.5-flash", "generateContent", "k", contents(`{"role":"user","parts":[]}`), "", 400, "contents.parts must not be empty"},
		{"role assistant", "gemini-2.5-flash", "generateContent", "k", contents(`{"role":"assistant","parts":[{"text":"x"}]}`), "", 400, "Please use a valid role: user, model."},
		{"response without a call", "gemini-2.5-flash", "generateContent", "k", contents(gUser, gResp), "", 400, "function response turn comes immediately after a function call turn"},
		{"call first", "gemini-2.5-flash", "generateContent", "k", contents(gCall, gResp), "", 400, "function call turn comes immediately after a user turn or after a function response turn"},
		{"call after a model turn", "gemini-2.5-flash", "generateContent", "k", contents(gUser, `{"role":"model","parts":[{"text":"thinking"}]}`, gCall, gResp), "", 400, "function call turn comes immediately after a user turn"},
		{"fewer responses than calls", "gemini-2.5-flash", "generateContent", "k", contents(gUser, `{"role":"model","parts":[{"functionCall":{"name":"a"}},{"functionCall":{"name":"b"}}]}`, `{"role":"user","parts":[{"functionResponse":{"name":"a","response":{}}}]}`), "", 400, "number of function response parts is equal to the number of function call parts"},
		{"response of another name", "gemini-2.5-flash", "generateContent", "k", contents(gUser, gCall, `{"role":"user","parts":[{"functionResponse":{"name":"read_file","response":{}}}]}`), "", 400, "matches no function call"},
		{"response of another id", "gemini-2.5-flash", "generateContent", "k", contents(gUser, `{"role":"model","parts":[{"functionCall":{"id":"c1","name":"f"}}]}`, `{"role":"user","parts":[{"functionResponse":{"id":"c2","name":"f","response":{}}}]}`), "", 400, "matches no function call"},
		{"paired by id, out of order", "gemini-2.5-flash", "generateContent", "k", contents(gUser, `{"role":"model","parts":[{"functionCall":{"id":"c1","name":"f"}},{"functionCall":{"id":"c2","name":"f"}}]}`, `{"role":"user","parts":[{"functionResponse":{"id":"c2","name":"f","response":{}}},{"functionResponse":{"id":"c1","name":"f","response":{}}}]}`), "", 200, `"candidates"`},
		{"id on the response only: paired by name", "gemini-2.5-flash", "generateContent", "k", contents(gUser, gCall, `{"role":"user","parts":[{"functionResponse":{"id":"cli-1","name":"run_shell_command","response":{"output":"x"}}}]}`), "", 200, `"candidates"`},
		{"Gemini 3: missing signature", "gemini-3-pro-preview", "generateContent", "k", contents(gUser, gCall, gResp), "", 400, "Function call is missing a thought_signature in functionCall parts"},
		{"Gemini 3: missing in an earlier turn", "gemini-3-pro-preview", "generateContent", "k", contents(gUser, gCall, gResp, `{"role":"model","parts":[{"text":"done"}]}`, gUser), "", 200, `"candidates"`},
		{"Gemini 3: dummy signature", "gemini-3-pro-preview", "generateContent", "k", contents(gUser, gCallD, gResp), "", 200, `"candidates"`},
		{"Gemini 3: another's signature", "gemini-3-flash-preview", "generateContent", "k", contents(gUser, `{"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"ls"}},"thoughtSignature":"CiIBjz1rX0ilumvPg6k0"}]}`, gResp), "", 200, `"candidates"`},
		{"Gemini 3: a signature the fake never issued", "gemini-3-pro-preview", "generateContent", "k", contents(gUser, `{"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"ls"}},"thoughtSignature":"`+fakeupstream.GeminiSignaturePrefix+`AAAA"}]}`, gResp), "", 400, "Corrupted thought signature"},
		{"Gemini 2.5: missing signature", "gemini-2.5-pro", "generateContent", "k", contents(gUser, gCall, gResp), "", 200, `"candidates"`},
		{"budget and level", "gemini-3-pro-preview", "generateContent", "k", `{"contents":[` + gUser + `],"generationConfig":{"thinkingConfig":{"thinkingBudget":1024,"thinkingLevel":"LOW"}}}`, "", 400, "cannot both be set"},
		{"over the window", "gemini-2.5-flash", "generateContent", "k", contents(`{"role":"user","parts":[{"text":"` + strings.Repeat("x", 500) + `"}]}`), "small", 400, "exceeds the maximum number of tokens allowed (100)"},
		{"streamed error: a JSON array", "gemini-2.5-flash", "streamGenerateContent", "k", `{"contents":[]}`, "", 400, `[{"error":`},
		{"streamed error with alt=sse: an object", "gemini-2.5-flash", "streamGenerateContent?alt=sse", "k", `{"contents":[]}`, "", 400, `{"error":`},
		{"countTokens: unknown field", "gemini-2.5-flash", "countTokens", "k", `{"contents":[` + gUser + `],"tools":[]}`, "", 400, `Unknown name \"tools\"`},
	} {
		url := srv.URL
		if tc.url == "small" {
			url = small.URL
		}
		status, body := gemPost(t, url, tc.model, tc.method, tc.key, tc.body)
		if status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s; want %d containing %s", tc.name, status, body, tc.status, tc.want)
			continue
		}
		if status >= 400 {
			var e struct {
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
					Status  string `json:"status"`
				} `json:"error"`
			}
			js := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(body), "["), "]")
			if err := json.Unmarshal([]byte(js), &e); err != nil || e.Error.Code != status || e.Error.Status == "" || e.Error.Message == "" {
				t.Errorf("%s: error %s is not Google's shape {error: {code, message, status}}", tc.name, body)
			}
		}
	}
}

// gemAnswer is a GenerateContentResponse, as the tests read it.
type gemAnswer struct {
	Candidates []struct {
		Content struct {
			Role  string           `json:"role"`
			Parts []map[string]any `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata struct {
		PromptTokenCount        int `json:"promptTokenCount"`
		CachedContentTokenCount int `json:"cachedContentTokenCount"`
		CandidatesTokenCount    int `json:"candidatesTokenCount"`
		ThoughtsTokenCount      int `json:"thoughtsTokenCount"`
		TotalTokenCount         int `json:"totalTokenCount"`
	} `json:"usageMetadata"`
	ModelVersion string `json:"modelVersion"`
	ResponseID   string `json:"responseId"`
}

func decodeAnswer(t *testing.T, body string) gemAnswer {
	t.Helper()
	var a gemAnswer
	if err := json.Unmarshal([]byte(body), &a); err != nil || len(a.Candidates) != 1 {
		t.Fatalf("not a GenerateContentResponse: %v\n%s", err, body)
	}
	return a
}

// modelContent returns the answer's content as a request content, the
// parts exactly as received.
func modelContent(t *testing.T, a gemAnswer) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"role": "model", "parts": a.Candidates[0].Content.Parts})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The fake issues a thought signature on the first function call of an
// answer, and takes it back only as it was issued, on that part.
func TestGeminiThoughtSignatures(t *testing.T) {
	script := func(c *fakeupstream.Call) fakeupstream.Reply {
		if c.Turn > 0 {
			return fakeupstream.Reply{Text: "done"}
		}
		return fakeupstream.Reply{Thinking: "I should look.", Text: "Looking.", ToolCalls: []fakeupstream.ToolCall{
			{Name: "run_shell_command", Input: map[string]any{"command": "ls", "description": "list"}},
			{Name: "read_file", Input: map[string]any{"file_path": "/tmp/a"}}}}
	}
	srv := httptest.NewServer(fakeupstream.New(fakeupstream.Options{Script: script}))
	defer srv.Close()
	const model = "gemini-3-pro-preview"
	status, body := gemPost(t, srv.URL, model, "generateContent", "k", contents(gUser))
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	a := decodeAnswer(t, body)
	parts := a.Candidates[0].Content.Parts
	if len(parts) != 3 || parts[0]["text"] != "Looking." || parts[1]["functionCall"] == nil || parts[2]["functionCall"] == nil {
		t.Fatalf("parts %v: want the text, then two calls (no thought part without includeThoughts)", parts)
	}
	sig, _ := parts[1]["thoughtSignature"].(string)
	if !strings.HasPrefix(sig, fakeupstream.GeminiSignaturePrefix) || parts[2]["thoughtSignature"] != nil || parts[0]["thoughtSignature"] != nil {
		t.Fatalf("parts %v: want a signature on the first call only", parts)
	}
	for _, p := range parts[1:] {
		if id, _ := p["functionCall"].(map[string]any)["id"].(string); id == "" {
			t.Fatalf("call %v has no id", p)
		}
	}
	if a.UsageMetadata.ThoughtsTokenCount == 0 || a.UsageMetadata.TotalTokenCount != a.UsageMetadata.PromptTokenCount+a.UsageMetadata.CandidatesTokenCount+a.UsageMetadata.ThoughtsTokenCount {
		t.Errorf("usage %+v: want thoughts counted, total = prompt + candidates + thoughts", a.UsageMetadata)
	}
	call := func(i int) map[string]any { return parts[i]["functionCall"].(map[string]any) }
	resps := func(names ...string) string {
		var ps []string
		for i, n := range names {
			ps = append(ps, fmt.Sprintf(`{"functionResponse":{"id":%q,"name":%q,"response":{"output":"x"}}}`, call(i + 1)["id"], n))
		}
		return `{"role":"user","parts":[` + strings.Join(ps, ",") + `]}`
	}
	back := resps("run_shell_command", "read_file")
	if status, body := gemPost(t, srv.URL, model, "generateContent", "k", contents(gUser, modelContent(t, a), back)); status != 200 {
		t.Fatalf("the answer sent back as received: %d %s", status, body)
	}

	edit := func(f func(ps []map[string]any)) string {
		ps := make([]map[string]any, len(parts))
		for i, p := range parts {
			ps[i] = map[string]any{}
			for k, v := range p {
				ps[i][k] = v
			}
		}
		f(ps)
		b, _ := json.Marshal(map[string]any{"role": "model", "parts": ps})
		return string(b)
	}
	for _, tc := range []struct {
		name    string
		content string
		want    string
	}{
		{"dropped", edit(func(ps []map[string]any) { delete(ps[1], "thoughtSignature") }), "missing a thought_signature"},
		{"moved to the text", edit(func(ps []map[string]any) {
			ps[0]["thoughtSignature"] = ps[1]["thoughtSignature"]
			delete(ps[1], "thoughtSignature")
		}), "Corrupted thought signature"},
		{"moved to the second call", edit(func(ps []map[string]any) {
			ps[2]["thoughtSignature"] = ps[1]["thoughtSignature"]
			delete(ps[1], "thoughtSignature")
		}), "missing a thought_signature"},
		{"copied to the second call", edit(func(ps []map[string]any) { ps[2]["thoughtSignature"] = ps[1]["thoughtSignature"] }), "Corrupted thought signature"},
		{"the calls reordered", edit(func(ps []map[string]any) { ps[1], ps[2] = ps[2], ps[1] }), "missing a thought_signature"},
		{"the call's arguments changed", edit(func(ps []map[string]any) {
			ps[1]["functionCall"] = map[string]any{"id": call(1)["id"], "name": "run_shell_command", "args": map[string]any{"command": "rm -rf /"}}
		}), "Corrupted thought signature"},
	} {
		status, body := gemPost(t, srv.URL, model, "generateContent", "k", contents(gUser, tc.content, back))
		if status != 400 || !strings.Contains(body, tc.want) {
			t.Errorf("signature %s: %d %s; want 400 %q", tc.name, status, body, tc.want)
		}
	}

	// A Gemini 3 answer without calls signs its last part; with
	// includeThoughts the thought summary comes first.
	status, body = gemPost(t, srv.URL, model, "generateContent", "k", `{"contents":[`+gUser+`,`+modelContent(t, a)+`,`+back+`],"generationConfig":{"thinkingConfig":{"includeThoughts":true}}}`)
	a2 := decodeAnswer(t, body)
	if p := a2.Candidates[0].Content.Parts; status != 200 || len(p) != 1 || p[0]["text"] != "done" || p[0]["thoughtSignature"] == nil {
		t.Errorf("final answer %d %v: want one text part, signed", status, p)
	}
	status, body = gemPost(t, srv.URL, "gemini-2.5-flash", "generateContent", "k", `{"contents":[`+gUser+`],"generationConfig":{"thinkingConfig":{"includeThoughts":true}}}`)
	p := decodeAnswer(t, body).Candidates[0].Content.Parts
	if status != 200 || len(p) != 4 || p[0]["thought"] != true || p[0]["text"] != "I should look." || p[2]["thoughtSignature"] == nil {
		t.Errorf("Gemini 2.5 with includeThoughts: %d %v: want the thought part first, the first call signed", status, p)
	}
	status, body = gemPost(t, srv.URL, "gemini-2.5-flash", "generateContent", "k", `{"contents":[`+gUser+`],"generationConfig":{"thinkingConfig":{"thinkingBudget":0}}}`)
	for _, q := range decodeAnswer(t, body).Candidates[0].Content.Parts {
		if status != 200 || q["thoughtSignature"] != nil {
			t.Errorf("Gemini 2.5 without thinking: %d %v: want no signature", status, q)
		}
	}
}

// The three forms of an answer carry the same content: one object, SSE
// "data:" events with alt=sse, a JSON array of the chunks without; the
// last chunk has the finishReason and the whole usage.
func TestGeminiStreams(t *testing.T) {
	text := "A long answer that the stream cuts into several chunks of text, at rune boundaries: ünïcödé included."
	srv := httptest.NewServer(fakeupstream.New(fakeupstream.Options{Script: func(c *fakeupstream.Call) fakeupstream.Reply {
		return fakeupstream.Reply{Text: text, ToolCalls: []fakeupstream.ToolCall{{Name: "run_shell_command", Input: map[string]any{"command": "ls"}}}}
	}}))
	defer srv.Close()
	req := contents(gUser)
	_, one := gemPost(t, srv.URL, "gemini-2.5-flash", "generateContent", "k", req)
	whole := decodeAnswer(t, one)

	status, sse := gemPost(t, srv.URL, "gemini-2.5-flash", "streamGenerateContent?alt=sse", "k", req)
	var chunks []gemAnswer
	sc := bufio.NewScanner(strings.NewReader(sse))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(strings.TrimRight(sc.Text(), "\r"), "data: "); ok {
			chunks = append(chunks, decodeAnswer(t, d))
		}
	}
	if status != 200 || len(chunks) < 3 || !strings.Contains(sse, "\r\n\r\n") {
		t.Fatalf("alt=sse: %d, %d chunks:\n%s", status, len(chunks), sse)
	}
	status, arr := gemPost(t, srv.URL, "gemini-2.5-flash", "streamGenerateContent", "k", req)
	var array []gemAnswer
	if err := json.Unmarshal([]byte(arr), &array); status != 200 || err != nil || len(array) != len(chunks) {
		t.Fatalf("JSON array stream: %d %v, %d chunks (SSE: %d):\n%s", status, err, len(array), len(chunks), arr)
	}
	for _, stream := range [][]gemAnswer{chunks, array} {
		var got strings.Builder
		calls := 0
		for i, ch := range stream {
			last := i == len(stream)-1
			if (ch.Candidates[0].FinishReason != "") != last {
				t.Errorf("chunk %d of %d: finishReason %q", i, len(stream), ch.Candidates[0].FinishReason)
			}
			for _, p := range ch.Candidates[0].Content.Parts {
				if s, ok := p["text"].(string); ok {
					got.WriteString(s)
				}
				if p["functionCall"] != nil {
					calls++
				}
			}
		}
		u := stream[len(stream)-1].UsageMetadata
		if got.String() != text || calls != 1 {
			t.Errorf("streamed text %q and %d calls; want %q and 1", got.String(), calls, text)
		}
		if u.CandidatesTokenCount == 0 || u.PromptTokenCount != whole.UsageMetadata.PromptTokenCount || u.TotalTokenCount != u.PromptTokenCount+u.CandidatesTokenCount {
			t.Errorf("the last chunk's usage %+v; the unstreamed answer's %+v", u, whole.UsageMetadata)
		}
	}
	if whole.Candidates[0].FinishReason != "STOP" || whole.ModelVersion != "gemini-2.5-flash" || whole.ResponseID == "" {
		t.Errorf("answer %+v: want finishReason STOP, the model version and a response id", whole)
	}

	// A short maxOutputTokens is answered cut, without the script.
	_, short := gemPost(t, srv.URL, "gemini-2.5-flash", "generateContent", "k", `{"contents":[`+gUser+`],"generationConfig":{"maxOutputTokens":1}}`)
	if a := decodeAnswer(t, short); a.Candidates[0].FinishReason != "MAX_TOKENS" || a.UsageMetadata.CandidatesTokenCount != 1 {
		t.Errorf("maxOutputTokens 1: %s", short)
	}
}

// Implicit caching: a request reads the longest prefix an earlier live
// request of the same key and model shared, from the model's minimum,
// billed at the cached price; the prompt count includes it. Pro bills a
// prompt over 200K tokens at its long-context prices.
func TestGeminiBilling(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	fake := fakeupstream.New(fakeupstream.Options{Now: func() time.Time { return now }, Script: func(*fakeupstream.Call) fakeupstream.Reply {
		return fakeupstream.Reply{Text: "ok", OutputTokens: 100}
	}})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	doc := func(words int) string { return strings.Repeat("lorem ipsum dolor ", words/3) }
	long := `{"role":"user","parts":[{"text":"` + doc(6000) + `"}]}`
	usage := func(model, key, body string) gemAnswer {
		t.Helper()
		status, b := gemPost(t, srv.URL, model, "generateContent", key, body)
		if status != 200 {
			t.Fatalf("%d %s", status, b)
		}
		return decodeAnswer(t, b)
	}
	first := usage("gemini-2.5-flash", "k1", contents(long, `{"role":"model","parts":[{"text":"read"}]}`, gUser))
	if first.UsageMetadata.CachedContentTokenCount != 0 || first.UsageMetadata.PromptTokenCount < 5000 {
		t.Fatalf("first request: %+v", first.UsageMetadata)
	}
	second := usage("gemini-2.5-flash", "k1", contents(long, `{"role":"model","parts":[{"text":"read"}]}`, `{"role":"user","parts":[{"text":"another question"}]}`))
	u := second.UsageMetadata
	if u.CachedContentTokenCount < 4000 || u.CachedContentTokenCount >= u.PromptTokenCount {
		t.Errorf("second request: %+v: want the shared prefix (%d tokens of the document) read from the cache", u, first.UsageMetadata.PromptTokenCount)
	}
	bill := fake.Bill()
	p := fakeupstream.DefaultGeminiPricing().Short["gemini-2.5-flash"]
	want := (float64(bill.Input)*p.Input + float64(bill.CacheRead)*p.CacheRead + float64(bill.Output)*p.Output) / 1e6
	if bill.CacheRead != u.CachedContentTokenCount || bill.Output != 200 || math.Abs(bill.USD-want) > 1e-12 {
		t.Errorf("bill %+v: want %d read, 200 output, $%g", bill.Totals, u.CachedContentTokenCount, want)
	}
	if o := usage("gemini-2.5-flash", "k2", contents(long, gUser)); o.UsageMetadata.CachedContentTokenCount != 0 {
		t.Errorf("another key read the first key's cache: %+v", o.UsageMetadata)
	}
	if o := usage("gemini-2.5-pro", "k1", contents(long, gUser)); o.UsageMetadata.CachedContentTokenCount != 0 {
		t.Errorf("another model read the first model's cache: %+v", o.UsageMetadata)
	}
	short := `{"role":"user","parts":[{"text":"` + doc(600) + `"}]}`
	usage("gemini-2.5-flash", "k3", contents(short, gUser))
	if o := usage("gemini-2.5-flash", "k3", contents(short, gUser)); o.UsageMetadata.CachedContentTokenCount != 0 {
		t.Errorf("a prefix under the minimum (2,048 tokens) was cached: %+v", o.UsageMetadata)
	}
	now = now.Add(fakeupstream.GeminiImplicitCacheTTL + time.Second)
	if o := usage("gemini-2.5-flash", "k1", contents(long, gUser)); o.UsageMetadata.CachedContentTokenCount != 0 {
		t.Errorf("the prefix outlived the cache's lifetime: %+v", o.UsageMetadata)
	}

	before := fake.Bill().USD
	huge := usage("gemini-2.5-pro", "k4", contents(`{"role":"user","parts":[{"text":"`+doc(230_000)+`"}]}`))
	lp := fakeupstream.DefaultGeminiPricing().Long["gemini-2.5-pro"]
	hu := huge.UsageMetadata
	if hu.PromptTokenCount <= fakeupstream.GeminiLongPrompt {
		t.Fatalf("the long prompt has %d tokens, want more than %d", hu.PromptTokenCount, fakeupstream.GeminiLongPrompt)
	}
	want = (float64(hu.PromptTokenCount)*lp.Input + 100*lp.Output) / 1e6
	if got := fake.Bill().USD - before; math.Abs(got-want) > 1e-9 {
		t.Errorf("a %d-token Pro prompt cost $%g, want $%g (the long-context prices)", hu.PromptTokenCount, got, want)
	}
}

// countTokens counts what generateContent bills, from contents or a whole
// generateContentRequest, and bills nothing itself.
func TestGeminiCountTokens(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	req := `{"contents":[` + gUser + `,` + gCallD + `,` + gResp + `]}`
	var n1, n2 struct {
		TotalTokens int `json:"totalTokens"`
	}
	_, b := gemPost(t, srv.URL, "gemini-2.5-flash", "countTokens", "k", req)
	json.Unmarshal([]byte(b), &n1)
	_, b = gemPost(t, srv.URL, "gemini-2.5-flash", "countTokens", "k", `{"generateContentRequest":{"model":"models/gemini-2.5-flash","contents":[`+gUser+`,`+gCallD+`,`+gResp+`]}}`)
	json.Unmarshal([]byte(b), &n2)
	_, b = gemPost(t, srv.URL, "gemini-2.5-flash", "generateContent", "k", req)
	prompt := decodeAnswer(t, b).UsageMetadata.PromptTokenCount
	if n1.TotalTokens == 0 || n1.TotalTokens != n2.TotalTokens || n1.TotalTokens != prompt {
		t.Errorf("countTokens %d (contents) and %d (request), generateContent's prompt %d: want all equal", n1.TotalTokens, n2.TotalTokens, prompt)
	}
	if bill := fake.Bill(); bill.Requests != 1 {
		t.Errorf("%d requests billed, want 1 (countTokens is free)", bill.Requests)
	}
	if status, _ := gemPost(t, srv.URL, "gemini-2.5-flash", "countTokens", "", req); status != 403 {
		t.Errorf("countTokens without a key: %d, want 403", status)
	}
}

// geminiClient is a minimal Gemini CLI: it offers run_shell_command and
// read_file, runs the calls in dir, and keeps the history as the answers
// came.
type geminiClient struct {
	t        *testing.T
	url, dir string
	model    string
	contents []any
	outputs  []string
}

func (cl *geminiClient) send() gemAnswer {
	cl.t.Helper()
	body, _ := json.Marshal(map[string]any{"contents": cl.contents,
		"systemInstruction": map[string]any{"parts": []any{map[string]any{"text": "You are an agent."}}},
		"tools": []any{map[string]any{"functionDeclarations": []any{
			map[string]any{"name": "run_shell_command", "parametersJsonSchema": map[string]any{"type": "object"}},
			map[string]any{"name": "read_file", "parametersJsonSchema": map[string]any{"type": "object"}}}}}})
	status, b := gemPost(cl.t, cl.url, cl.model, "generateContent", "k", string(body))
	if status != 200 {
		cl.t.Fatalf("%d %s", status, b)
	}
	return decodeAnswer(cl.t, b)
}

// turn sends the history and runs the answer's call; it returns the
// answer's text and whether it called a tool.
func (cl *geminiClient) turn() (string, bool) {
	cl.t.Helper()
	a := cl.send()
	parts := a.Candidates[0].Content.Parts
	cl.contents = append(cl.contents, map[string]any{"role": "model", "parts": parts})
	var text string
	for _, p := range parts {
		if s, ok := p["text"].(string); ok {
			text += s
		}
		fc, ok := p["functionCall"].(map[string]any)
		if !ok {
			continue
		}
		args := fc["args"].(map[string]any)
		var out []byte
		var err error
		if fc["name"] == "read_file" {
			out, err = exec.Command("cat", args["file_path"].(string)).Output()
		} else {
			cmd := exec.Command("bash", "-c", args["command"].(string))
			cmd.Dir = cl.dir
			out, err = cmd.Output()
		}
		if err != nil {
			cl.t.Fatalf("%v: %v", args, err)
		}
		cl.outputs = append(cl.outputs, string(out))
		cl.contents = append(cl.contents, map[string]any{"role": "user", "parts": []any{map[string]any{
			"functionResponse": map[string]any{"id": fc["id"], "name": fc["name"], "response": map[string]any{"output": string(out)}}}}})
		return text, true
	}
	return text, false
}

// The long task runs through Gemini function calls, survives Gemini CLI's
// compression (its summary prompt), and ends with the right answer.
func TestGeminiLongTask(t *testing.T) {
	const steps = 14
	dir := t.TempDir()
	m := fakeupstream.NewLongTask(fakeupstream.LongTaskOptions{Steps: steps, Dir: dir, SmallOutputs: true, Thinking: true})
	if err := m.WriteFiles(); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(fakeupstream.New(fakeupstream.Options{Script: m.Script}))
	defer srv.Close()
	cl := &geminiClient{t: t, url: srv.URL, dir: dir, model: "gemini-3-flash-preview",
		contents: []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Run the maintenance task."}}}}}
	var final string
	reads := 0
	for turn := 0; turn < 2*steps; turn++ {
		text, called := cl.turn()
		if !called {
			final = text
			break
		}
		if want := fakeupstream.Marker(len(cl.outputs)); !strings.HasPrefix(text, want+":") {
			t.Fatalf("step %d's text starts %.40q, want the marker %s", len(cl.outputs), text, want)
		}
		if last := cl.contents[len(cl.contents)-2].(map[string]any)["parts"].([]map[string]any); last[len(last)-1]["functionCall"].(map[string]any)["name"] == "read_file" {
			reads++
		}
		if len(cl.outputs) == 6 {
			// Gemini CLI compresses: its summary request, then a history of
			// the summary (and its acknowledgement).
			cl.contents = append(cl.contents, map[string]any{"role": "user", "parts": []any{map[string]any{
				"text": "Generate a new <state_snapshot> based on the provided history.\n\nFirst, reason in your scratchpad. Then, generate the updated <state_snapshot>."}}})
			a := cl.send()
			sum, _ := a.Candidates[0].Content.Parts[0]["text"].(string)
			if !strings.Contains(sum, fakeupstream.Marker(6)) {
				t.Fatalf("the summary does not name the last step %s:\n%s", fakeupstream.Marker(6), sum)
			}
			cl.contents = []any{
				map[string]any{"role": "user", "parts": []any{map[string]any{"text": sum}}},
				map[string]any{"role": "model", "parts": []any{map[string]any{"text": "Got it. Thanks for the additional context!"}}},
				map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Continue."}}},
			}
		}
	}
	if final != m.CorrectAnswer() {
		t.Errorf("final answer %q, want %q", final, m.CorrectAnswer())
	}
	if st := m.Stats(); st.Steps != steps || st.ClientSummaries != 1 || reads == 0 {
		t.Errorf("stats %+v, %d read_file calls: want %d steps, 1 client summary, the reads with read_file", st, reads, steps)
	}
}
