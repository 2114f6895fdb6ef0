package fakeupstream

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/agentctx/agentctx/pricing"
)

func (s *Server) id(prefix string) string { return fmt.Sprintf("%s_%06d", prefix, s.seq.Add(1)) }

type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

func (e *sse) event(name string, v any) {
	b, _ := json.Marshal(v)
	if name != "" {
		fmt.Fprintf(e.w, "event: %s\n", name)
	}
	fmt.Fprintf(e.w, "data: %s\n\n", b)
	if e.f != nil {
		e.f.Flush()
	}
}

// anthropicUsage is the usage object of the Messages API, with output
// tokens out.
func anthropicUsage(u pricing.Usage, out int) map[string]any {
	return map[string]any{"input_tokens": u.Uncached, "output_tokens": out, "cache_read_input_tokens": u.CacheRead,
		"cache_creation_input_tokens": u.CacheWrite5m + u.CacheWrite1h,
		"cache_creation":              map[string]any{"ephemeral_5m_input_tokens": u.CacheWrite5m, "ephemeral_1h_input_tokens": u.CacheWrite1h},
		"service_tier":                "standard"}
}

func inputJSON(in map[string]any) string {
	if in == nil {
		in = map[string]any{}
	}
	b, _ := json.Marshal(in)
	return string(b)
}

// anthropic answers in the Messages format, streamed or not.
func (s *Server) anthropic(w http.ResponseWriter, c *Call, r Reply, u pricing.Usage) {
	content := s.anthropicContent(c, r)
	stop := "end_turn"
	if len(r.ToolCalls) > 0 {
		stop = "tool_use"
	}
	if c.compaction != nil && c.compaction.Paused {
		stop = "compaction"
	}
	if r.Truncated {
		stop = "max_tokens"
	}
	usage := anthropicUsage(u, u.Output)
	if c.compaction != nil {
		usage["iterations"] = iterations(c, u)
	}
	msg := map[string]any{"id": s.id("msg"), "type": "message", "role": "assistant", "model": c.Model,
		"stop_reason": stop, "stop_sequence": nil, "usage": usage}
	if c.Applied != nil {
		msg["context_management"] = map[string]any{"applied_edits": c.Applied}
	}
	if !c.Stream {
		msg["content"] = content
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(msg)
		return
	}
	e := newSSE(w)
	start := map[string]any{}
	for k, v := range msg {
		start[k] = v
	}
	start["content"] = []any{}
	start["stop_reason"] = nil
	start["usage"] = anthropicUsage(u, 1)
	e.event("message_start", map[string]any{"type": "message_start", "message": start})
	if r.Error != "" {
		e.event("error", map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": r.Error}})
		return
	}
	e.event("ping", map[string]any{"type": "ping"})
	for i, bv := range content {
		streamBlock(e, i, bv.(map[string]any))
	}
	delta := map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{
		"input_tokens": u.Uncached, "cache_read_input_tokens": u.CacheRead, "cache_creation_input_tokens": u.CacheWrite5m + u.CacheWrite1h, "output_tokens": u.Output}}
	if c.Applied != nil {
		delta["context_management"] = map[string]any{"applied_edits": c.Applied}
	}
	if c.compaction != nil {
		delta["usage"].(map[string]any)["iterations"] = iterations(c, u)
	}
	e.event("message_delta", delta)
	e.event("message_stop", map[string]any{"type": "message_stop"})
}

// anthropicContent returns the content blocks of the answer to c: the
// compaction block, the thinking (signed over what was sent), the text,
// and the tool calls, whose ids are remembered as thought when there is
// thinking.
func (s *Server) anthropicContent(c *Call, r Reply) []any {
	msgs := asSlice(c.Body["messages"])
	var content, before []any
	if c.compaction != nil {
		// The compaction block first; what follows is bound to the bytes
		// sent and the block (compaction.go).
		content = append(content, c.compaction.block())
		before = []any{c.compaction.block()}
	}
	if r.Thinking != "" {
		content = append(content, map[string]any{"type": "thinking", "thinking": r.Thinking,
			"signature": signature(c.Body["system"], c.Body["tools"], msgs, before)})
	}
	if r.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": r.Text})
	}
	for _, tc := range r.ToolCalls {
		id := s.id("toolu")
		if r.Thinking != "" {
			s.thought.Store(id, true)
		}
		content = append(content, map[string]any{"type": "tool_use", "id": id, "name": tc.Name, "input": tc.Input})
	}
	return content
}

// streamBlock writes content block i, b, as its start, deltas (text in
// pieces of 16 bytes, tool input in pieces of 10) and stop events.
func streamBlock(e *sse, i int, b map[string]any) {
	switch b["type"] {
	case "compaction":
		e.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "compaction", "content": ""}})
		e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "compaction_delta", "content": b["content"], "encrypted_content": b["encrypted_content"]}})
	case "thinking":
		e.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
		e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "thinking_delta", "thinking": b["thinking"]}})
		e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "signature_delta", "signature": b["signature"]}})
	case "text":
		e.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
		text := b["text"].(string)
		for len(text) > 0 {
			n := min(len(text), 16)
			e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": text[:n]}})
			text = text[n:]
		}
	case "tool_use":
		e.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
		js := inputJSON(asMap(b["input"]))
		for len(js) > 0 {
			n := min(len(js), 10)
			e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": js[:n]}})
			js = js[n:]
		}
	}
	e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
}

