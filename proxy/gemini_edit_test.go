package proxy_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/workspace"
)

// geminiBody is a Gemini CLI request: a model turn with a thought, a text
// and a signed call, its response, and the next user prompt.
const geminiBody = `{"contents":[{"role":"user","parts":[{"text":"List the files."}]},` +
	`{"role":"model","parts":[{"text":"I should list.","thought":true},{"text":"Listing."},{"functionCall":{"id":"c1","name":"run_shell_command","args":{"command":"ls"}},"thoughtSignature":"c2lnLTE="}]},` +
	`{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"run_shell_command","response":{"output":"file1\nfile2"}}}]},` +
	`{"role":"user","parts":[{"text":"Now count them."}]}],` +
	`"systemInstruction":{"parts":[{"text":"be brief"}]},"tools":[{"functionDeclarations":[{"name":"run_shell_command"}]}],"generationConfig":{"temperature":0}}`

// An edited Gemini request changes only what the Engine changed: a tool
// result's output, its part's other members, its content's other parts,
// every model content (thought, signature) and every member around the
// contents as the client sent them. The Engine sees the contents as
// messages, the system instruction and the model of the path.
func TestGeminiEditReplacesOnlyOutput(t *testing.T) {
	var seen *proxy.Request
	eng := &funcEngine{prepare: func(req *proxy.Request) []agentctx.Message {
		seen = req
		return agentctx.MapToolResults(req.Document.Messages, func(r agentctx.ToolResult) (agentctx.Content, bool) {
			return agentctx.Text("short"), true
		})
	}}
	up := &capture{}
	base := newProxy(t, up, eng)
	resp := post(t, base+"/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse", geminiBody, map[string]string{"X-Goog-Api-Key": "k"})
	resp.Body.Close()
	_, got := up.last(t)
	want := strings.Replace(geminiBody, `"output":"file1\nfile2"`, `"output":"short"`, 1)
	if string(got) != want {
		t.Errorf("upstream body:\n got %s\nwant %s", got, want)
	}
	if seen == nil || seen.API != proxy.APIGemini || seen.Model != "gemini-3-pro-preview" || len(seen.Document.Messages) != 4 ||
		string(seen.System) != `{"parts":[{"text":"be brief"}]}` || !strings.Contains(string(seen.Tools), "functionDeclarations") {
		t.Fatalf("the Engine's request: %+v", seen)
	}
	if m := seen.Document.Messages[1]; m.Role != agentctx.RoleAssistant || len(m.ToolCalls) != 1 || m.ToolCalls[0].ID != "c1" {
		t.Errorf("the model turn as a message: %+v", m)
	}
	if m := seen.Document.Messages[2]; m.Role != agentctx.RoleTool || m.ToolCallID != "c1" || m.Content.AsText() != "file1\nfile2" {
		t.Errorf("the function response as a message: %+v", m)
	}
	// A body with explicitly cached contents is not the Engine's.
	eng.calls = 0
	cached := strings.Replace(geminiBody, `"generationConfig"`, `"cachedContent":"cachedContents/x","generationConfig"`, 1)
	post(t, base+"/v1beta/models/gemini-2.5-pro:generateContent", cached, map[string]string{"X-Goog-Api-Key": "k"}).Body.Close()
	if _, got := up.last(t); string(got) != cached || eng.calls != 0 {
		t.Errorf("with cachedContent: engine calls %d, body changed %v", eng.calls, string(got) != cached)
	}
}

