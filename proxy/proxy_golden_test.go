package proxy_test

// Golden transcripts of the proxy: scripted sessions of each API go
// through a Server over a PipelineEngine to the strict fake upstream, and
// each step's transcript (testdata/golden/proxy/*.txt) holds what the
// proxy sent upstream, byte for byte, and the session state as stored
// after it. Regenerate after an intended change of behaviour with
//
//	go test ./proxy -run TestGolden -update
//
// and review the diff of testdata/golden. What is normalized: nothing in
// the bytes. The engine runs on a step clock (fastClock or slowClock from a
// fixed date), over a fixed directory (/tmp/agentctx-golden/..., so the
// paths references name are the same everywhere), with the extractive
// summarizer; bodies and states are shown indented (whitespace outside
// strings only), under their size and SHA-256, which pin the exact bytes.
// The client requests are enginetest.Script's sessions: a change there
// changes these transcripts.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/internal/testkit/golden"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/proxy/enginetest"
	"github.com/agentctx/agentctx/workspace"
)

// The step clocks: minutes since goldenEpoch at a step. fastClock (a
// minute a step) lets the history grow to compactions; slowClock (six
// minutes a step) ages results past prune's 15 minutes, so they are
// cleared in batches first.
func fastClock(step int) time.Duration { return time.Duration(step) }
func slowClock(step int) time.Duration { return time.Duration(6 * step) }

// goldenEpoch is the step clock's start.
var goldenEpoch = time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC)

// goldenStep is one client request of a scripted session.
type goldenStep struct {
	label    string
	items    [][]byte
	thinking bool
}

type goldenScenario struct {
	name   string
	api    proxy.API
	mode   proxy.ContextManagement
	limit  int // compaction limit (tokens)
	inline int // offload inline limit (characters)
	clock  func(step int) time.Duration
	// batched clears stale results in batches of at least 1,000 tokens
	// (ClearBatched), whatever they cost: the clearing scenarios pin how
	// a clearing looks on the wire, not when the priced policy makes one.
	batched bool
	steps   func() []goldenStep
	// after, when set, adds steps once the scripted ones ran, given the
	// step indices that compacted.
	after func(compacted []int, steps []goldenStep) []goldenStep
}

// body writes the request body of a step.
func (sc *goldenScenario) body(st goldenStep) []byte {
	items := "[" + string(joinRaw(st.items)) + "]"
	switch sc.api {
	case proxy.APIChat:
		return fmt.Appendf(nil, `{"model":"gpt-5","messages":%s,"tools":[{"type":"function","function":{"name":"shell","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}}]}`, items)
	case proxy.APIResponses:
		return fmt.Appendf(nil, `{"model":"gpt-5","instructions":"You are a coding agent.","input":%s,"tools":[{"type":"function","name":"shell","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}],"store":false}`, items)
	}
	thinking := ""
	if st.thinking {
		thinking = `"thinking":{"type":"enabled","budget_tokens":2048},`
	}
	return fmt.Appendf(nil, `{"model":"claude-sonnet-4-5","max_tokens":4096,%s"system":"You are a coding agent.","tools":[{"name":"Bash","description":"Run a command","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}],"messages":%s}`, thinking, items)
}

func joinRaw(items [][]byte) []byte {
	var b []byte
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	return b
}

func (sc *goldenScenario) path() string {
	switch sc.api {
	case proxy.APIChat:
		return "/v1/chat/completions"
	case proxy.APIResponses:
		return "/v1/responses"
	}
	return "/v1/messages"
}

// scriptSteps are enginetest.Script's requests as steps.
func scriptSteps(api proxy.API, key string, turns, chars int, thinking bool) func() []goldenStep {
	return func() []goldenStep {
		var out []goldenStep
		for i, r := range enginetest.Script(api, key, turns, chars) {
			label := "growth"
			if i == 0 {
				label = "first request"
			}
			items := r.Items
			if thinking {
				items = withThinking(items)
			}
			out = append(out, goldenStep{label: fmt.Sprintf("%s (turn %d)", label, i), items: items, thinking: thinking})
		}
		return out
	}
}

