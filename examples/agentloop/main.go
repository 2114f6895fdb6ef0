// Command agentloop is an agent loop on anthropic-sdk-go with agentctx's
// pipeline plugged into the client as a middleware. The model is a fake
// Messages API on a local port that follows a script (no API key needed),
// and so are its tools, but the loop is the one a real agent runs:
//
//	p, _ := pipeline.New(pipeline.Options{SessionID: "nightly-report"})
//	client := anthropic.NewClient(anthropicx.WithPipeline(p))          // 1: every request is prepared
//	params.Tools = append(params.Tools, anthropicx.Tools(p.Workspace())...) // 2: the read-back tools
//	for {
//		msg, _ := client.Messages.New(ctx, params)
//		params.Messages = append(params.Messages, msg.ToParam())
//		for each tool_use block u {
//			if res, ok := anthropicx.ExecuteTool(ctx, p.Workspace(), u); ok { // 3: read-back calls
//				results = append(results, res)
//			} else {
//				results = append(results, run the program's own tool)
//			}
//		}
//		...
//	}
//
// The loop keeps its history as SDK params, untouched. On every request
// the middleware keeps each tool result in a workspace and replaces the
// 60,000-character log by a reference (which the model then greps and
// reads through the read-back tools), and compacts the conversation once it
// reaches 92% of a small 2,500-token window; on the following requests it
// reuses that summary instead of compacting again.
//
//	go run ./examples/agentloop
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/anthropicx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/workspace"
)

func main() {
	dir, err := os.MkdirTemp("", "agentloop-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	if _, err := run(context.Background(), os.Stdout, dir); err != nil {
		fmt.Fprintln(os.Stderr, "agentloop:", err)
		os.Exit(1)
	}
}

// readBack is a call of a read-back tool and what it returned.
type readBack struct {
	Name   string
	Input  json.RawMessage
	Result string
}

// run runs the loop, writing its workspace and archives under dir, and
// returns the read-back calls the model made.
func run(ctx context.Context, w io.Writer, dir string) ([]readBack, error) {
	clock := &fakeClock{now: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
	p, err := pipeline.New(pipeline.Options{
		SessionID:    "nightly-report",
		WorkspaceDir: filepath.Join(dir, "workspace"),
		Compact:      compact.Options{Limit: 2_500, Dir: filepath.Join(dir, "archive")},
		Now:          clock.Now,
	})
	if err != nil {
		return nil, err
	}
	defer p.Close()

	api := httptest.NewServer(&fakeModel{})
	defer api.Close()
	turn := 0
	client := anthropic.NewClient(
		option.WithBaseURL(api.URL), option.WithAPIKey("not-needed"), // the fake model
		anthropicx.WithPipelineOptions(p, anthropicx.Options{
			OnResult: func(_ context.Context, res *pipeline.Result) { turn++; report(w, turn, &res.Report) },
		}),
	)
	params := anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 4096,
		System:    []anthropic.TextBlockParam{{Text: "You are an on-call engineer. Use the tools to investigate and fix problems."}},
		Tools:     append(programTools(), anthropicx.Tools(p.Workspace())...),
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(
			"The nightly report job failed again. Find out why, fix it, and rerun it."))},
	}
	var reads []readBack
	for {
		msg, err := client.Messages.New(ctx, params)
		if err != nil {
			return nil, err
		}
		params.Messages = append(params.Messages, msg.ToParam())
		var results []anthropic.ContentBlockParamUnion
		for _, block := range msg.Content {
			u, ok := block.AsAny().(anthropic.ToolUseBlock)
			if !ok {
				continue
			}
			if res, handled := anthropicx.ExecuteTool(ctx, p.Workspace(), u); handled {
				reads = append(reads, readBack{Name: u.Name, Input: u.Input, Result: res.OfToolResult.Content[0].OfText.Text})
				results = append(results, res)
				continue
			}
			out, failed := runTool(u)
			results = append(results, anthropic.NewToolResultBlock(u.ID, out, failed))
		}
		if len(results) == 0 {
			fmt.Fprintf(w, "\nassistant: %s\n", msg.Content[0].Text)
			break
		}
		clock.advance(4 * time.Minute)
		params.Messages = append(params.Messages, anthropic.NewUserMessage(results...))
	}
	fmt.Fprintf(w, "\nThe loop's history has %d messages, untouched; the originals of everything taken out are in %s.\n", len(params.Messages), dir)
	return reads, nil
}

