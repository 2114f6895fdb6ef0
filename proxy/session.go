package proxy

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash/maphash"
	"net/http"
	"regexp"
	"strings"

	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/lib/wire"
)

// HeaderSession is the header a client may set to name its session when it
// sends none of the provider-specific keys.
const HeaderSession = "X-Agentctx-Session"

// body is a request body split into its top-level members (wire.SplitBody),
// the split reused for its document (agentctx.RequestDocumentSplit).
type body struct {
	wire.Body
	scan *listScan // the split of "messages", when the body was parsed with one
}

// parseBody splits a body into its top-level members; with ls (which may
// be nil), it splits the list of messages as it goes, reusing what the
// cache holds of the conversation.
func parseBody(raw []byte, ls *listScan) (*body, error) {
	var hook func(string, int) (int, error)
	if ls != nil {
		ls.Data, hook = raw[rawjson.SkipSpace(raw, 0):], ls.ValueAt
	}
	return splitBody(raw, ls, hook)
}

// parsePrinted splits a body into its top-level members, passing over
// the messages ps's cache holds prints of (a Server without an Engine),
// and caches the prints of its messages for the next request.
func parsePrinted(raw []byte, ps *printScan) (*body, error) {
	ps.Data = raw[rawjson.SkipSpace(raw, 0):]
	b, err := splitBody(raw, nil, ps.ValueAt)
	if err == nil && rawjson.Kind(b.get(ps.Member)) == '[' {
		ps.remember()
	}
	return b, err
}

func splitBody(raw []byte, ls *listScan, hook func(string, int) (int, error)) (*body, error) {
	wb, err := wire.SplitBody(raw, hook)
	if errors.Is(err, wire.ErrNotObject) {
		return nil, errNotObject
	}
	if err != nil {
		return nil, err
	}
	b := &body{Body: *wb}
	if ls != nil && rawjson.Kind(b.get(ls.Member)) == '[' {
		b.scan = ls
	}
	return b, nil
}

// get returns the raw value of the last member named key, or nil.
func (b *body) get(key string) []byte { return b.Get(key) }

// str returns the string value of a member, or "".
func (b *body) str(key string) string { return b.Str(key) }

func stringOf(raw []byte) string {
	if rawjson.Kind(raw) == '"' {
		return rawjson.Unquote(raw)
	}
	return ""
}

var userIDSession = regexp.MustCompile(`session_([0-9A-Za-z-]+)`)

// clientSessionHeaders are the headers in which clients other than Claude
// Code name their conversation, read in this order (issue 47.2: opencode
// run twice in one directory with the same first prompt was one session):
//   - X-Session-Affinity: opencode's and Kilo's session id (pi's too);
//   - X-Session-Id: opencode's session id (with OpenRouter, in some
//     versions, a prompt-cache key of the directory and model instead,
//     hence after X-Session-Affinity, which they send as well);
//   - X-Opencode-Session: opencode's session id, for its own providers;
//   - Session_id (session_id): Codex's conversation id, which it also
//     sends as prompt_cache_key, read first.
//
// Each names one conversation; a subagent of opencode sends an id of its
// own (its parent's in X-Parent-Session-Id, not read).
var clientSessionHeaders = [...]string{"X-Session-Affinity", "X-Session-Id", "X-Opencode-Session", "Session_id"}

// SessionKey derives the session key of a request, in this order: the
// x-claude-code-session-id header; the session_id in metadata.user_id
// (Claude Code writes a JSON object there, older versions
// "user_…_session_<uuid>"); the body's prompt_cache_key; the
// X-Agentctx-Session header; the session headers of other clients
// (clientSessionHeaders: X-Session-Affinity, X-Session-Id,
// X-Opencode-Session, session_id); else "h-" and a hash of the client's
// credentials, the system prompt and the first user message, which every
// request of a conversation repeats (without the marks clients move
// between requests: clientMarks). The source names which rule gave the
// key. The order keeps every key an earlier rule gave: the headers came
// later, after the rules whose keys stored sessions are named by.
//
// Not read: an OpenAI body's user (or safety_identifier) and metadata,
// and a metadata.user_id without a session in it. They name the user, or
// whatever the client puts there, not a conversation: every conversation
// of a user would share the key, told apart only by how they open (below),
// which a proxy's restart forgets.
//
// A Server tells apart the conversations that share a key (Claude Code's
// subagents and side requests send the main conversation's session id;
// two conversations may start alike) by their start and their first
// reply: the first conversation seen under a key has the key as its
// session, each other one the key and "-c" and 8 hex digits derived from
// how it opens (see conversations.go).
func SessionKey(h http.Header, raw []byte) (key, source string) {
	if v := strings.TrimSpace(h.Get("X-Claude-Code-Session-Id")); v != "" {
		return v, "x-claude-code-session-id"
	}
	b, err := parseBody(raw, nil)
	if err != nil {
		b = &body{Body: wire.Body{Raw: raw}}
	}
	return sessionKey(h, b)
}

