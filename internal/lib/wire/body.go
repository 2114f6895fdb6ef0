package wire

import (
	"errors"

	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// ErrNotObject reports a request body that is not a JSON object.
var ErrNotObject = errors.New("request body is not a JSON object")

// Body is a request body split once into its top-level members: the proxy
// reads the members it routes and keys sessions by from it, and the
// document decoder (agentctx.RequestDocumentSplit) builds the request's
// document from the same members, without splitting the body again.
type Body struct {
	// Raw is the body as it came.
	Raw []byte
	// Members are its top-level members in order, their values
	// subslices of Raw (rawjson.MembersFunc's split).
	Members []rawjson.Member
}

// SplitBody splits a request body's top level. valueAt, when set, finds
// the end of each member's value as rawjson.MembersFunc's does (its offsets
// count from the body's first non-space byte): the proxy splits the list of
// messages with it as it goes. An error matching ErrNotObject reports a
// body that is not an object; any other, invalid JSON.
func SplitBody(raw []byte, valueAt func(key string, i int) (int, error)) (*Body, error) {
	i := rawjson.SkipSpace(raw, 0)
	if i == len(raw) || raw[i] != '{' {
		return nil, ErrNotObject
	}
	ms, err := rawjson.MembersFunc(raw[i:], valueAt)
	if err != nil {
		return nil, err
	}
	return &Body{Raw: raw, Members: ms}, nil
}

// Get returns the raw value of the last member named key (as a JSON
// decoder keeps), or nil.
func (b *Body) Get(key string) []byte { return get(b.Members, key) }

// Str returns the value of a string member, or "".
func (b *Body) Str(key string) string {
	if v := b.Get(key); rawjson.Kind(v) == '"' {
		return rawjson.Unquote(v)
	}
	return ""
}
