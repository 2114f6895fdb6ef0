package proxy_test

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/agentctx/agentctx/workspace"
)

var artifactRef = regexp.MustCompile(`tool_result_[A-Za-z0-9_-]+`)

// Nothing is stored for a request the upstream refuses (issue 49.4: 20
// POSTs refused 401 left 180 MB in 400 artifacts): the artifacts it
// created are removed and its session state goes back to what it was,
// while what earlier accepted requests stored stays; the same request
// accepted afterwards stores its results again, and every artifact the
// body it sends names exists.
func TestRefusedRequestStoresNothing(t *testing.T) {
	var mu sync.Mutex
	var lastAccepted string
	base, store, _ := storingProxy(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch key := r.Header.Get("X-Api-Key"); key {
		case "good":
			mu.Lock()
			lastAccepted = string(body)
			mu.Unlock()
			io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":10,"output_tokens":1}}`)
		case "overloaded":
			w.WriteHeader(529)
			io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		default:
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
		}
	})
	send := func(body, key, session string) int {
		t.Helper()
		hdr := map[string]string{"Anthropic-Version": "2023-06-01"}
		if key != "" {
			hdr["X-Api-Key"] = key
		}
		if session != "" {
			hdr["X-Agentctx-Session"] = session
		}
		resp := post(t, base+"/v1/messages", body, hdr)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	ids := func() map[string]bool {
		t.Helper()
		m := map[string]bool{}
		nss, _ := store.Namespaces(t.Context())
		for _, ns := range nss {
			list, err := store.Query(t.Context(), ns, workspace.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range list {
				m[ns+"/"+in.ID] = true
			}
		}
		return m
	}

	// An accepted request of session s stores its three results.
	if code := send(toolBody("anthropic", "toolu_a", 3), "good", "s"); code != 200 {
		t.Fatalf("accepted request: %d", code)
	}
	kept := ids()
	if len(kept) != 3 {
		t.Fatalf("%d artifacts after the accepted request, want 3: %v", len(kept), kept)
	}
	// The same conversation, three more results, refused: 401 and 529
	// (the client retries); refused fresh conversations, without a key
	// or with a wrong one, as a web page's would be.
	grown := toolBody("anthropic", "toolu_a", 6)
	for _, c := range []struct{ name, body, key, session string }{
		{"a longer conversation, wrong key", grown, "wrong", "s"},
		{"a longer conversation, overloaded", grown, "overloaded", "s"},
		{"a new conversation, no key", toolBody("anthropic", "toolu_x", 5), "", ""},
		{"a new conversation, wrong key", toolBody("anthropic", "toolu_y", 5), "wrong", ""},
		{"a new session, wrong key", toolBody("anthropic", "toolu_z", 5), "wrong", "z"},
	} {
		for i := range 4 {
			body := strings.ReplaceAll(c.body, "log line", fmt.Sprintf("log line (try %d)", i))
			if c.session == "s" {
				body = c.body // the same request again
			}
			if code := send(body, c.key, c.session); code < 400 {
				t.Fatalf("%s: %d, want a refusal", c.name, code)
			}
		}
		if got := ids(); len(got) != len(kept) {
			t.Errorf("%s: %d artifacts after its refusals, want the %d stored before", c.name, len(got), len(kept))
		}
	}
	got := ids()
	for id := range kept {
		if !got[id] {
			t.Errorf("%s, stored by an accepted request, was removed", id)
		}
	}

	// Accepted at last: the three new results are stored, and what goes
	// upstream names only artifacts that exist.
	if code := send(grown, "good", "s"); code != 200 {
		t.Fatalf("accepted retry: %d", code)
	}
	if got := ids(); len(got) != 6 {
		t.Errorf("%d artifacts after the accepted retry, want 6: %v", len(got), got)
	}
	mu.Lock()
	sent := lastAccepted
	mu.Unlock()
	refs := artifactRef.FindAllString(sent, -1)
	if len(refs) == 0 {
		t.Fatalf("the accepted retry names no artifact: the test offloads nothing")
	}
	nss, _ := store.Namespaces(t.Context())
	for _, ref := range refs {
		found := false
		for _, ns := range nss {
			if _, err := store.Stat(t.Context(), ns, ref); err == nil {
				found = true
			}
		}
		if !found {
			t.Errorf("the request sent names %s, which is not stored", ref)
		}
	}
}