// geminiLoop runs a scripted Gemini session of turns shell steps, each
// result from result(i), the client's history growing as Gemini CLI's
// does (each model content as it came, each function response after it),
// through a proxy over engine (nil: straight to the fake), and returns the
// proxy's statistics of the session, the fake's bill and the last request
// the client sent with the one the fake received.
func geminiLoop(t *testing.T, engine proxy.Engine, model string, turns int, result func(i int) string) (proxy.SessionStats, fakeupstream.Bill, string, []byte) {
	t.Helper()
	step := 0 // the model's own count: a compaction lowers the turns a request holds
	fake := fakeupstream.New(fakeupstream.Options{Script: func(c *fakeupstream.Call) fakeupstream.Reply {
		if step < turns {
			step++
			return fakeupstream.Reply{Thinking: fmt.Sprintf("step %d", step), Text: "running",
				ToolCalls: []fakeupstream.ToolCall{{Name: "run_shell_command", Input: map[string]any{"command": fmt.Sprintf("step %d", step)}}}}
		}
		return fakeupstream.Reply{Thinking: "done", Text: "FINAL"}
	}})
	us := httptest.NewServer(fake)
	t.Cleanup(us.Close)
	url := us.URL
	var srv *proxy.Server
	if engine != nil {
		var err error
		if srv, err = proxy.New(proxy.Options{Engine: engine, GeminiURL: us.URL, Logger: testLogger(t)}); err != nil {
			t.Fatal(err)
		}
		ps := httptest.NewServer(srv)
		t.Cleanup(ps.Close)
		url = ps.URL
	}
	system := `{"parts":[{"text":` + fmt.Sprintf("%q", strings.Repeat("You are a careful coding agent. ", 1000)) + `}]}`
	contents := []string{`{"role":"user","parts":[{"text":"run the steps"}]}`}
	var body string
	for i := 0; ; i++ {
		body = `{"contents":[` + strings.Join(contents, ",") + `],"systemInstruction":` + system +
			`,"tools":[{"functionDeclarations":[{"name":"run_shell_command"}]}],"generationConfig":{"thinkingConfig":{"includeThoughts":true}}}`
		status, data := geminiPost(t, url+"/v1beta/models/"+model+":generateContent", body, map[string]string{"X-Goog-Api-Key": "k"})
		if status != 200 {
			t.Fatalf("request %d: status %d: %s", i+1, status, data)
		}
		var a struct {
			Candidates []struct {
				Content json.RawMessage `json:"content"`
			} `json:"candidates"`
		}
		if err := json.Unmarshal(data, &a); err != nil || len(a.Candidates) == 0 {
			t.Fatalf("answer %s: %v", data, err)
		}
		var c struct {
			Parts []struct {
				Text         string `json:"text"`
				FunctionCall *struct {
					ID   string `json:"id"`
					Name string `json:"name"`
				} `json:"functionCall"`
			} `json:"parts"`
		}
		json.Unmarshal(a.Candidates[0].Content, &c)
		contents = append(contents, string(a.Candidates[0].Content))
		var responses []string
		for _, p := range c.Parts {
			if fc := p.FunctionCall; fc != nil {
				out, _ := json.Marshal(result(i))
				responses = append(responses, fmt.Sprintf(`{"functionResponse":{"id":%q,"name":%q,"response":{"output":%s}}}`, fc.ID, fc.Name, out))
			}
		}
		if len(responses) == 0 {
			if !strings.Contains(string(a.Candidates[0].Content), "FINAL") {
				t.Fatalf("the last answer is not the final one: %s", a.Candidates[0].Content)
			}
			break
		}
		contents = append(contents, `{"role":"user","parts":[`+strings.Join(responses, ",")+`]}`)
	}
	recs := fake.Records()
	var st proxy.SessionStats
	if srv != nil {
		if ss := srv.Stats(); len(ss) == 1 {
			st = ss[0]
		} else {
			t.Fatalf("%d sessions, want 1", len(ss))
		}
	}
	return st, fake.Bill(), body, recs[len(recs)-1].Body
}

