package proxy

import (
	"testing"
	"time"
)

// A keep-warm request comes before the lifetime of the cache its request
// wrote: an hour only when every breakpoint asks for it (a 5-minute mark
// among them expires first), the provider's otherwise.
func TestCacheLifetime(t *testing.T) {
	hour := `{"type":"ephemeral","ttl":"1h"}`
	five := `{"type":"ephemeral"}`
	for _, tc := range []struct {
		name  string
		ttl   time.Duration
		parts []string
		want  time.Duration
	}{
		{"no breakpoint", 0, []string{`{"system":"x"}`}, 5 * time.Minute},
		{"5-minute marks", 0, []string{`{"cache_control":` + five + `}`, `{"cache_control":` + five + `}`}, 5 * time.Minute},
		{"every mark an hour", 0, []string{`{"cache_control":` + hour + `}`, `{"cache_control":` + hour + `}`}, time.Hour},
		{"one 5-minute mark among hours", 0, []string{`{"cache_control":` + hour + `}`, `{"cache_control":` + five + `}`}, 5 * time.Minute},
		{"the provider's own lifetime", 10 * time.Minute, []string{`{"cache_control":` + five + `}`}, 10 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parts := make([][]byte, len(tc.parts))
			for i, p := range tc.parts {
				parts[i] = []byte(p)
			}
			if got := cacheLifetime(tc.ttl, parts); got != tc.want {
				t.Errorf("cacheLifetime = %v, want %v", got, tc.want)
			}
			if lead := keepWarmLead(tc.want); lead <= 0 || lead >= tc.want {
				t.Errorf("lead %v of a %v lifetime", lead, tc.want)
			}
		})
	}
}

// The keep-warm body keeps every member as the request had it, asks for
// one token and is not streamed.
func TestKeepWarmBody(t *testing.T) {
	got, err := keepWarmBody([]byte(`{"model":"m","max_tokens":32000,"stream":true,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}],"thinking":{"type":"enabled","budget_tokens":31999}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}],"thinking":{"type":"enabled","budget_tokens":31999},"max_tokens":1,"stream":false}`
	if string(got) != want {
		t.Errorf("body\n%s\nwant\n%s", got, want)
	}
	if _, err := keepWarmBody([]byte(`not json`)); err == nil {
		t.Error("a body that is not JSON made a keep-warm request")
	}
}
