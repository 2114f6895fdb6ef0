package transcript_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/transcript"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

func readDoc(t *testing.T, path string) (*agentctx.Document, []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := transcript.ParseDocument(context.Background(), append([]byte(nil), data...))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc, data
}

// compactLines compacts each JSON value of a JSON or JSON Lines input,
// keeping one value per line for JSON Lines.
func compactLines(data []byte, jsonl bool) []byte {
	if !jsonl {
		return append(rawjson.AppendCompact(nil, bytes.TrimSpace(data)), '\n')
	}
	var out []byte
	for _, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 {
			out = append(rawjson.AppendCompact(out, line), '\n')
		}
	}
	return out
}

// TestRoundTripLossless: decode -> encode gives back every byte of the input
// (whitespace between tokens aside) for the array, object and JSON Lines
// shapes.
func TestRoundTripLossless(t *testing.T) {
	tests := []struct {
		file      string
		format    agentctx.Format
		msgs      int
		nonModel  int
		reusedIDs int
	}{
		{"anthropic_request.json", agentctx.FormatObject, 6, 0, 0},
		{"openai_chat.json", agentctx.FormatArray, 6, 0, 0},
		{"messages.jsonl", agentctx.FormatJSONL, 4, 0, 0},
		{"crlf.jsonl", agentctx.FormatJSONL, 2, 0, 0},
		{"swe_traj.json", transcript.FormatMiniSWEAgent, 3, 1, 0},
		{"mini_swe_agent.traj.json", transcript.FormatMiniSWEAgent, 8, 1, 0},
		{"swe_agent.traj", transcript.FormatSWEAgent, 8, 0, 0},
		{"swe_agent_reused_ids.traj", transcript.FormatSWEAgent, 9, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			doc, data := readDoc(t, filepath.Join("..", "testdata", tt.file))
			if doc.Format != tt.format || len(doc.Messages) != tt.msgs || len(doc.NonModel()) != tt.nonModel {
				t.Fatalf("format %s with %d messages (%d not for the model), want %s with %d (%d)",
					doc.Format, len(doc.Messages), len(doc.NonModel()), tt.format, tt.msgs, tt.nonModel)
			}
			rep := agentctx.ValidatePairing(doc.Messages)
			if !rep.Valid || rep.ReusedCallIDs != tt.reusedIDs {
				t.Errorf("pairing valid %v with %d reused ids, want valid with %d: %v", rep.Valid, rep.ReusedCallIDs, tt.reusedIDs, rep.Issues)
			}
			var out bytes.Buffer
			if err := doc.Encode(&out); err != nil {
				t.Fatal(err)
			}
			want := compactLines(data, tt.format == agentctx.FormatJSONL)
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("round trip differs\n got: %s\nwant: %s", out.Bytes(), want)
			}
			// Each message on its own, through encoding/json's interfaces.
			for i, m := range doc.Messages {
				b, err := m.AppendJSON(nil)
				if err != nil {
					t.Fatal(err)
				}
				var back agentctx.Message
				if err := back.UnmarshalJSON(b); err != nil {
					t.Fatal(err)
				}
				b2, _ := back.AppendJSON(nil)
				if !bytes.Equal(b, b2) {
					t.Errorf("message %d not stable: %s vs %s", i, b, b2)
				}
			}
		})
	}
}

// TestRoundTripClaudeCode: split assistant records are one message, the
// interleaved results are gathered into the next message, other records are
// skipped, and the output is one record per message.
func TestRoundTripClaudeCode(t *testing.T) {
	doc, _ := readDoc(t, "../testdata/claude_code.jsonl")
	if doc.Format != transcript.FormatClaudeCode {
		t.Fatalf("format = %s", doc.Format)
	}
	roles := []string{}
	for _, m := range doc.Messages {
		roles = append(roles, m.Role+":"+strconv.Itoa(len(m.Content.Blocks())))
	}
	if got, want := strings.Join(roles, " "), "user:0 assistant:3 user:2 assistant:2 user:1 assistant:1"; got != want {
		t.Errorf("messages = %s, want %s", got, want)
	}
	if doc.Skipped != 6 || doc.Merged != 4 {
		t.Errorf("skipped %d merged %d, want 6 and 4", doc.Skipped, doc.Merged)
	}
	const notice = "6 records skipped: progress 2, file-history-snapshot 1, queue-operation 1, sidechain 1, system/local_command 1"
	if got := doc.Notice(); got != notice {
		t.Errorf("notice = %q, want %q", got, notice)
	}
	if rep := agentctx.ValidatePairing(doc.Messages); !rep.Valid {
		t.Errorf("pairing: %v", rep.Issues)
	}
	ts, ok := doc.Messages[1].Timestamp()
	if !ok || ts.Format("15:04:05.000") != "07:00:03.000" {
		t.Errorf("assistant timestamp = %v %v, want the first record's", ts, ok)
	}
	var out bytes.Buffer
	if err := doc.Encode(&out); err != nil {
		t.Fatal(err)
	}
	golden(t, "../testdata/claude_code.golden.jsonl", out.Bytes())

	// The output reads back as the same messages.
	again, err := transcript.ParseDocument(context.Background(), out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var out2 bytes.Buffer
	if err := again.Encode(&out2); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), out2.Bytes()) {
		t.Error("second round trip differs")
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it)\n got: %s\nwant: %s", path, got, want)
	}
}