// iterations is the usage.iterations of an answer with a threshold
// compaction: the summary step, then the message step (none when paused).
func iterations(c *Call, u pricing.Usage) []any {
	it := func(typ string, x pricing.Usage) map[string]any {
		return map[string]any{"type": typ, "input_tokens": x.Uncached, "output_tokens": x.Output,
			"cache_read_input_tokens": x.CacheRead, "cache_creation_input_tokens": x.CacheWrite5m + x.CacheWrite1h}
	}
	out := []any{it("compaction", c.compUsage)}
	if !c.compaction.Paused {
		out = append(out, it("message", u))
	}
	return out
}

// chat answers in the Chat Completions format, streamed or not.
func (s *Server) chat(w http.ResponseWriter, c *Call, r Reply, u pricing.Usage) {
	id := s.id("chatcmpl")
	var calls []any
	for i, tc := range r.ToolCalls {
		calls = append(calls, map[string]any{"index": i, "id": s.id("call"), "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": inputJSON(tc.Input)}})
	}
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	in := u.Input()
	usage := map[string]any{"prompt_tokens": in, "completion_tokens": u.Output, "total_tokens": in + u.Output,
		"prompt_tokens_details": map[string]any{"cached_tokens": u.CacheRead}}
	if !c.Stream {
		msg := map[string]any{"role": "assistant", "content": r.Text}
		if len(calls) > 0 {
			msg["tool_calls"] = calls
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "chat.completion", "model": c.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	e := newSSE(w)
	chunk := func(delta map[string]any, fin any) {
		e.event("", map[string]any{"id": id, "object": "chat.completion.chunk", "model": c.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": fin}}})
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	if r.Text != "" {
		chunk(map[string]any{"content": r.Text}, nil)
	}
	if len(calls) > 0 {
		chunk(map[string]any{"tool_calls": calls}, nil)
	}
	chunk(map[string]any{}, finish)
	if so := asMap(c.Body["stream_options"]); so != nil && so["include_usage"] == true {
		e.event("", map[string]any{"id": id, "object": "chat.completion.chunk", "model": c.Model, "choices": []any{}, "usage": usage})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if e.f != nil {
		e.f.Flush()
	}
}

// responses answers in the Responses format, streamed or not.
func (s *Server) responses(w http.ResponseWriter, c *Call, r Reply, u pricing.Usage) {
	rid := s.id("resp")
	var output []any
	if c.Compaction != nil {
		output = append(output, c.Compaction)
	}
	if r.Thinking != "" {
		output = append(output, map[string]any{"type": "reasoning", "id": s.id("rs"), "summary": []any{},
			"encrypted_content": "enc:" + r.Thinking})
	}
	if r.Text != "" {
		output = append(output, map[string]any{"type": "message", "id": s.id("msg"), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": r.Text, "annotations": []any{}}}})
	}
	for _, tc := range r.ToolCalls {
		output = append(output, map[string]any{"type": "function_call", "id": s.id("fc"), "call_id": s.id("call"),
			"name": tc.Name, "arguments": inputJSON(tc.Input), "status": "completed"})
	}
	in := u.Input()
	usage := map[string]any{"input_tokens": in, "output_tokens": u.Output, "total_tokens": in + u.Output,
		"input_tokens_details": map[string]any{"cached_tokens": u.CacheRead}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}
	resp := map[string]any{"id": rid, "object": "response", "status": "completed", "model": c.Model, "output": output, "usage": usage}
	if !c.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
		return
	}
	e := newSSE(w)
	seq := 0
	ev := func(typ string, v map[string]any) {
		v["type"] = typ
		v["sequence_number"] = seq
		seq++
		e.event(typ, v)
	}
	ev("response.created", map[string]any{"response": map[string]any{"id": rid, "object": "response", "status": "in_progress", "model": c.Model, "output": []any{}}})
	for i, ov := range output {
		o := ov.(map[string]any)
		switch o["type"] {
		case "message":
			added := map[string]any{"type": "message", "id": o["id"], "role": "assistant", "status": "in_progress", "content": []any{}}
			ev("response.output_item.added", map[string]any{"output_index": i, "item": added})
			ev("response.content_part.added", map[string]any{"item_id": o["id"], "output_index": i, "content_index": 0, "part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			ev("response.output_text.delta", map[string]any{"item_id": o["id"], "output_index": i, "content_index": 0, "delta": r.Text})
			ev("response.output_text.done", map[string]any{"item_id": o["id"], "output_index": i, "content_index": 0, "text": r.Text})
			ev("response.content_part.done", map[string]any{"item_id": o["id"], "output_index": i, "content_index": 0, "part": map[string]any{"type": "output_text", "text": r.Text, "annotations": []any{}}})
		case "reasoning":
			ev("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{"type": "reasoning", "id": o["id"], "summary": []any{}}})
		case "compaction":
			ev("response.output_item.added", map[string]any{"output_index": i, "item": o})
		case "function_call":
			added := map[string]any{"type": "function_call", "id": o["id"], "call_id": o["call_id"], "name": o["name"], "arguments": "", "status": "in_progress"}
			ev("response.output_item.added", map[string]any{"output_index": i, "item": added})
			ev("response.function_call_arguments.delta", map[string]any{"item_id": o["id"], "output_index": i, "delta": o["arguments"]})
			ev("response.function_call_arguments.done", map[string]any{"item_id": o["id"], "output_index": i, "arguments": o["arguments"]})
		}
		ev("response.output_item.done", map[string]any{"output_index": i, "item": o})
	}
	ev("response.completed", map[string]any{"response": resp})
}
