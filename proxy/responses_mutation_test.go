package proxy_test

import (
	"strings"
	"testing"
)

// TestResponsesWithoutStorePassThrough: store defaults to true in the
// Responses API, so a body that leaves it out (or sends null) is stored
// upstream, and a later request may build on it with previous_response_id:
// it goes upstream as it came, like "store":true. Only "store":false
// without previous_response_id carries the whole history for the Engine.
func TestResponsesWithoutStorePassThrough(t *testing.T) {
	for _, body := range []string{
		strings.Replace(responsesBody, `"store":false,`, ``, 1),
		strings.Replace(responsesBody, `"store":false`, `"store":null`, 1),
	} {
		if strings.Contains(body, `"store":false`) {
			t.Fatal("test body still has store false")
		}
		eng := &funcEngine{}
		up := &capture{}
		base := newProxy(t, up, eng)
		post(t, base+"/v1/responses", body, nil)
		if _, got := up.last(t); string(got) != body || eng.calls != 0 {
			t.Errorf("%.40s…: engine calls %d; body changed %v", body, eng.calls, string(got) != body)
		}
	}
}