// A Gemini session through the pipeline: its large function responses
// offloaded (replaced by a reference), the request accepted by the fake
// (Gemini 3's thought signatures enforced: every model content sent as it
// came, on the part it came on), the answer right, the bill the fake's,
// and the estimate without agentctx above it and near the same session
// sent straight to the fake.
func TestGeminiEditedSession(t *testing.T) {
	for _, model := range []string{"gemini-3-pro-preview", "gemini-2.5-flash"} {
		t.Run(model, func(t *testing.T) {
			e := pipelineEngine(t, proxy.PipelineOptions{Pipeline: pipeline.Options{
				Workspace: workspace.Options{InlineLimit: 1000}, NoPrune: true, NoCompact: true,
			}})
			st, bill, sent, got := geminiLoop(t, e, model, 8, bigOrSmall)
			if bill.Rejections != 0 || st.Edited == 0 || st.Errors != 0 {
				t.Fatalf("rejections %d, edited %d, errors %d", bill.Rejections, st.Edited, st.Errors)
			}
			var in, out struct {
				Contents []json.RawMessage `json:"contents"`
			}
			json.Unmarshal([]byte(sent), &in)
			json.Unmarshal(got, &out)
			if len(in.Contents) != len(out.Contents) || len(got) >= len(sent) {
				t.Fatalf("%d contents sent as %d, %d bytes as %d: want the large results offloaded", len(in.Contents), len(out.Contents), len(sent), len(got))
			}
			offloaded := 0
			for i := range in.Contents {
				a, b := string(in.Contents[i]), string(out.Contents[i])
				switch {
				case strings.Contains(a, `"role":"model"`) && a != b:
					t.Errorf("model content %d changed:\n%s\n%s", i, a, b)
				case a != b && !strings.Contains(a, "functionResponse"):
					t.Errorf("content %d changed:\n%s\n%s", i, a, b)
				case a != b:
					offloaded++
				}
			}
			if offloaded == 0 || strings.Count(string(got), "output line of step 0") > 20 {
				t.Errorf("%d results offloaded", offloaded)
			}
			if !near(st.CostUSD, bill.USD) || st.SavedUSD <= 0 {
				t.Errorf("cost $%v (the fake's $%v), without $%v, saved $%v", st.CostUSD, bill.USD, st.CostWithoutUSD, st.SavedUSD)
			}
			_, direct, _, _ := geminiLoop(t, nil, model, 8, bigOrSmall)
			if diff := math.Abs(st.CostWithoutUSD-direct.USD) / direct.USD; diff > 0.05 {
				t.Errorf("estimate without agentctx $%v, the session sent direct cost $%v (%.1f%% off)", st.CostWithoutUSD, direct.USD, 100*diff)
			}
			t.Logf("with $%.6f, without (estimate) $%.6f, direct $%.6f", st.CostUSD, st.CostWithoutUSD, direct.USD)
		})
	}
}

// A Gemini session the pipeline compacts: the summary in place of the
// turns before the kept tail, written as a user content, the tail's model
// contents as they came; every request accepted (Gemini 3: the current
// turn's signatures on their parts, function calls and responses
// paired), the answer right.
func TestGeminiCompactedSession(t *testing.T) {
	e := pipelineEngine(t, proxy.PipelineOptions{Pipeline: pipeline.Options{
		NoPrune: true, Compact: compact.Options{Limit: 12000, MaxRetries: -1}, Workspace: workspace.Options{InlineLimit: 100000},
	}})
	st, bill, sent, got := geminiLoop(t, e, "gemini-3-pro-preview", 14, bigOrSmall)
	if bill.Rejections != 0 || st.Errors != 0 || st.Compactions == 0 {
		t.Fatalf("rejections %d, errors %d, compactions %d", bill.Rejections, st.Errors, st.Compactions)
	}
	var in, out struct {
		Contents []json.RawMessage `json:"contents"`
	}
	json.Unmarshal([]byte(sent), &in)
	json.Unmarshal(got, &out)
	if len(out.Contents) >= len(in.Contents) {
		t.Fatalf("%d contents sent as %d: not compacted", len(in.Contents), len(out.Contents))
	}
	// The tail sent is the client's, byte for byte.
	tail := len(out.Contents) - 1
	for i := 1; i <= tail; i++ {
		if a, b := in.Contents[len(in.Contents)-i], out.Contents[len(out.Contents)-i]; string(a) != string(b) && i < tail {
			t.Errorf("content %d from the end changed:\n%s\n%s", i, a, b)
		}
	}
	t.Logf("%d contents sent as %d; %d compactions; cost $%.6f, without $%.6f", len(in.Contents), len(out.Contents), st.Compactions, st.CostUSD, st.CostWithoutUSD)
}
