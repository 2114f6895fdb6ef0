package headless_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/testkit/headless"
)

// page polls /n every 100 ms and shows how many answers it got; it stores
// a value the next tab must not see.
const page = `<!doctype html><html><body><p id="n">0</p><p id="seen"></p><script>
document.getElementById('seen').textContent = localStorage.getItem('k') || 'none';
localStorage.setItem('k', 'set');
let n = 0;
function poll() { fetch('/n').then(r => r.text()).then(t => { n++; document.getElementById('n').textContent = n + ':' + t; }); }
poll(); setInterval(poll, 100);
</script></body></html>`

// polls reads how many answers the page shows.
func polls(t *testing.T, tab *headless.Tab) (int, string) {
	h, err := tab.HTML(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	j := bytes.Index(h, []byte(`<p id="n">`))
	if j < 0 {
		return 0, string(h)
	}
	var n int
	fmt.Sscanf(string(h[j+len(`<p id="n">`):]), "%d:", &n)
	return n, string(h)
}

// Two tabs of two origins open side by side share no storage; an open
// page runs its timers and fetches on its own, also behind another tab,
// and its DOM is read as it changes; a screenshot of either tab is a PNG;
// a page that cannot load is an error.
func TestTabs(t *testing.T) {
	bin := headless.Chromium(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	b, err := headless.Start(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var served atomic.Int64
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/n" {
			fmt.Fprint(w, served.Add(1))
			return
		}
		fmt.Fprint(w, page)
	})
	srvs := []*httptest.Server{httptest.NewServer(handler), httptest.NewServer(handler)} // two origins
	for _, srv := range srvs {
		defer srv.Close()
	}
	tabs := make([]*headless.Tab, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range tabs {
		wg.Go(func() { tabs[i], errs[i] = b.Open(ctx, srvs[i].URL) })
	}
	wg.Wait()
	for i, tab := range tabs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		defer tab.Close()
	}
	for i, tab := range tabs {
		deadline := time.Now().Add(time.Minute)
		for {
			n, h := polls(t, tab)
			if n >= 3 {
				if !strings.Contains(h, `<p id="seen">none</p>`) {
					t.Errorf("tab %d saw another tab's storage: %.300s", i, h)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("tab %d: %d polls after a minute: %.300s", i, n, h)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for i, tab := range []*headless.Tab{tabs[0], tabs[1], tabs[0]} {
		png, err := tab.Screenshot(ctx)
		if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
			t.Errorf("screenshot %d: %d bytes, %v", i, len(png), err)
		}
	}
	if err := tabs[1].Close(); err != nil {
		t.Error(err)
	}
	if _, err := tabs[1].HTML(ctx); !errors.Is(err, headless.ErrClosed) {
		t.Errorf("a closed tab's HTML: %v", err)
	}
	gone := httptest.NewServer(handler)
	gone.Close() // its port refuses connections now
	tab, err := b.Open(ctx, gone.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Close()
	deadline := time.Now().Add(time.Minute)
	for {
		h, err := tab.HTML(ctx) // an error too while the tab has no document
		if err != nil && strings.Contains(err.Error(), "did not load") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a page that cannot load reads %.300s (%v)", h, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
