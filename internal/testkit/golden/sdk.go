package golden

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/workspace"
)

// Step is one client request of a scripted session.
type Step struct {
	Label string
	Body  []byte
}

// Epoch is the start of the step clocks of the transcripts.
var Epoch = time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC)

// Middleware is the shape of the SDK middlewares (option.Middleware of
// both official SDKs).
type Middleware = func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error)

// SDK describes a transcript of an SDK middleware: Steps go through the
// middleware over a pipeline (session "golden", over FixedDir(Name), on
// the step clock Clock, with compaction limit Limit and inline limit
// Inline) to a recorder that answers Reply(the bytes it received) (its
// usage should follow the request's size, as a provider's does, or the
// pipeline's calibration scales its counts down).
type SDK struct {
	Name, Title string
	URL         string
	Steps       []Step
	Limit       int
	Inline      int
	Clock       func(step int) time.Duration
	New         func(p *pipeline.Pipeline) Middleware
	Reply       func(sent []byte) []byte
	// Options, when set, changes the pipeline's options before it is made
	// (a summarizer of the middleware's own).
	Options func(o *pipeline.Options)
}

// Run runs the steps and returns the transcript: for each step the bytes
// the middleware sent on (its body's size and SHA-256 alone when they are
// the client's own) and the session state as stored after it.
func (s SDK) Run(t *testing.T) []byte {
	t.Helper()
	dir := FixedDir(t, s.Name)
	step := 0
	now := func() time.Time { return Epoch.Add(s.Clock(step) * time.Minute) }
	sessions := NewSessions()
	po := pipeline.Options{
		SessionID:    "golden",
		WorkspaceDir: filepath.Join(dir, "ws"),
		Sessions:     sessions,
		Now:          now,
		Workspace:    workspace.Options{InlineLimit: s.Inline},
		Compact:      compact.Options{Limit: s.Limit, Dir: filepath.Join(dir, "archive")},
	}
	if s.Options != nil {
		s.Options(&po)
	}
	p, err := pipeline.New(po)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	mw := s.New(p)
	var out strings.Builder
	fmt.Fprintf(&out, "# golden transcript: %s, compaction limit %d tokens, inline limit %d characters\n", s.Title, s.Limit, s.Inline)
	fmt.Fprintf(&out, "# regenerate: go test ./%s -run TestGolden -update\n", strings.SplitN(s.Name, "-", 2)[0])
	for i, st := range s.Steps {
		step = i
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL, bytes.NewReader(st.Body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		var sent [][]byte
		next := func(r *http.Request) (*http.Response, error) {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				return nil, err
			}
			sent = append(sent, b)
			return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(bytes.NewReader(s.Reply(b))), Request: r}, nil
		}
		resp, err := mw(req, next)
		fmt.Fprintf(&out, "\n=== step %d: %s\n", i+1, st.Label)
		fmt.Fprintf(&out, "--- client → middleware: POST %s ", s.URL)
		out.WriteString(Head(st.Body))
		if err != nil {
			fmt.Fprintf(&out, "--- middleware → client: error %v\n", err)
		} else {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			fmt.Fprintf(&out, "--- middleware → client: %d\n", resp.StatusCode)
		}
		for _, b := range sent {
			if bytes.Equal(b, st.Body) {
				out.WriteString("--- middleware → upstream (the client's body as received) ")
				out.WriteString(Head(b))
			} else {
				out.WriteString("--- middleware → upstream ")
				out.WriteString(Body(b))
			}
		}
		out.WriteString(sessions.Dump())
	}
	return []byte(out.String())
}
