package proxy_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/tokens"
	"github.com/agentctx/agentctx/transcript"
	"github.com/agentctx/agentctx/workspace/memstore"
)

// manyMessagesRequest is an Anthropic request of about size bytes made of
// n small messages: tool_use and tool_result pairs, each result a short
// line padded so that the whole is about size bytes.
func manyMessagesRequest(size, n int) []byte {
	var b bytes.Buffer
	b.Grow(size + 4096)
	b.WriteString(`{"model":"claude-x","max_tokens":32000,"system":"You are an agent.","tools":[{"name":"Bash","description":"run","input_schema":{"type":"object"}}],"messages":[`)
	head := b.Len()
	per := (size-head)/n - 1 // bytes per message, with its comma
	pad := func(fixed int) string {
		if k := per - fixed; k > 0 {
			return strings.Repeat("x", k)
		}
		return ""
	}
	for i := 0; i < n; i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		use := fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_%07d","name":"Bash","input":{"command":"ls %d%%s"}}]}`, i, i)
		fmt.Fprintf(&b, use, pad(len(use)-2))
		res := fmt.Sprintf(`,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%07d","content":"ok %d %%s"}]}`, i, i)
		fmt.Fprintf(&b, res, pad(len(res)-2))
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// sharedTranscripts holds the project's development transcripts, outside
// the repository; what uses them skips when they are absent.
const sharedTranscripts = "../../shared/transcripts"

// transcriptRequest is an Anthropic request of about size bytes made of
// the user and assistant messages of a real agent transcript (their role
// and content, as a client sends them), repeated with the tool ids of
// each copy made its own; nil when the transcript is absent. Of an
// OpenAI-shaped transcript (OpenHands') that keeps the texts only: its
// calls and their results are in chatRequest.
func transcriptRequest(name string, size int) []byte {
	return repeatedRequest(name, size, `{"model":"claude-x","max_tokens":32000,"system":"You are an agent.","messages":[`,
		func(m agentctx.Message) (agentctx.Message, bool) {
			return agentctx.NewMessage(m.Role, m.Content), m.Role == agentctx.RoleUser || m.Role == agentctx.RoleAssistant
		})
}

// chatRequest is an OpenAI Chat Completions request of about size bytes
// made of every message of an OpenAI-shaped agent transcript (OpenHands':
// system prompts, the assistant's tool calls and the tool messages that
// answer them, as the agent sends them: without the log's timestamp and
// status of each), repeated as transcriptRequest repeats; nil when the
// transcript is absent. With stale, each message keeps its log's
// timestamp, which the engine reads as when its result was first seen
// (months ago): the request of a session whose stale output is cleared
// all at once, as after a restart over a kept session store.
func chatRequest(name string, size int, stale bool) []byte {
	return repeatedRequest(name, size, `{"model":"gpt-x","messages":[`,
		func(m agentctx.Message) (agentctx.Message, bool) {
			if stale {
				return m.WithoutFields("messageStatus"), true
			}
			return m.WithoutFields("timestamp", "messageStatus"), true
		})
}

// repeatedRequest writes head, then the messages of a transcript that
// keep returns true for (as it returns them), repeated until the body
// is about size bytes, each copy's tool ids made its own, then closes the
// list and the object.
func repeatedRequest(name string, size int, head string, keep func(agentctx.Message) (agentctx.Message, bool)) []byte {
	doc, err := transcript.ReadFile(context.Background(), filepath.Join(sharedTranscripts, name), nil)
	if err != nil {
		return nil
	}
	var one []byte
	for _, m := range doc.Messages {
		m, ok := keep(m)
		if !ok {
			continue
		}
		if len(one) > 0 {
			one = append(one, ',')
		}
		if one, err = m.AppendJSON(one); err != nil {
			return nil
		}
	}
	var b bytes.Buffer
	b.Grow(size + len(one) + 4096)
	b.WriteString(head)
	for c := 0; b.Len() < size; c++ {
		if c > 0 {
			b.WriteByte(',')
		}
		cp := one
		for _, key := range []string{`"id":"`, `"tool_use_id":"`, `"tool_call_id":"`} {
			cp = bytes.ReplaceAll(cp, []byte(key), []byte(fmt.Sprintf(`%sc%d_`, key, c)))
		}
		b.Write(cp)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// hugeResultRequest is an Anthropic request whose one tool result is
// about size bytes of terminal output.
func hugeResultRequest(size int) []byte {
	var b bytes.Buffer
	b.Grow(size + 4096)
	b.WriteString(`{"model":"claude-x","max_tokens":32000,"system":"You are an agent.","tools":[{"name":"Bash","description":"run","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"list everything"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls -laR /"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"`)
	line := `drwxr-xr-x  2 root root 4096 Nov 23 file.go ok\n`
	for i := 0; b.Len() < size; i++ {
		b.WriteString(line[:len(line)-2])
		fmt.Fprintf(&b, "%d\\n", i)
	}
	b.WriteString(`"}]}]}`)
	return b.Bytes()
}

// heapPeak samples the heap (the bytes of objects, live or not yet
// collected) every half millisecond from start to stop and keeps the
// highest value.
type heapPeak struct {
	stop chan struct{}
	done chan uint64
}

func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func startHeapPeak() *heapPeak {
	h := &heapPeak{stop: make(chan struct{}), done: make(chan uint64, 1)}
	go func() {
		peak := heapObjects()
		t := time.NewTicker(500 * time.Microsecond)
		defer t.Stop()
		for {
			select {
			case <-h.stop:
				h.done <- max(peak, heapObjects())
				return
			case <-t.C:
				peak = max(peak, heapObjects())
			}
		}
	}()
	return h
}

// processCPU returns the CPU time of the process so far (user and
// system, every thread: the garbage collector's and the kernel's work on
// files included), which a loaded machine does not inflate as it does
// wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// end returns the peak.
func (h *heapPeak) end() uint64 {
	close(h.stop)
	return <-h.done
}

// BenchmarkHugeRequest sends one huge request through the proxy over the
// pipeline engine (a fresh directory workspace and session each time, so
// every request is a session's first) to a local upstream: 10 MB of
// 100,000 small messages (tool_use and tool_result pairs), and one 60 MB
// tool result; and the first again over a workspace in memory (the
// engine's own cost, without 50,000 artifacts written as files); and 10 MB
// of 10,000 messages of about 1 KB, and 10 MB of the turns of real agent
// transcripts (when ../shared has them), without and with compaction. It
// reports the peak heap above what was held before the request, in MB and
// as a multiple of the body ("peak/body"), with the time per request and
// the process's CPU time per request (cpu-ms/op), which a loaded machine
// inflates less (issue 24).
func BenchmarkHugeRequest(b *testing.B) {
	var mu sync.Mutex
	var upstreamBytes int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		mu.Lock()
		upstreamBytes = n
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"usage":{"input_tokens":1,"output_tokens":1}}`)
	}))
	defer up.Close()
	// The vocabulary is built once a process, by whichever request comes
	// first: built here, it is not counted in the first case's peak (4.4
	// MB, 0.4 of a body, when a case ran alone).
	tokens.O200kBase()
	many := func() []byte { return manyMessagesRequest(10<<20, 100_000) }
	// larger messages (about 1 KB each, as a coding agent's turns are):
	// the per-message costs weigh less
	fewer := func() []byte { return manyMessagesRequest(10<<20, 10_000) }
	// real turns: Claude Code's (a long session, and a port), OpenHands'
	spotter := func() []byte { return transcriptRequest("spotter__fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl", 10<<20) }
	port := func() []byte {
		return transcriptRequest("claude-reliability__python-to-rust-port__transcript.jsonl", 10<<20)
	}
	openhands := func() []byte { return transcriptRequest("OpenHands__multi_swe_bench_examples_output.jsonl", 10<<20) }
	// OpenHands' turns whole, as it sends them: Chat Completions
	openhandsChat := func() []byte { return chatRequest("OpenHands__multi_swe_bench_examples_output.jsonl", 10<<20, false) }
	// and with every result's output stale (thousands cleared and stored)
	openhandsStale := func() []byte { return chatRequest("OpenHands__multi_swe_bench_examples_output.jsonl", 10<<20, true) }
	for _, tc := range []struct {
		name string
		body func() []byte
		mem  bool // the workspace in memory: the engine without the file system
		// every: every result stored when first seen (StoreOnReplace off,
		// the library's default; `agentctx proxy` turns it on)
		every bool
		// compact: compaction on (the default limit, 200,000 tokens: the
		// request is 749,000), with the extractive summarizer
		compact bool
		chat    bool // an OpenAI Chat Completions request
	}{
		{"10MB-1e5msgs", many, false, false, false, false},
		{"60MB-result", func() []byte { return hugeResultRequest(60 << 20) }, false, false, false, false},
		{"10MB-1e5msgs-memstore", many, true, false, false, false},
		{"10MB-1e5msgs-every", many, false, true, false, false},
		{"10MB-1e5msgs-compact", many, false, false, true, false},
		{"10MB-1e4msgs", fewer, false, false, false, false},
		{"10MB-1e4msgs-compact", fewer, false, false, true, false},
		{"10MB-claudecode", spotter, false, false, false, false},
		{"10MB-claudecode-compact", spotter, false, false, true, false},
		{"10MB-port", port, false, false, false, false},
		{"10MB-port-compact", port, false, false, true, false},
		{"10MB-openhands", openhands, false, false, false, false},
		{"10MB-openhands-compact", openhands, false, false, true, false},
		{"10MB-openhands-chat", openhandsChat, false, false, false, true},
		{"10MB-openhands-chat-compact", openhandsChat, false, false, true, true},
		{"10MB-openhands-chat-stale", openhandsStale, false, false, false, true},
		{"10MB-openhands-chat-stale-compact", openhandsStale, false, false, true, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			body := tc.body()
			if body == nil {
				b.Skip("no transcripts at " + sharedTranscripts)
			}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			var peak uint64
			var edited int
			var cpu time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dir := b.TempDir()
				o := pipeline.Options{WorkspaceDir: filepath.Join(dir, "ws"), NoCompact: !tc.compact, StoreOnReplace: !tc.every}
				o.Compact.Dir = filepath.Join(dir, "archive")
				if tc.mem {
					o.Store = memstore.New()
				}
				e, err := proxy.NewPipelineEngine(proxy.PipelineOptions{Pipeline: o})
				if err != nil {
					b.Fatal(err)
				}
				srv, err := proxy.New(proxy.Options{Engine: e, AnthropicURL: up.URL, OpenAIURL: up.URL})
				if err != nil {
					b.Fatal(err)
				}
				path := "/v1/messages"
				if tc.chat {
					path = "/v1/chat/completions"
				}
				req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
				req.Header.Set(proxy.HeaderSession, fmt.Sprint("huge", i))
				w := httptest.NewRecorder()
				runtime.GC()
				base := heapObjects()
				hp := startHeapPeak()
				cpu0 := processCPU()
				b.StartTimer()
				srv.ServeHTTP(w, req)
				b.StopTimer()
				cpu += processCPU() - cpu0
				if p := hp.end(); p > base && p-base > peak {
					peak = p - base
				}
				if w.Code != 200 {
					b.Fatalf("status %d: %s", w.Code, w.Body.String())
				}
				if st := srv.Stats(); len(st) == 1 {
					edited += st[0].Edited
				}
				e.Close()
				b.StartTimer()
			}
			b.StopTimer()
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(peak)/(1<<20), "peak-MB")
			b.ReportMetric(float64(peak)/float64(len(body)), "peak/body")
			b.ReportMetric(float64(edited)/float64(b.N), "edited/op")
			mu.Lock()
			b.ReportMetric(float64(upstreamBytes)/float64(len(body)), "sent/body")
			mu.Unlock()
		})
	}
}

// BenchmarkDecodedFloor measures what no engine working on decoded
// messages can go below: the live heap of a request's messages decoded
// as the proxy's decode cache keeps them (agentctx.OwnedDecoder, one
// agentctx.Message each, its blocks and its own copies of their strings),
// beside the body the proxy holds to forward it. It reports that heap as a
// multiple of the body ("decoded/body"), per message ("B/msg"), and with
// the body ("floor/body"): BenchmarkHugeRequest's peak/body of the same
// body cannot be lower than floor/body while the engine takes
// []agentctx.Message. Run with -benchtime 1x.
func BenchmarkDecodedFloor(b *testing.B) {
	for _, tc := range []struct {
		name string
		body func() []byte
	}{
		{"10MB-1e5msgs", func() []byte { return manyMessagesRequest(10<<20, 100_000) }},
		{"10MB-1e4msgs", func() []byte { return manyMessagesRequest(10<<20, 10_000) }},
		{"10MB-claudecode", func() []byte {
			return transcriptRequest("spotter__fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl", 10<<20)
		}},
		{"10MB-port", func() []byte {
			return transcriptRequest("claude-reliability__python-to-rust-port__transcript.jsonl", 10<<20)
		}},
		{"10MB-openhands", func() []byte { return transcriptRequest("OpenHands__multi_swe_bench_examples_output.jsonl", 10<<20) }},
		{"10MB-openhands-chat", func() []byte { return chatRequest("OpenHands__multi_swe_bench_examples_output.jsonl", 10<<20, false) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			body := tc.body()
			if body == nil {
				b.Skip("no transcripts at " + sharedTranscripts)
			}
			members, err := rawjson.AppendMembers(nil, body)
			if err != nil {
				b.Fatal(err)
			}
			var list []byte
			for _, m := range members {
				if m.Key == "messages" {
					list = m.Value
				}
			}
			els, err := rawjson.AppendElements(nil, list)
			if err != nil {
				b.Fatal(err)
			}
			var live uint64
			for i := 0; i < b.N; i++ {
				before := liveHeap()
				msgs := make([]agentctx.Message, len(els))
				var dec agentctx.OwnedDecoder
				for k, el := range els {
					if msgs[k], err = dec.Decode(el); err != nil {
						b.Fatal(err)
					}
				}
				live = liveHeap() - before
				runtime.KeepAlive(msgs)
			}
			runtime.KeepAlive(els)
			runtime.KeepAlive(body)
			b.ReportMetric(float64(live)/float64(len(body)), "decoded/body")
			b.ReportMetric(float64(live)/float64(len(els)), "B/msg")
			b.ReportMetric(float64(live)/float64(len(body))+1, "floor/body")
		})
	}
}

// liveHeap returns the bytes of the heap's live objects, after a
// collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
