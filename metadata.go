package agentctx

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// Metadata members that agents keep beside the wire fields. They are not
// part of either API and can be removed with StripMetadata before a request.
const (
	FieldTimestamp     = "timestamp"     // epoch ms, RFC 3339 string, or epoch seconds with a fraction
	FieldMessageStatus = "messageStatus" // "error" marks a failed tool message (seed 004)
)

// Timestamp returns the message's time from its "timestamp" member, and
// whether it has a readable one. Accepted forms: epoch milliseconds, epoch
// seconds with a fraction (any number below 1e11 is taken as seconds), an
// RFC 3339 string, an ISO 8601 date-time without zone (read as UTC), or a
// numeric string. When the message has no timestamp of its own, the
// "timestamp" inside an "extra" object (mini-swe-agent) is used.
func (m Message) Timestamp() (time.Time, bool) {
	if raw, ok := m.Field(FieldTimestamp); ok {
		return parseTimestamp(raw)
	}
	if raw, ok := m.Field("extra"); ok && rawjson.Kind(raw) == '{' {
		if ms, err := rawjson.Members(raw); err == nil {
			for i := len(ms) - 1; i >= 0; i-- {
				if ms[i].Key == FieldTimestamp {
					return parseTimestamp(ms[i].Value)
				}
			}
		}
	}
	return time.Time{}, false
}

// WithTimestamp returns a copy of m whose "timestamp" is t in epoch
// milliseconds.
func (m Message) WithTimestamp(t time.Time) Message {
	m.members = withMember(m.members, FieldTimestamp, strconv.AppendInt(nil, t.UnixMilli(), 10))
	return m
}

// Status returns the "messageStatus" member, or "".
func (m Message) Status() string {
	if raw, ok := m.Field(FieldMessageStatus); ok && rawjson.Kind(raw) == '"' {
		return rawjson.Unquote(raw)
	}
	return ""
}

// StripMetadata returns a copy of msgs without the named members (by default
// timestamp and messageStatus), ready to send to a model API. msgs is not
// modified; messages without such members are shared.
func StripMetadata(msgs []Message, keys ...string) []Message {
	if len(keys) == 0 {
		keys = []string{FieldTimestamp, FieldMessageStatus}
	}
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		out[i] = m.WithoutFields(keys...)
	}
	return out
}

func parseTimestamp(raw []byte) (time.Time, bool) {
	switch rawjson.Kind(raw) {
	case '"':
		return ParseTime(rawjson.Unquote(raw))
	case 'n', 't', 'f', '{', '[', 0:
		return time.Time{}, false
	}
	return ParseTime(string(bytes.TrimSpace(raw)))
}

// ParseTime reads a time written as epoch milliseconds, epoch seconds with a
// fraction (numbers below 1e11), RFC 3339, or an ISO 8601 date-time without
// a zone (taken as UTC).
func ParseTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, false
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e17 {
			return time.Time{}, false
		}
		if math.Abs(f) < 1e11 {
			sec, frac := math.Modf(f)
			return time.Unix(int64(sec), int64(math.Round(frac*1e9))).UTC(), true
		}
		ms, frac := math.Modf(f)
		return time.UnixMilli(int64(ms)).Add(time.Duration(math.Round(frac * 1e6))).UTC(), true
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, true
	}
	if t, err := time.Parse("2006-01-02T15:04:05.999999999", s); err == nil {
		return t, true
	}
	return time.Time{}, false
}