func sessionKey(h http.Header, b *body) (key, source string) {
	if v := strings.TrimSpace(h.Get("X-Claude-Code-Session-Id")); v != "" {
		return v, "x-claude-code-session-id"
	}
	if uid := stringOf(rawjson.Get(b.get("metadata"), "user_id")); uid != "" {
		if s := stringOf(rawjson.Get([]byte(uid), "session_id")); s != "" {
			return s, "metadata.user_id"
		}
		if m := userIDSession.FindStringSubmatch(uid); m != nil {
			return m[1], "metadata.user_id"
		}
	}
	if v := b.str("prompt_cache_key"); v != "" {
		return v, "prompt_cache_key"
	}
	if v := strings.TrimSpace(h.Get(HeaderSession)); v != "" {
		return v, "x-agentctx-session"
	}
	for _, k := range clientSessionHeaders {
		if v := strings.TrimSpace(h.Get(k)); v != "" {
			return v, strings.ToLower(k)
		}
	}
	return "h-" + conversationHash(h, b), "hash"
}

// conversationHash hashes the client's credentials (so that two users who
// start alike are two sessions), the system prompt (system or
// instructions) and the first user message (messages or input) of a body,
// without the marks clients add and remove between requests (unmarked:
// cache_control, copilot_cache_control), in canonical JSON (compact,
// strings escaped alike), so that every request of a conversation hashes
// alike. Member order is kept: the clients seen keep it from request to
// request, and an order-free form would change every fallback key, and
// with it the session of every stored conversation keyed so.
func conversationHash(h http.Header, b *body) string {
	s := sha256.New()
	for _, k := range [...]string{"X-Api-Key", "Authorization", "X-Goog-Api-Key"} {
		s.Write([]byte(h.Get(k)))
		s.Write([]byte{0})
	}
	o := openingOf(b)
	buf := unmarked(nil, orNull(o.system))
	s.Write(buf)
	s.Write([]byte{0})
	for _, el := range o.before {
		buf = unmarked(buf[:0], el)
		s.Write(buf)
	}
	if o.first != nil {
		buf = unmarkedContent(buf[:0], o.first)
		s.Write(buf)
	}
	return hex.EncodeToString(s.Sum(nil)[:12])
}

func orNull(raw []byte) []byte {
	if raw == nil {
		return []byte("null")
	}
	return raw
}

// hashSeed seeds the message hashes of one process (never stored).
var hashSeed = maphash.MakeSeed()

func hash64(b []byte) uint64 { return maphash.Bytes(hashSeed, b) }

// Tenant returns the tenant a request's credentials name: the first 16
// hex digits of the SHA-256 of its X-Api-Key, else of its Authorization
// header, else of its X-Goog-Api-Key (Gemini's); ok is false for a
// request with none (a Gemini key in the URL's query is not read). The
// credentials themselves are never part of it.
func Tenant(h http.Header) (tenant string, ok bool) {
	cred := h.Get("X-Api-Key")
	if cred == "" {
		cred = h.Get("Authorization")
	}
	if cred == "" {
		cred = h.Get("X-Goog-Api-Key")
	}
	if cred == "" {
		return "", false
	}
	sum := sha256.Sum256([]byte(cred))
	return hex.EncodeToString(sum[:8]), true
}

// TenantNamespace returns the namespace of a tenant's sessions and
// artifacts under base ("default" when base is ""): base + "/tenants/" +
// tenant.
func TenantNamespace(base, tenant string) string {
	if base == "" {
		base = "default"
	}
	return base + "/tenants/" + tenant
}