// readBackSteps is an Anthropic session whose fourth result (three times
// the others, so offloaded) is read back whole by the path of its
// artifact's file, with Claude Code's Read tool, before the session goes
// on.
func readBackSteps() []goldenStep {
	script := enginetest.Script(proxy.APIAnthropic, "golden-read", 9, 1200)
	var out []goldenStep
	for i, r := range script[:5] {
		out = append(out, goldenStep{label: fmt.Sprintf("growth (turn %d)", i), items: r.Items})
	}
	// Turn 3's result (call_goldenread_03) is offloaded; the model reads
	// its file.
	base := script[4].Items
	path := "/tmp/agentctx-golden/proxy-anthropic-readback/ws/default/tool_result_call_goldenread_03.txt"
	read := fmt.Appendf(nil, `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_read_1","name":"Read","input":{"file_path":%q}}]}`, path)
	content, _ := json.Marshal(enginetest.ResultText(3, 3*1200))
	result := fmt.Appendf(nil, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_read_1","content":%s}]}`, content)
	items := append(slices.Clone(base), read, result)
	out = append(out, goldenStep{label: "the model reads the offloaded result back by its path", items: items})
	// The session goes on with the read-back result in its history.
	for i, r := range script[5:] {
		more := append(slices.Clone(items), r.Items[len(base):]...)
		out = append(out, goldenStep{label: fmt.Sprintf("growth after the read-back (turn %d)", 5+i), items: more})
	}
	return out
}

// withThinking gives every assistant message of an Anthropic history a
// signed thinking block first (a signature the fake upstream does not
// check: it checks only its own).
func withThinking(items [][]byte) [][]byte {
	out := make([][]byte, len(items))
	for i, it := range items {
		s := string(it)
		if strings.HasPrefix(s, `{"role":"assistant","content":[`) {
			s = fmt.Sprintf(`{"role":"assistant","content":[{"type":"thinking","thinking":"Step %d: the next package to test.","signature":"golden-sig-%03d"},`, i, i) + strings.TrimPrefix(s, `{"role":"assistant","content":[`)
		}
		out[i] = []byte(s)
	}
	return out
}

// behindAndEdited adds the retries behind the first compaction (the
// request before it and the compacting one, sent again) and a client that
// edits its first message (another conversation: a session of its own,
// the golden session's compaction kept).
func behindAndEdited(compacted []int, steps []goldenStep) []goldenStep {
	var out []goldenStep
	if len(compacted) > 0 {
		c := compacted[0]
		for _, i := range []int{c - 1, c} {
			if i >= 0 {
				st := steps[i]
				st.label = fmt.Sprintf("retry of step %d, behind the compaction", i+1)
				out = append(out, st)
			}
		}
	}
	last := steps[len(steps)-1]
	edited := slices.Clone(last.items)
	edited[0] = []byte(strings.Replace(string(edited[0]), "Find why the build fails", "Find why the tests fail", 1))
	out = append(out, goldenStep{label: "the client edits its first message", items: edited, thinking: last.thinking})
	return out
}

func goldenScenarios() []*goldenScenario {
	var out []*goldenScenario
	for _, api := range []proxy.API{proxy.APIAnthropic, proxy.APIChat, proxy.APIResponses} {
		out = append(out,
			// Growth, big results offloaded, old ones pruned in batches.
			&goldenScenario{
				name: string(api) + "-clearing", api: api, limit: 5000, inline: 3000, clock: slowClock, batched: true,
				steps: scriptSteps(api, "golden-clear", 12, 1200, false), after: behindAndEdited,
			},
			// Growth, big results offloaded, compactions; retries behind
			// the first one.
			&goldenScenario{
				name: string(api) + "-compaction", api: api, limit: 2500, inline: 3000, clock: fastClock,
				steps: scriptSteps(api, "golden-compact", 12, 1200, false), after: behindAndEdited,
			},
		)
	}
	// The model reads an offloaded result back by the path its reference
	// names (Claude Code's Read), then the session goes on.
	out = append(out, &goldenScenario{
		name: "anthropic-readback", api: proxy.APIAnthropic, limit: 5000, inline: 3000, clock: fastClock,
		steps: readBackSteps,
	})
	for _, mode := range []proxy.ContextManagement{proxy.ContextClient, proxy.ContextNative} {
		for _, c := range []struct {
			name  string
			limit int
			clock func(int) time.Duration
		}{{"clearing", 5000, slowClock}, {"compaction", 2500, fastClock}} {
			// Signed thinking in every assistant message.
			out = append(out, &goldenScenario{
				name: "anthropic-thinking-" + string(mode) + "-" + c.name, api: proxy.APIAnthropic, mode: mode, limit: c.limit, inline: 3000, clock: c.clock, batched: c.name == "clearing",
				steps: scriptSteps(proxy.APIAnthropic, "golden-think", 12, 1200, true), after: behindAndEdited,
			})
		}
	}
	return out
}

func TestGolden(t *testing.T) {
	for _, sc := range goldenScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			golden.Check(t, "proxy/"+sc.name+".txt", runGolden(t, sc))
		})
	}
}