func TestEditKeepsEverythingElse(t *testing.T) {
	doc, data := readDoc(t, "../testdata/anthropic_request.json")
	msgs := agentctx.MapToolResults(doc.Messages, func(r agentctx.ToolResult) (agentctx.Content, bool) {
		return agentctx.Text("[cleared]"), r.ID == "toolu_01B"
	})
	out, err := doc.WithMessages(msgs).AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	const old = `"content":[{"type":"text","text":"package parser\n\nfunc Parse(s string) string { return s }"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]`
	want := strings.Replace(string(compactLines(data, false)), old, `"content":"[cleared]"`, 1)
	if string(out) != want {
		t.Errorf("edit changed more than the one result\n got: %s\nwant: %s", out, want)
	}
	// The input document is unchanged.
	orig, _ := doc.AppendJSON(nil)
	if !bytes.Equal(orig, compactLines(data, false)) {
		t.Error("MapToolResults modified its input")
	}
	if sys, ok := doc.System(); !ok || sys.Kind() != agentctx.ContentBlocks || sys.Blocks()[0].Text != "You are a coding agent. Use the tools." {
		t.Errorf("System() = %v, %v", sys, ok)
	}
}

func TestParseDocumentErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "empty input"},
		{"blank", " \n\t ", "empty input"},
		{"number", "42", `line 1, column 1 (byte 0): invalid character '4'`},
		{"truncated array", `[{"role":"user","content":"hi"},`, "line 1, column 33 (byte 32): unexpected end of JSON input"},
		{"array of numbers", `[1]`, "message 0: message is not a JSON object"},
		{"bad jsonl line", "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"assistant\",\"content\":\"b\"}\n{\"role\":\"user\",\"content\":nope}\n", "line 3, column 27 (byte 91): invalid character 'o' in literal null"},
		{"jsonl not object", "{\"role\":\"user\",\"content\":\"a\"}\n[1]\n", "line 2, column 1 (byte 30): invalid character '[': each line must be a JSON object"},
		{"no role", `{"content":"hi"}`, "object has no \"role\": not a message"},
		{"jsonl missing role", "{\"role\":\"user\",\"content\":\"a\"}\n{\"content\":\"b\"}", "line 2, column 1 (byte 30): object has no \"role\""},
		{"messages not array", `{"messages":{"role":"user"}}`, `"messages" is not a JSON array`},
		{"control char", "[{\"role\":\"user\",\"content\":\"a\x01\"}]", "invalid character '\\x01' in string literal"},
		{"trailing garbage", `[] x`, "after top-level value"},
		{"deep nesting", strings.Repeat("[", 20000), "exceeded max depth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := transcript.ParseDocument(context.Background(), []byte(tt.in))
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, agentctx.ErrInvalidInput) {
				t.Errorf("error %v does not match ErrInvalidInput", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error has more than one line: %q", err)
			}
		})
	}
}

func TestParseDocumentShapes(t *testing.T) {
	tests := []struct {
		name, in string
		format   agentctx.Format
		msgs     int
	}{
		{"empty array", `[]`, agentctx.FormatArray, 0},
		{"bom", "\xef\xbb\xbf" + `[{"role":"user","content":"hi"}]`, agentctx.FormatArray, 1},
		{"single message", `{"role":"user","content":"hi"}`, agentctx.FormatJSONL, 1},
		{"pretty sequence", "{\n \"role\": \"user\",\n \"content\": \"a\"\n}\n{\"role\":\"assistant\",\"content\":\"b\"}", agentctx.FormatJSONL, 2},
		{"request body", `{"model":"gpt-4o","messages":[]}`, agentctx.FormatObject, 0},
		{"claude record only", `{"type":"summary","summary":"x","leafUuid":"u"}`, transcript.FormatClaudeCode, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := transcript.ParseDocument(context.Background(), []byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if doc.Format != tt.format || len(doc.Messages) != tt.msgs {
				t.Errorf("got %s with %d messages, want %s with %d", doc.Format, len(doc.Messages), tt.format, tt.msgs)
			}
		})
	}
}

func TestReadDocumentCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := transcript.ReadDocument(ctx, strings.NewReader(`[]`))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
}

func TestReadFile(t *testing.T) {
	doc, err := transcript.ReadFile(context.Background(), "-", strings.NewReader(`[{"role":"user","content":"x"}]`))
	if err != nil || len(doc.Messages) != 1 {
		t.Fatalf("stdin: %v %v", doc, err)
	}
	_, err = transcript.ReadFile(context.Background(), "../testdata/does-not-exist.json", nil)
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	doc, err = transcript.ReadFile(context.Background(), "../testdata/messages.jsonl", nil)
	if err != nil || doc.Format != agentctx.FormatJSONL {
		t.Errorf("file: %v %v", doc, err)
	}
}