// programTools are the program's own tools.
func programTools() []anthropic.ToolUnionParam {
	tool := func(name, desc string, props map[string]any, required ...string) anthropic.ToolUnionParam {
		return anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{Name: name, Description: anthropic.String(desc),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: props, Required: required}}}
	}
	str := map[string]any{"type": "string"}
	return []anthropic.ToolUnionParam{
		tool("Bash", "Run a shell command.", map[string]any{"command": str}, "command"),
		tool("Read", "Read a file.", map[string]any{"file_path": str}, "file_path"),
		tool("Edit", "Replace a string in a file.", map[string]any{"file_path": str, "old_string": str, "new_string": str}, "file_path", "old_string", "new_string"),
	}
}

// report prints one line per request: what was sent and what changed.
func report(w io.Writer, turn int, r *pipeline.Report) {
	var did []string
	for _, s := range r.Steps {
		switch {
		case s.Step == pipeline.StepPrune && s.Changed > 0:
			did = append(did, fmt.Sprintf("pruned %d", s.Changed))
		case s.Step == pipeline.StepOffload && s.Changed > 0:
			did = append(did, fmt.Sprintf("offloaded %d", s.Changed))
		case s.Step == pipeline.StepCompact && s.Compact != nil && s.Compact.Compacted:
			did = append(did, fmt.Sprintf("compacted %d messages", s.Compact.Stats.CompactedMessageCount))
		case s.Step == pipeline.StepCompact && s.Compact != nil && s.Compact.Reused > 0:
			did = append(did, fmt.Sprintf("reused the summary of %d messages", s.Compact.Reused))
		}
	}
	fmt.Fprintf(w, "request %2d: history %2d messages, %5d tokens → sending %2d messages, %5d tokens  %s\n",
		turn, r.MessagesBefore, r.TokensBefore, r.MessagesAfter, r.TokensAfter, strings.Join(did, ", "))
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// fakeModel is a Messages API that follows a script of tool calls, reading
// what it needs (the artifact id of an offloaded log) from the request it
// is sent, which is what the middleware prepared.
type fakeModel struct {
	mu   sync.Mutex
	step int
}

var artifactRef = regexp.MustCompile(`<knowledge id="([^"]+)"`)

func (m *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	doc, err := agentctx.ParseDocument(r.Context(), body)
	if err != nil {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad body"}}`, http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.step++
	reply := m.reply(m.step, doc.Messages)
	m.mu.Unlock()
	content, _ := reply.Content.MarshalJSON() // blocks built above: cannot fail
	out, _ := json.Marshal(map[string]any{
		"id": fmt.Sprintf("msg_%02d", m.step), "type": "message", "role": "assistant", "model": "fake",
		"content": json.RawMessage(content), "stop_reason": "tool_use",
		// A real API bills what it was sent: about one token per four bytes.
		"usage": map[string]int{"input_tokens": len(body) / 4, "output_tokens": 20},
	})
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

func (m *fakeModel) reply(step int, sent []agentctx.Message) agentctx.Message {
	call := func(text, name string, input any) agentctx.Message {
		in, _ := json.Marshal(input)
		blocks := []agentctx.Block{agentctx.ToolUseBlock(fmt.Sprintf("toolu_%02d", step), name, in)}
		if text != "" {
			blocks = append([]agentctx.Block{agentctx.TextBlock(text)}, blocks...)
		}
		return agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(blocks...))
	}
	logID := "tool_result_toolu_02"
	for _, msg := range sent {
		if ms := artifactRef.FindStringSubmatch(msg.Content.AsText()); ms != nil {
			logID = ms[1]
		}
	}
	switch step {
	case 1:
		return call("Let me look at the job's status.", "Bash", map[string]string{"command": "systemctl status nightly-report"})
	case 2:
		return call("It exited with status 1. The journal should say why.", "Bash", map[string]string{"command": "journalctl -u nightly-report --since yesterday"})
	case 3:
		// The log was too large for the context: the pipeline left a
		// reference to the workspace artifact that holds it whole.
		return call("The log was offloaded; searching it for errors.", workspace.ToolGrepKnowledge,
			map[string]any{"artifact_id": logID, "pattern": "ERROR|panic", "context_lines": 1})
	case 4:
		return call("Reading the end of the log.", workspace.ToolGetKnowledgeByLines,
			map[string]any{"artifact_id": logID, "start_line": 600, "end_line": 1000})
	case 5:
		return call("The export query times out. Reading the job's configuration.", "Read", map[string]string{"file_path": "/srv/report/config.yaml"})
	case 6:
		return call("", "Read", map[string]string{"file_path": "/srv/report/queries/export.sql"})
	case 7:
		return call("Checking how many rows the query scans.", "Bash", map[string]string{"command": "psql reports -c 'EXPLAIN ANALYZE ...'"})
	case 8:
		return call("A sequential scan over 48M rows: the index on created_at is missing since the migration. Creating it.", "Bash", map[string]string{"command": "psql reports -c 'CREATE INDEX CONCURRENTLY orders_created_at ON orders (created_at)'"})
	case 9:
		return call("Raising the statement timeout a little as a safety margin.", "Edit", map[string]string{"file_path": "/srv/report/config.yaml", "old_string": "statement_timeout: 30s", "new_string": "statement_timeout: 120s"})
	case 10:
		return call("Rerunning the job.", "Bash", map[string]string{"command": "systemctl start nightly-report && journalctl -u nightly-report -n 40 --no-pager"})
	case 11:
		return call("", "Bash", map[string]string{"command": "ls -l /srv/report/out/ | tail -5"})
	}
	return agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.TextBlock(
		"Fixed: the nightly export scanned all 48M orders because the created_at index was lost in the last migration, and hit the 30 s statement timeout. I recreated the index (the query now takes 1.8 s), raised the timeout to 120 s as a margin, and reran the job: today's report is in /srv/report/out/.")))
}