// runGolden runs a scenario and returns its transcript.
func runGolden(t *testing.T, sc *goldenScenario) []byte {
	dir := golden.FixedDir(t, "proxy-"+sc.name)
	var step atomic.Int64
	now := func() time.Time { return goldenEpoch.Add(sc.clock(int(step.Load())) * time.Minute) }
	sessions := golden.NewSessions()
	po := pipeline.Options{
		WorkspaceDir: filepath.Join(dir, "ws"),
		Sessions:     sessions,
		Workspace:    workspace.Options{InlineLimit: sc.inline},
		Compact:      compact.Options{Limit: sc.limit, Dir: filepath.Join(dir, "archive")},
	}
	if sc.batched {
		po.Clearing, po.ClearAtLeast = pipeline.ClearBatched, 1_000
	}
	e, err := proxy.NewPipelineEngine(proxy.PipelineOptions{Pipeline: po, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	fake := fakeupstream.New(fakeupstream.Options{Now: now})
	up := httptest.NewServer(fake)
	t.Cleanup(up.Close)
	srv, err := proxy.New(proxy.Options{Engine: e, AnthropicURL: up.URL, OpenAIURL: up.URL, ContextManagement: sc.mode})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(srv)
	t.Cleanup(ps.Close)

	var out strings.Builder
	fmt.Fprintf(&out, "# golden transcript: proxy, %s, context management %q, compaction limit %d tokens, inline limit %d characters\n", sc.api, sc.mode, sc.limit, sc.inline)
	out.WriteString("# regenerate: go test ./proxy -run TestGolden -update\n")
	steps := sc.steps()
	seen := 0
	var compacted []int
	compactions := 0
	run := func(i int, st goldenStep) {
		step.Store(int64(i))
		body := sc.body(st)
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ps.URL+sc.path(), strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(proxy.HeaderSession, "golden")
		req.Header.Set("X-Api-Key", "golden-key")
		req.Header.Set("Anthropic-Version", "2023-06-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Fprintf(&out, "\n=== step %d: %s\n", i+1, st.label)
		fmt.Fprintf(&out, "--- client → proxy: POST %s, %d messages ", sc.path(), len(st.items))
		out.WriteString(golden.Head(body))
		fmt.Fprintf(&out, "--- proxy → client: %d\n", resp.StatusCode)
		recs := fake.Records()
		for _, r := range recs[seen:] {
			verdict := "accepted"
			if r.Rejected != "" {
				verdict = "rejected: " + r.Rejected
			}
			same := ""
			if string(r.Body) == string(body) {
				same = ", the client's body as received"
			}
			fmt.Fprintf(&out, "--- proxy → upstream: %s %s (%s%s) ", r.Method, r.Path, verdict, same)
			if same != "" {
				out.WriteString(golden.Head(r.Body))
			} else {
				out.WriteString(golden.Body(r.Body))
			}
		}
		seen = len(recs)
		// The state's count of compactions (saved by Prepare, before the
		// request went upstream; the proxy's statistics are recorded after
		// the answer reached the client).
		var state struct {
			Compactions int `json:"compactions"`
		}
		json.Unmarshal(sessions.Last("default/golden"), &state)
		if n := state.Compactions; n > compactions {
			compacted, compactions = append(compacted, i), n
		}
		out.WriteString(sessions.Dump())
	}
	for i, st := range steps {
		run(i, st)
	}
	if sc.after != nil {
		fmt.Fprintf(&out, "\n# compactions at steps %v\n", plusOne(compacted))
		for j, st := range sc.after(compacted, steps) {
			run(len(steps)+j, st)
		}
	}
	return []byte(out.String())
}

func plusOne(l []int) []int {
	out := make([]int, len(l))
	for i, v := range l {
		out[i] = v + 1
	}
	return out
}
