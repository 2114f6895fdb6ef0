package tokens

import (
	"bytes"
	"context"
	"encoding/base64"
	"hash/maphash"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"log/slog"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// Estimates for content that is not text (SPEC §2, beyond the seed). They are
// what the providers document, not exact counts.
const (
	// AnthropicImageTokens is the estimate for an Anthropic image block whose
	// size cannot be read (a URL or file source, or an unknown format): the
	// most an image costs after Anthropic's resizing (about 1.15 megapixels
	// at width×height/750 tokens).
	AnthropicImageTokens = 1600
	// OpenAIImageTokens is the estimate for an OpenAI image_url part whose
	// size cannot be read: a 1024×1024 image at high detail (85 + 4×170).
	OpenAIImageTokens = 765
	// OpenAILowDetailImageTokens is what an image_url part with detail "low"
	// costs, whatever its size.
	OpenAILowDetailImageTokens = 85
	// DocumentPageTokens is the estimate per page of a PDF document block
	// (Anthropic documents 1,500–3,000 tokens per page).
	DocumentPageTokens = 2000
	// DocumentTokens is the estimate for a document block whose pages cannot
	// be counted.
	DocumentTokens = 2000
)

// MessageOptions configure a [MessageCounter]. The zero value counts with
// o200k_base, caches up to 65,536 texts, and does not log.
type MessageOptions struct {
	// Counter counts text. nil means O200kBase().
	Counter Counter
	// CacheSize is the number of counted texts remembered, keyed by their
	// content. 0 means 65,536; negative disables the cache. Memory is at
	// most about 2×CacheSize×48 bytes: the keys are hashes, not the texts.
	CacheSize int
	// MinCached is the shortest text, in bytes, worth caching; shorter texts
	// are counted directly, which is cheaper than a lookup. 0 means 256.
	MinCached int
	// Logger receives a warning for each block of an unknown type (once per
	// type per counter). nil means no logging.
	Logger *slog.Logger
	// Parallelism is the number of goroutines Count uses on a long list
	// (messages are handed out one at a time, so the work stays balanced).
	// 0 or 1 means Count runs on the caller's goroutine; a negative value
	// means runtime.GOMAXPROCS(0).
	Parallelism int
}

// A MessageCounter counts the tokens of messages as SPEC §2 defines them:
// the sum of text; tool_use name and the JSON of its input (OpenAI: the
// function name and arguments); tool_result content, recursively; string
// content; thinking text. Images and documents count by the documented
// estimates above; blocks of unknown types (and redacted thinking) count 0,
// with a warning. There is no per-message overhead.
//
// Counts of texts of MinCached bytes or more are cached by content, so
// counting a conversation that grew by one message tokenizes only the new
// message. A MessageCounter is safe for concurrent use.
//
// Counts are exact for OpenAI's o200k_base and cl100k_base encodings.
// Claude's tokenizer is not public: for Claude models the count is an
// estimate (o200k_base typically comes within about 10–20% of Anthropic's
// count); ask Anthropic's count_tokens endpoint (package tokens/anthropic)
// when it must be exact.
type MessageCounter struct {
	counter   Counter
	minCached int
	logger    *slog.Logger
	seed      maphash.Seed
	workers   int

	mu     sync.Mutex
	limit  int // 0: no cache
	cur    map[cacheKey]int32
	prev   map[cacheKey]int32
	warned map[string]bool
}

type cacheKey struct{ a, b uint64 }

// NewMessageCounter returns a MessageCounter with the options.
func NewMessageCounter(opts MessageOptions) *MessageCounter {
	mc := &MessageCounter{counter: opts.Counter, minCached: opts.MinCached, logger: opts.Logger,
		seed: maphash.MakeSeed(), warned: map[string]bool{}}
	if mc.counter == nil {
		mc.counter = O200kBase()
	}
	if mc.minCached <= 0 {
		mc.minCached = 256
	}
	switch {
	case opts.Parallelism < 0:
		mc.workers = runtime.GOMAXPROCS(0)
	case opts.Parallelism > 1:
		mc.workers = opts.Parallelism
	default:
		mc.workers = 1
	}
	switch {
	case opts.CacheSize == 0:
		mc.limit = 1 << 16
	case opts.CacheSize > 0:
		mc.limit = opts.CacheSize
	}
	if mc.limit > 0 {
		mc.cur = map[cacheKey]int32{}
	}
	return mc
}

// CountMessages counts msgs with c (nil means O200kBase()) and no cache.
func CountMessages(c Counter, msgs []agentctx.Message) int {
	return NewMessageCounter(MessageOptions{Counter: c, CacheSize: -1}).Count(msgs)
}

// Count returns the tokens of all messages. An empty list is 0.
func (mc *MessageCounter) Count(msgs []agentctx.Message) int {
	n, _ := mc.CountContext(context.Background(), msgs)
	return n
}

// CountContext is Count that stops when ctx is done: it checks ctx before
// each message and returns ctx.Err() (and no count) if it was cancelled.
// Counting a long conversation takes a while; a caller that must stop
// promptly (a command interrupted with Ctrl-C) uses this.
func (mc *MessageCounter) CountContext(ctx context.Context, msgs []agentctx.Message) (int, error) {
	return mc.count(ctx, msgs, nil)
}

// CountEach returns the tokens of each message (their sum is Count), on
// several goroutines as Count does. Callers that count lists sharing most
// of their messages keep these to count only what changed.
func (mc *MessageCounter) CountEach(ctx context.Context, msgs []agentctx.Message) ([]int, error) {
	each := make([]int, len(msgs))
	if _, err := mc.count(ctx, msgs, each); err != nil {
		return nil, err
	}
	return each, nil
}

// count returns the sum of the counts of msgs, writing each one to each
// when it is not nil.
func (mc *MessageCounter) count(ctx context.Context, msgs []agentctx.Message, each []int) (int, error) {
	workers := min(mc.workers, len(msgs)/8)
	if workers <= 1 {
		n := 0
		for i := range msgs {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			k := mc.CountMessage(msgs[i])
			if each != nil {
				each[i] = k
			}
			n += k
		}
		return n, nil
	}
	var next, total atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for i := int(next.Add(1) - 1); i < len(msgs); i = int(next.Add(1) - 1) {
				if ctx.Err() != nil {
					return
				}
				k := mc.CountMessage(msgs[i])
				if each != nil {
					each[i] = k // one goroutine per index
				}
				n += k
			}
			total.Add(int64(n))
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return int(total.Load()), nil
}

// CountMessage returns the tokens of one message.
func (mc *MessageCounter) CountMessage(m agentctx.Message) int {
	n := mc.content(m.Content)
	for _, tc := range m.ToolCalls {
		n += mc.text(tc.Function.Name) + mc.text(tc.Function.Arguments)
	}
	return n
}

// CountContent returns the tokens of one content value.
func (mc *MessageCounter) CountContent(c agentctx.Content) int { return mc.content(c) }

// CountText returns the tokens of a text, through the cache.
func (mc *MessageCounter) CountText(s string) int { return mc.text(s) }

func (mc *MessageCounter) content(c agentctx.Content) int {
	switch c.Kind() {
	case agentctx.ContentText:
		return mc.text(c.Text())
	case agentctx.ContentBlocks:
		n := 0
		for _, b := range c.Blocks() {
			n += mc.block(b)
		}
		return n
	case agentctx.ContentOther:
		return mc.text(c.AsText())
	}
	return 0
}

func (mc *MessageCounter) block(b agentctx.Block) int {
	switch b.Type {
	case agentctx.BlockText:
		return mc.text(b.Text)
	case agentctx.BlockThinking:
		return mc.text(b.Thinking)
	case agentctx.BlockToolUse:
		return mc.text(b.Name) + mc.input(b.Input)
	case agentctx.BlockToolResult:
		return mc.content(b.Content)
	case agentctx.BlockImage:
		return anthropicImageTokens(b)
	case agentctx.BlockDocument:
		return mc.documentTokens(b)
	case "image_url":
		return openAIImageTokens(b)
	case agentctx.BlockRedactedThinking:
		return 0 // encrypted; not text the model reads as tokens we can count
	}
	mc.warnUnknown(b.Type)
	return 0
}

func (mc *MessageCounter) warnUnknown(typ string) {
	if mc.logger == nil {
		return
	}
	mc.mu.Lock()
	seen := mc.warned[typ]
	mc.warned[typ] = true
	mc.mu.Unlock()
	if !seen {
		mc.logger.Warn("tokens: block of unknown type not counted", "type", typ)
	}
}

// text counts s, through the cache when it is long enough to be worth it.
func (mc *MessageCounter) text(s string) int {
	if s == "" {
		return 0
	}
	if mc.limit == 0 || len(s) < mc.minCached {
		return mc.counter.Count(s)
	}
	k := cacheKey{maphash.String(mc.seed, s), uint64(len(s))<<32 ^ uint64(crc(s))}
	mc.mu.Lock()
	n, ok := mc.cur[k]
	if !ok {
		if n, ok = mc.prev[k]; ok {
			mc.put(k, n)
		}
	}
	mc.mu.Unlock()
	if ok {
		return int(n)
	}
	c := mc.counter.Count(s)
	mc.mu.Lock()
	mc.put(k, int32(min(c, math.MaxInt32)))
	mc.mu.Unlock()
	return c
}

// put stores a count; when the current generation is full it becomes the
// previous one, so memory stays bounded and recent texts stay cached.
func (mc *MessageCounter) put(k cacheKey, n int32) {
	if len(mc.cur) >= mc.limit {
		mc.prev, mc.cur = mc.cur, make(map[cacheKey]int32, mc.limit/4)
	}
	mc.cur[k] = n
}

// crc is a second, independent 32-bit hash of s (FNV-1a over its ends and
// length), so that a maphash collision alone cannot return a wrong count.
func crc(s string) uint32 {
	h := uint32(2166136261)
	mix := func(c byte) { h = (h ^ uint32(c)) * 16777619 }
	for i := 0; i < len(s) && i < 64; i++ {
		mix(s[i])
	}
	for i := max(64, len(s)-64); i < len(s); i++ {
		mix(s[i])
	}
	return h
}

// input counts a tool input's JSON text as JSON.stringify would write it.
// An input already in that form (as clients write it) is counted from its
// own bytes, not a copy, when the counter is this package's Encoding,
// which keeps nothing it counts (a request of 10,000 tool calls copied
// 5 MB); a Counter of the caller's may keep what it is given, and is
// given a string of its own.
func (mc *MessageCounter) input(raw []byte) int {
	if _, own := mc.counter.(*Encoding); own && len(raw) > 0 && rawjson.IsCanonical(raw) {
		return mc.text(unsafe.String(unsafe.SliceData(raw), len(raw)))
	}
	return mc.text(canonicalJSON(raw))
}

// canonicalJSON is the JSON text of a tool input as JSON.stringify would
// write it: what the model was sent.
func canonicalJSON(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	if rawjson.IsCanonical(raw) { // as clients write it: one copy, not two
		return string(raw)
	}
	return string(rawjson.AppendCanonical(make([]byte, 0, len(raw)), raw)) // about as long: not grown step by step
}

// anthropicImageTokens estimates an image block: width×height/750 after
// Anthropic's resizing (long edge at most 1568 px, at most about 1.15
// megapixels), read from base64 PNG, JPEG or GIF data; AnthropicImageTokens
// otherwise.
func anthropicImageTokens(b agentctx.Block) int {
	src, ok := b.Field("source")
	if !ok {
		return AnthropicImageTokens
	}
	w, h, ok := base64ImageSize(memberString(src, "data"))
	if !ok {
		return AnthropicImageTokens
	}
	scale := math.Min(1, 1568/float64(max(w, h)))
	scale = math.Min(scale, math.Sqrt(1.15e6/(float64(w)*float64(h))))
	fw, fh := math.Floor(float64(w)*scale), math.Floor(float64(h)*scale)
	return max(1, int(math.Ceil(fw*fh/750)))
}

// openAIImageTokens estimates an image_url part with OpenAI's tile rule: 85
// for detail "low"; otherwise fit in 2048×2048, scale the short side to 768,
// and count 85 + 170 per 512-px tile. A size that cannot be read from a data
// URL gives OpenAIImageTokens.
func openAIImageTokens(b agentctx.Block) int {
	iu, ok := b.Field("image_url")
	if !ok {
		return OpenAIImageTokens
	}
	if memberString(iu, "detail") == "low" {
		return OpenAILowDetailImageTokens
	}
	url := memberString(iu, "url")
	_, data, found := strings.Cut(url, ";base64,")
	if !found || !strings.HasPrefix(url, "data:") {
		return OpenAIImageTokens
	}
	w, h, ok := base64ImageSize(data)
	if !ok {
		return OpenAIImageTokens
	}
	fw, fh := float64(w), float64(h)
	if s := 2048 / math.Max(fw, fh); s < 1 {
		fw, fh = fw*s, fh*s
	}
	if s := 768 / math.Min(fw, fh); s < 1 {
		fw, fh = fw*s, fh*s
	}
	tiles := int(math.Ceil(fw/512) * math.Ceil(fh/512))
	return 85 + 170*tiles
}

// documentTokens estimates a document block: a plain-text source counts as
// its text; a base64 PDF counts DocumentPageTokens per page; anything else
// DocumentTokens.
func (mc *MessageCounter) documentTokens(b agentctx.Block) int {
	src, ok := b.Field("source")
	if !ok {
		return DocumentTokens
	}
	data := memberString(src, "data")
	switch memberString(src, "type") {
	case "text":
		return mc.text(data)
	case "base64":
		pdf, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return DocumentTokens
		}
		pages := bytes.Count(pdf, []byte("/Type /Page")) - bytes.Count(pdf, []byte("/Type /Pages"))
		pages += bytes.Count(pdf, []byte("/Type/Page")) - bytes.Count(pdf, []byte("/Type/Pages"))
		if pages <= 0 {
			return DocumentTokens
		}
		return pages * DocumentPageTokens
	}
	return DocumentTokens
}