// runTool runs a call of the program's own tools, from canned output.
func runTool(u anthropic.ToolUseBlock) (string, bool) {
	var in struct{ Command, FilePath string }
	in.FilePath = jsonString(u.Input, "file_path")
	in.Command = jsonString(u.Input, "command")
	switch {
	case strings.HasPrefix(in.Command, "systemctl status"):
		return "× nightly-report.service - Nightly sales report\n     Loaded: loaded (/etc/systemd/system/nightly-report.service; enabled)\n     Active: failed (Result: exit-code) since Mon 2026-03-02 02:31:07 UTC; 6h ago\n    Process: 18211 ExecStart=/srv/report/bin/report --config /srv/report/config.yaml (code=exited, status=1/FAILURE)\n   Main PID: 18211 (code=exited, status=1/FAILURE)\n", true
	case strings.HasPrefix(in.Command, "journalctl -u nightly-report --since"):
		return journal(), false
	case strings.HasSuffix(in.FilePath, "config.yaml"):
		return configYAML, false
	case strings.HasSuffix(in.FilePath, ".sql"):
		return exportSQL, false
	case strings.Contains(in.Command, "EXPLAIN"):
		return explain, false
	case strings.Contains(in.Command, "CREATE INDEX"):
		return "CREATE INDEX\n", false
	case u.Name == "Edit":
		return "The file " + in.FilePath + " has been updated.", false
	case strings.HasPrefix(in.Command, "systemctl start"):
		return rerun, false
	case strings.HasPrefix(in.Command, "ls"):
		return "-rw-r--r-- 1 report report 18233411 Feb 27 02:14 sales-2026-02-26.parquet\n-rw-r--r-- 1 report report 18419920 Feb 28 02:15 sales-2026-02-27.parquet\n-rw-r--r-- 1 report report 18502117 Mar  1 02:14 sales-2026-02-28.parquet\n-rw-r--r-- 1 report report 18611052 Mar  2 09:41 sales-2026-03-01.parquet\n", false
	}
	return "Error: unknown command", true
}

