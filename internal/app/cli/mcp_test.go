package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentctx/agentctx/internal/app/cli"
	"github.com/agentctx/agentctx/internal/testkit/e2eclient"
)

// offloadedWorkspace stores a session with one large tool result with
// agentctx ws offload and returns the workspace directory and the result.
func offloadedWorkspace(t *testing.T) (string, string) {
	t.Helper()
	var big strings.Builder
	for i := 1; big.Len() < 50_000; i++ {
		big.WriteString(strings.Repeat("x", i%70) + " row\n")
	}
	msgs, _ := json.Marshal([]any{
		map[string]any{"role": "user", "content": "go"},
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "bash", "input": map[string]any{"command": "cat log"}}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": big.String()}}},
	})
	dir := filepath.Join(t.TempDir(), "ws")
	in := filepath.Join(t.TempDir(), "h.json")
	os.WriteFile(in, msgs, 0o644)
	if code, _, errOut := runCLI(t, "", "ws", "offload", "--workspace", dir, "--session", "s1", in); code != 0 {
		t.Fatalf("ws offload: %s", errOut)
	}
	return dir, big.String()
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// TestMCPStdio runs agentctx mcp in-process on pipes and talks to it with
// the official SDK's client, as Claude Code does over stdio. It is
// registered as the README shows, without the session the results were
// stored for.
func TestMCPStdio(t *testing.T) {
	dir, original := offloadedWorkspace(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(t.Context(), []string{"mcp", "--workspace", dir}, cli.Streams{In: inR, Out: outW, Err: &errb})
		outW.Close()
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil || len(tools.Tools) != 6 {
		t.Fatalf("tools/list: %v %v", tools, err)
	}
	call := func(name string, args map[string]any) string {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	list := call("get_tool_result_offload_info", nil)
	if !strings.Contains(list, `"artifact_id":"tool_result_toolu_1"`) {
		t.Errorf("list: %s", list)
	}
	// Read the result back whole, page by page.
	var got strings.Builder
	for offset := 0; ; {
		page := call("get_knowledge_by_lines", map[string]any{"artifact_id": "tool_result_toolu_1", "start_line": 1 + offset, "end_line": 100000})
		header, body, _ := strings.Cut(page, "\n")
		var a, b, n int
		if _, err := sscanf(header, "Lines %d-%d of %d", &a, &b, &n); err != nil {
			t.Fatalf("header %q", header)
		}
		body, _, _ = strings.Cut(body, "\n\n[Read limit")
		got.WriteString(body + "\n")
		if b == n {
			break
		}
		offset = b
	}
	if got.String() != original {
		t.Errorf("read back %d bytes, want the original %d", got.Len(), len(original))
	}
	cs.Close()
	inW.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d: %s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("agentctx mcp did not stop at the end of stdin")
	}
}

func sscanf(s, format string, v ...any) (int, error) {
	re := regexp.MustCompile(`^Lines (\d+)-(\d+) of (\d+)$`)
	m := re.FindStringSubmatch(s)
	if m == nil {
		return 0, io.ErrUnexpectedEOF
	}
	for i, p := range v {
		json.Unmarshal([]byte(m[i+1]), p)
	}
	return len(v), nil
}

func TestMCPHTTP(t *testing.T) {
	dir, original := offloadedWorkspace(t)
	ctx, cancel := context.WithCancel(t.Context())
	var errb e2eclient.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, []string{"mcp", "--workspace", dir, "--session", "s1", "--http", "127.0.0.1:0", "--max-chars", "60000", "--max-tokens", "30000"},
			cli.Streams{In: strings.NewReader(""), Out: io.Discard, Err: &errb})
	}()
	var url string
	for range 200 {
		if m := regexp.MustCompile(`http://\S+/`).FindString(errb.String()); m != "" {
			url = m
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if url == "" {
		cancel()
		t.Fatalf("no address on stderr: %q", errb.String())
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_knowledge_by_id", Arguments: map[string]any{"artifact_id": "tool_result_toolu_1"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != original {
		t.Errorf("get over HTTP with --max-chars 60000: %v %v", err, res)
	}
	cs.Close()
	cancel()
	if code := <-done; code != cli.ExitInterrupted {
		t.Errorf("exit %d after cancel, want %d: %s", code, cli.ExitInterrupted, errb.String())
	}
}

func TestMCPBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"mcp", "--http", "not an address"},
		{"mcp", "--max-chars", "-1"},
		{"mcp", "--namespace", ""},
		{"mcp", "extra"},
	} {
		code, out, errOut := runCLI(t, "", append(args, "--workspace", t.TempDir())...)
		if code != cli.ExitUsage || out != "" || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}

func TestToolsCommand(t *testing.T) {
	keys := map[string][]string{
		"anthropic": {"description", "input_schema", "name"},
		"openai":    {"function", "type"},
		"mcp":       {"_meta", "annotations", "description", "inputSchema", "name"},
	}
	var names []string
	for format, want := range keys {
		code, out, errOut := runCLI(t, "", "tools", "--format", format)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", format, code, errOut)
		}
		var tools []json.RawMessage
		if err := json.Unmarshal([]byte(out), &tools); err != nil || len(tools) != 6 {
			t.Fatalf("%s: %v\n%s", format, err, out)
		}
		var got []string
		for _, tool := range tools {
			m := jsonKeys(t, string(tool), want...)
			var name string
			if format == "openai" {
				var f struct{ Name string }
				json.Unmarshal(m["function"], &f)
				name = f.Name
			} else {
				json.Unmarshal(m["name"], &name)
			}
			got = append(got, name)
		}
		if names == nil {
			names = got
		} else if strings.Join(names, ",") != strings.Join(got, ",") {
			t.Errorf("%s names %q, want %q", format, got, names)
		}
	}
	if code, _, errOut := runCLI(t, "", "tools", "--format", "gemini"); code != cli.ExitUsage || !strings.Contains(errOut, "want anthropic, openai or mcp") {
		t.Errorf("bad format: %d %q", code, errOut)
	}
}

// TestMCPSeesLaterResults starts the server before anything is stored, as
// Claude Code does at the start of a session, and reads a result stored
// afterwards.
func TestMCPSeesLaterResults(t *testing.T) {
	for _, name := range []string{"dir", "ws.db"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "later", name)
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			done := make(chan int, 1)
			go func() {
				done <- cli.Run(t.Context(), []string{"mcp", "--workspace", dir}, cli.Streams{In: inR, Out: outW, Err: io.Discard})
				outW.Close()
			}()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
			if err != nil {
				t.Fatal(err)
			}
			msgs := `[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"bash","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"stored later\n"}]}]`
			if code, _, errOut := runCLI(t, msgs, "ws", "offload", "--workspace", dir, "--session", "s1"); code != 0 {
				t.Fatalf("ws offload: %s", errOut)
			}
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_knowledge_by_id", Arguments: map[string]any{"artifact_id": "tool_result_t1"}})
			if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "stored later\n" {
				t.Errorf("read: %v %+v", err, res)
			}
			cs.Close()
			inW.Close()
			<-done
		})
	}
}