// base64ImageSize reads the pixel size of base64 PNG, JPEG or GIF data from
// its header, decoding at most the first 192 KiB.
func base64ImageSize(data string) (w, h int, ok bool) {
	if data == "" {
		return 0, 0, false
	}
	if len(data) > 256<<10 {
		data = data[:256<<10]
	}
	data = data[:len(data)/4*4]
	raw := make([]byte, base64.StdEncoding.DecodedLen(len(data)))
	n, err := base64.StdEncoding.Decode(raw, []byte(data))
	if err != nil && n == 0 {
		return 0, 0, false
	}
	raw = raw[:n]
	var cfg image.Config
	switch {
	case bytes.HasPrefix(raw, []byte("\x89PNG\r\n\x1a\n")):
		cfg, err = png.DecodeConfig(bytes.NewReader(raw))
	case bytes.HasPrefix(raw, []byte("\xff\xd8")):
		cfg, err = jpeg.DecodeConfig(bytes.NewReader(raw))
	case bytes.HasPrefix(raw, []byte("GIF8")):
		cfg, err = gif.DecodeConfig(bytes.NewReader(raw))
	default:
		return 0, 0, false
	}
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return 0, 0, false
	}
	return cfg.Width, cfg.Height, true
}

// memberString returns the string member key of a raw JSON object, or "".
func memberString(obj []byte, key string) string {
	ms, err := rawjson.Members(obj)
	if err != nil {
		return ""
	}
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Key == key && rawjson.Kind(ms[i].Value) == '"' {
			return rawjson.Unquote(ms[i].Value)
		}
	}
	return ""
}