func jsonString(raw json.RawMessage, key string) string {
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	s, _ := m[key].(string)
	return s
}

// journal is a day of the job's log: 60,000 characters, with the failure
// near the end.
func journal() string {
	var b strings.Builder
	t := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	for i := 0; b.Len() < 58_000; i++ {
		t = t.Add(1700 * time.Millisecond)
		fmt.Fprintf(&b, "%s report[18211]: INFO batch %d: exported %d orders from region %s in %dms\n",
			t.Format("Jan 02 15:04:05"), i, 900+i*7%211, []string{"eu-west", "us-east", "ap-south"}[i%3], 40+i*13%170)
	}
	b.WriteString("Mar 02 02:31:06 report[18211]: ERROR query export_orders: canceling statement due to statement timeout (30s)\n")
	b.WriteString("Mar 02 02:31:06 report[18211]: ERROR export failed after 3 attempts; giving up\n")
	b.WriteString("Mar 02 02:31:07 systemd[1]: nightly-report.service: Main process exited, code=exited, status=1/FAILURE\n")
	return b.String()
}

var configYAML = "# /srv/report/config.yaml\ndatabase:\n  dsn: postgres://report@db.internal/reports\n  statement_timeout: 30s\n  max_conns: 4\nexport:\n  query: queries/export.sql\n  since: 24h\n  format: parquet\n  out: /srv/report/out/\n  regions: [eu-west, us-east, ap-south]\nretries: 3\n" +
	strings.Repeat("# (commented-out settings of the previous exporter kept for reference)\n# legacy_batch_size: 5000\n# legacy_compression: snappy\n", 12)

var exportSQL = "-- queries/export.sql: yesterday's orders with their lines and customers\nSELECT o.id, o.created_at, o.region, c.name, c.country, l.sku, l.qty, l.price\nFROM orders o\nJOIN customers c ON c.id = o.customer_id\nJOIN order_lines l ON l.order_id = o.id\nWHERE o.created_at >= now() - interval '24 hours'\nORDER BY o.created_at;\n" +
	strings.Repeat("-- Columns: id, created_at, region, name, country, sku, qty, price. Consumers: finance dashboard, tax export, warehouse forecast.\n", 10)

var explain = "                                    QUERY PLAN\n------------------------------------------------------------------------------------------\n Sort  (cost=2419883.11..2420102.40 rows=87716 width=96) (actual time=31207.3..31220.9 rows=91208 loops=1)\n   ->  Hash Join  (cost=1120.55..2412602.88 rows=87716 width=96)\n         ->  Seq Scan on orders o  (cost=0.00..2398120.00 rows=87716 width=40) (actual time=0.04..30911.7 rows=91208 loops=1)\n               Filter: (created_at >= (now() - '24:00:00'::interval))\n               Rows Removed by Filter: 48211907\n Planning Time: 0.412 ms\n Execution Time: 31224.662 ms\n" +
	strings.Repeat(" (buffers: shared hit=1200 read=612331)\n", 20)

var rerun = strings.Repeat("Mar 02 09:40:12 report[20417]: INFO batch: exported orders from region eu-west in 61ms\n", 30) +
	"Mar 02 09:41:55 report[20417]: INFO export done: 91208 orders, 1.8s in queries\nMar 02 09:41:55 systemd[1]: nightly-report.service: Deactivated successfully.\n"
