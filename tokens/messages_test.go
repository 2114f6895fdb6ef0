package tokens_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/png"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/bench/mixtext"
	"github.com/agentctx/agentctx/tokens"
)

func msgs(t *testing.T, s string) []agentctx.Message {
	t.Helper()
	m, err := agentctx.UnmarshalMessages([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func pngData(t *testing.T, w, h int) string {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func TestCountMessagesParts(t *testing.T) {
	enc := tokens.O200kBase()
	c := enc.Count
	small, big := pngData(t, 1000, 500), pngData(t, 3000, 2000)
	tests := []struct {
		name string
		msgs string
		want int
	}{
		{"empty list", `[]`, 0},
		{"empty string", `[{"role":"user","content":""}]`, 0},
		{"string content", `[{"role":"user","content":"Hello, world!"}]`, c("Hello, world!")},
		{"text blocks", `[{"role":"user","content":[{"type":"text","text":"a b c"},{"type":"text","text":"d"}]}]`, c("a b c") + c("d")},
		{"tool_use: name + input JSON", `[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"bash","input":{"command": "ls -la"}}]}]`,
			c("bash") + c(`{"command":"ls -la"}`)},
		{"tool_result string", `[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"file.go"}]}]`, c("file.go")},
		{"tool_result blocks, recursively", `[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"x y"},{"type":"text","text":"z"}]}]}]`,
			c("x y") + c("z")},
		{"thinking counts", `[{"role":"assistant","content":[{"type":"thinking","thinking":"let me see","signature":"abc"}]}]`, c("let me see")},
		{"redacted thinking is 0", `[{"role":"assistant","content":[{"type":"redacted_thinking","data":"xyz"}]}]`, 0},
		{"unknown block skipped", `[{"role":"assistant","content":[{"type":"mystery","text":"not counted"}]}]`, 0},
		{"openai tool_calls", `[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"grep","arguments":"{\"q\":\"x\"}"}}]}]`,
			c("grep") + c(`{"q":"x"}`)},
		{"openai tool message", `[{"role":"tool","tool_call_id":"c","content":"result"}]`, c("result")},
		{"system message", `[{"role":"system","content":"be brief"}]`, c("be brief")},
		{"anthropic image 1000x500", `[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + small + `"}}]}]`, 667},
		{"anthropic image resized", `[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + big + `"}}]}]`, 1532},
		{"anthropic image by url", `[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]}]`, tokens.AnthropicImageTokens},
		{"anthropic image, bad data", `[{"role":"user","content":[{"type":"image","source":{"type":"base64","data":"!!!"}}]}]`, tokens.AnthropicImageTokens},
		{"openai image high detail", `[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,` + small + `"}}]}]`, 425},
		{"openai image low detail", `[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,` + big + `","detail":"low"}}]}]`, 85},
		{"openai image by url", `[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]`, tokens.OpenAIImageTokens},
		{"text document", `[{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"plain text doc"}}]}]`, c("plain text doc")},
		{"pdf document, 2 pages", `[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"` +
			base64.StdEncoding.EncodeToString([]byte("%PDF-1.4 /Type /Pages /Type /Page x /Type/Page")) + `"}}]}]`, 2 * tokens.DocumentPageTokens},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tokens.CountMessages(nil, msgs(t, tt.msgs)); got != tt.want {
				t.Errorf("CountMessages = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestCountMessagesLarge(t *testing.T) {
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 12000) // > 100K tokens
	m := []agentctx.Message{agentctx.NewMessage("user", agentctx.Text(text))}
	want := tokens.O200kBase().Count(text)
	if want < 100000 {
		t.Fatalf("test text has only %d tokens", want)
	}
	mc := tokens.NewMessageCounter(tokens.MessageOptions{})
	if got := mc.Count(m); got != want {
		t.Errorf("Count = %d, want %d", got, want)
	}
	if got := mc.Count(m); got != want {
		t.Errorf("cached Count = %d, want %d", got, want)
	}
}

// recorder counts how many bytes were tokenized.
type recorder struct {
	bytes atomic.Int64
	inner tokens.Counter
}

func (r *recorder) Count(s string) int {
	r.bytes.Add(int64(len(s)))
	return r.inner.Count(s)
}

// TestCacheGrowingConversation: counting a conversation that grew by one
// message tokenizes only that message.
func TestCacheGrowingConversation(t *testing.T) {
	rec := &recorder{inner: tokens.O200kBase()}
	mc := tokens.NewMessageCounter(tokens.MessageOptions{Counter: rec, MinCached: 1})
	var conv []agentctx.Message
	for i := range 50 {
		conv = append(conv, agentctx.NewMessage("user", agentctx.Text(fmt.Sprintf("message %d: %s", i, strings.Repeat("word ", 100+i)))))
	}
	want := tokens.CountMessages(nil, conv)
	if got := mc.Count(conv[:49]) + mc.CountMessage(conv[49]); got != want {
		t.Fatalf("count = %d, want %d", got, want)
	}
	before := rec.bytes.Load()
	next := agentctx.NewMessage("assistant", agentctx.Text("a new answer"))
	conv = append(conv, next)
	if got := mc.Count(conv); got != want+tokens.O200kBase().Count("a new answer") {
		t.Errorf("grown count = %d", got)
	}
	if tokenized := rec.bytes.Load() - before; tokenized != int64(len("a new answer")) {
		t.Errorf("tokenized %d bytes for one new message of %d bytes", tokenized, len("a new answer"))
	}
}

func TestCacheBounded(t *testing.T) {
	mc := tokens.NewMessageCounter(tokens.MessageOptions{CacheSize: 8, MinCached: 1})
	enc := tokens.O200kBase()
	for i := range 100 {
		s := fmt.Sprintf("text number %d", i)
		if got := mc.CountText(s); got != enc.Count(s) {
			t.Fatalf("CountText(%q) = %d", s, got)
		}
	}
	// Still right after eviction.
	if got := mc.CountText("text number 3"); got != enc.Count("text number 3") {
		t.Errorf("after eviction: %d", got)
	}
}

func TestCountConcurrent(t *testing.T) {
	mc := tokens.NewMessageCounter(tokens.MessageOptions{MinCached: 1, CacheSize: 16})
	conv := msgs(t, `[{"role":"user","content":"alpha beta gamma"},{"role":"assistant","content":[{"type":"text","text":"delta"}]}]`)
	want := tokens.CountMessages(nil, conv)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if got := mc.Count(conv); got != want {
					t.Errorf("concurrent count = %d, want %d", got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestUnknownBlockWarnsOnce(t *testing.T) {
	var buf bytes.Buffer
	mc := tokens.NewMessageCounter(tokens.MessageOptions{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	conv := msgs(t, `[{"role":"user","content":[{"type":"mystery"},{"type":"mystery"},{"type":"other"}]}]`)
	if got := mc.Count(conv); got != 0 {
		t.Errorf("count = %d", got)
	}
	if n := strings.Count(buf.String(), "unknown type"); n != 2 {
		t.Errorf("%d warnings, want 2 (one per type):\n%s", n, buf.String())
	}
}

func TestCountParallelEqualsSequential(t *testing.T) {
	var conv []agentctx.Message
	for i := range 300 {
		conv = append(conv, agentctx.NewMessage("user", agentctx.Text(fmt.Sprintf("message %d %s", i, strings.Repeat("ab ", i)))))
	}
	want := tokens.CountMessages(nil, conv)
	for _, p := range []int{-1, 0, 1, 2, 7} {
		mc := tokens.NewMessageCounter(tokens.MessageOptions{Parallelism: p})
		if got := mc.Count(conv); got != want {
			t.Errorf("Parallelism %d: %d, want %d", p, got, want)
		}
	}
}

func TestCountContextCancelled(t *testing.T) {
	var conv []agentctx.Message
	for i := range 100 {
		conv = append(conv, agentctx.NewMessage("user", agentctx.Text(fmt.Sprintf("message %d", i))))
	}
	want := tokens.CountMessages(nil, conv)
	ctx, cancel := context.WithCancel(context.Background())
	for _, p := range []int{1, 4} {
		mc := tokens.NewMessageCounter(tokens.MessageOptions{Parallelism: p})
		if n, err := mc.CountContext(ctx, conv); n != want || err != nil {
			t.Errorf("Parallelism %d: %d, %v; want %d, nil", p, n, err, want)
		}
	}
	cancel()
	for _, p := range []int{1, 4} {
		mc := tokens.NewMessageCounter(tokens.MessageOptions{Parallelism: p})
		if n, err := mc.CountContext(ctx, conv); n != 0 || !errors.Is(err, context.Canceled) {
			t.Errorf("Parallelism %d, cancelled: %d, %v; want 0, context.Canceled", p, n, err)
		}
	}
}

// growingConversation is a 400-message conversation of about 1 MiB built
// from the benchmark corpus.
func growingConversation() []agentctx.Message {
	text := mixtext.Build(mixtext.DefaultSize)
	var conv []agentctx.Message
	for i := 0; i+2600 <= len(text) && len(conv) < 400; i += 2600 {
		role := "user"
		if len(conv)%2 == 1 {
			role = "assistant"
		}
		conv = append(conv, agentctx.NewMessage(role, agentctx.Text(strings.ToValidUTF8(text[i:i+2600], "?"))))
	}
	return conv
}

// BenchmarkCountConversation/cold counts a 1 MiB, 400-message conversation
// with a new counter; /grown counts it again after one message was appended,
// as an agent loop does before each request (only the new message is
// tokenized).
func BenchmarkCountConversation(b *testing.B) {
	conv := growingConversation()
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			tokens.NewMessageCounter(tokens.MessageOptions{}).Count(conv)
		}
	})
	b.Run("grown", func(b *testing.B) {
		mc := tokens.NewMessageCounter(tokens.MessageOptions{})
		mc.Count(conv[:len(conv)-1])
		b.ReportAllocs()
		for b.Loop() {
			mc.Count(conv)
		}
	})
}
