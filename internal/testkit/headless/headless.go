// Package headless drives one headless chromium for a whole test binary
// over the DevTools protocol on a pipe (--remote-debugging-pipe: commands
// on file descriptor 3, answers and events on 4, each a JSON text ended by
// a NUL byte), so that each page a test opens costs a tab instead of a
// browser start (about two seconds of a 2-core machine). A test reads the open page's DOM until it shows what the test
// waits for, in real time: unlike `chromium --dump-dom
// --virtual-time-budget`, which draws every frame of the budget's virtual
// seconds (all of a 2-core machine for the length of the budget), a page
// that changes nothing draws nothing. It is for tests only.
package headless

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Width and Height are the size of the browser's window, in CSS pixels.
const (
	Width  = 1280
	Height = 1500
)

// Browser is a running chromium. Its methods are safe for concurrent use:
// the tabs of several tests run side by side in it.
type Browser struct {
	cmd    *exec.Cmd
	dir    string
	in     io.WriteCloser // the browser's fd 3
	stderr *tail

	wmu sync.Mutex // one command written at a time

	// shot is held from bringing a tab to the front to its screenshot:
	// only the tab in front draws.
	shot sync.Mutex

	mu      sync.Mutex
	next    int
	waiting map[int]chan reply
	err     error         // set when the pipe ended
	done    chan struct{} // closed when the reader ends
}

type reply struct {
	Result json.RawMessage
	Err    error
}

// message is anything the browser writes: an answer (ID set) or an event
// (ID 0: none is waited for).
type message struct {
	ID     int             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct{ Message string }
}

// Chromium returns the path of Debian's chromium, or skips the test when
// it is absent outside CI; under CI (CI set, as .ci/run sets it, and not
// "false" or "0") it fails the test instead (.ci/run installs chromium).
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if ci := os.Getenv("CI"); ci != "" && ci != "false" && ci != "0" {
		t.Fatal("chromium is not installed (.ci/run installs it)")
	}
	t.Skip("chromium is not installed")
	return ""
}

// Start starts chromium (the executable bin) headless with a profile in a
// new temporary directory. Close stops it and removes the directory.
func Start(ctx context.Context, bin string) (*Browser, error) {
	dir, err := os.MkdirTemp("", "agentctx-chromium-")
	if err != nil {
		return nil, fmt.Errorf("headless: %w", err)
	}
	cmdR, cmdW, err := os.Pipe() // commands: we write, the browser reads fd 3
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("headless: %w", err)
	}
	outR, outW, err := os.Pipe() // answers: the browser writes fd 4
	if err != nil {
		os.RemoveAll(dir)
		cmdR.Close()
		cmdW.Close()
		return nil, fmt.Errorf("headless: %w", err)
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--disable-extensions", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--no-default-browser-check", "--mute-audio",
		// Every tab is a page being looked at: its timers run on time.
		"--disable-background-timer-throttling", "--disable-renderer-backgrounding", "--disable-backgrounding-occluded-windows", "--user-data-dir="+dir, fmt.Sprintf("--window-size=%d,%d", Width, Height),
		"--remote-debugging-pipe", "about:blank")
	stderr := &tail{}
	cmd.Stderr = stderr
	cmd.ExtraFiles = []*os.File{cmdR, outW}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		for _, f := range []*os.File{cmdR, cmdW, outR, outW} {
			f.Close()
		}
		return nil, fmt.Errorf("headless: start %s: %w", bin, err)
	}
	cmdR.Close()
	outW.Close()
	b := &Browser{cmd: cmd, dir: dir, in: cmdW, stderr: stderr, waiting: map[int]chan reply{}, done: make(chan struct{})}
	go b.read(outR)
	// The browser answers once it is up.
	if _, err := b.call(ctx, "", "Browser.getVersion", nil); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// read routes what the browser writes until the pipe ends.
func (b *Browser) read(r io.ReadCloser) {
	defer close(b.done)
	defer r.Close()
	br := bufio.NewReaderSize(r, 1<<20)
	var err error
	for {
		var line []byte
		line, err = br.ReadBytes(0)
		if err != nil {
			break
		}
		var m message
		if json.Unmarshal(line[:len(line)-1], &m) != nil {
			continue
		}
		b.mu.Lock()
		if m.ID != 0 {
			if ch, ok := b.waiting[m.ID]; ok {
				delete(b.waiting, m.ID)
				rp := reply{Result: m.Result}
				if m.Error != nil {
					rp.Err = errors.New(m.Error.Message)
				}
				ch <- rp
			}
		}
		b.mu.Unlock()
	}
	b.mu.Lock()
	b.err = fmt.Errorf("headless: the browser's pipe ended (%v): %s", err, b.stderr)
	for id, ch := range b.waiting {
		ch <- reply{Err: b.err}
		delete(b.waiting, id)
	}
	b.mu.Unlock()
}

// tail keeps the last 2,000 bytes written to it: the end of the browser's
// standard error, for errors. Written by exec's copying goroutine, read by
// the pipe's reader.
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if n := len(t.b) - 2000; n > 0 {
		t.b = append(t.b[:0], t.b[n:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// call sends method with params to the session (the browser when "") and
// waits for its answer.
func (b *Browser) call(ctx context.Context, session, method string, params any) (json.RawMessage, error) {
	ch := make(chan reply, 1)
	id, err := b.write(session, method, params, ch)
	if err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, fmt.Errorf("headless: %s: %w", method, r.Err)
		}
		return r.Result, nil
	case <-ctx.Done():
		b.forget(id)
		return nil, fmt.Errorf("headless: %s: %w", method, ctx.Err())
	}
}

// send sends method with params to the session and does not wait: its
// answer is dropped.
func (b *Browser) send(session, method string, params any) error {
	_, err := b.write(session, method, params, nil)
	return err
}

// write writes a command; its answer goes to ch (nil: dropped).
func (b *Browser) write(session, method string, params any, ch chan reply) (int, error) {
	b.mu.Lock()
	if b.err != nil {
		b.mu.Unlock()
		return 0, b.err
	}
	b.next++
	id := b.next
	if ch != nil {
		b.waiting[id] = ch
	}
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	data, err := json.Marshal(msg)
	if err == nil {
		b.wmu.Lock()
		_, err = b.in.Write(append(data, 0))
		b.wmu.Unlock()
	}
	if err != nil {
		b.forget(id)
		return 0, fmt.Errorf("headless: %s: %w", method, err)
	}
	return id, nil
}

// forget drops the wait for command id's answer.
func (b *Browser) forget(id int) {
	b.mu.Lock()
	delete(b.waiting, id)
	b.mu.Unlock()
}

// Tab is a page open in a tab of the browser's one window (a window per
// page would start a renderer for the window's own interface each time,
// seconds of CPU). The tabs share the browser's fresh profile: pages of
// two origins (two test servers) share no cookie or storage. The page runs
// in real time: it fetches, polls and redraws as in a person's browser
// (timers are not throttled in a tab behind another), and draws no frame
// while nothing changes.
type Tab struct {
	b       *Browser
	target  string
	session string
	closed  atomic.Bool
}

// ErrClosed is returned by the methods of a closed Tab: the browser never
// answers a command to a tab that is gone.
var ErrClosed = errors.New("headless: the tab is closed")

// Open opens url in a new tab and returns at once: the page loads on its
// own (read its HTML until it shows what the caller waits for; HTML fails
// once the page failed to load). Close the tab when done.
func (b *Browser) Open(ctx context.Context, url string) (*Tab, error) {
	res, err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"})
	if err != nil {
		return nil, err
	}
	var tg struct{ TargetID string }
	json.Unmarshal(res, &tg)
	t := &Tab{b: b, target: tg.TargetID}
	res, err = b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": t.target, "flatten": true})
	if err != nil {
		t.Close()
		return nil, err
	}
	var at struct{ SessionID string }
	json.Unmarshal(res, &at)
	t.session = at.SessionID
	// Not waited for: a navigation that fails (the server refuses) in a
	// tab of the one window is never answered, not even when the tab is
	// made with the URL; HTML says so instead.
	if err := b.send(t.session, "Page.navigate", map[string]any{"url": url}); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// HTML returns the page's DOM as it is now, as HTML
// (document.documentElement.outerHTML). A page that could not load is an
// error.
func (t *Tab) HTML(ctx context.Context) ([]byte, error) {
	if t.closed.Load() {
		return nil, ErrClosed
	}
	res, err := t.b.call(ctx, t.session, "Runtime.evaluate", map[string]any{
		"expression": "[document.URL, document.documentElement ? document.documentElement.outerHTML : '']", "returnByValue": true})
	if err != nil {
		return nil, err
	}
	var ev struct {
		Result struct{ Value []string }
	}
	if err := json.Unmarshal(res, &ev); err != nil || len(ev.Result.Value) != 2 {
		return nil, fmt.Errorf("headless: the page's HTML: %.200s", res)
	}
	if u := ev.Result.Value[0]; strings.HasPrefix(u, "chrome-error:") {
		return nil, fmt.Errorf("headless: the page did not load (%s)", u)
	}
	return []byte(ev.Result.Value[1]), nil
}

// Screenshot brings the tab to the front and returns a PNG of its page as
// drawn then.
func (t *Tab) Screenshot(ctx context.Context) ([]byte, error) {
	if t.closed.Load() {
		return nil, ErrClosed
	}
	t.b.shot.Lock()
	defer t.b.shot.Unlock()
	if _, err := t.b.call(ctx, "", "Target.activateTarget", map[string]any{"targetId": t.target}); err != nil {
		return nil, err
	}
	res, err := t.b.call(ctx, t.session, "Page.captureScreenshot", map[string]any{"format": "png"})
	if err != nil {
		return nil, err
	}
	var shot struct{ Data string }
	json.Unmarshal(res, &shot)
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		return nil, fmt.Errorf("headless: the screenshot: %w", err)
	}
	return png, nil
}

// Close closes the tab. Closing it again does nothing.
func (t *Tab) Close() error {
	if t.closed.Swap(true) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := t.b.call(ctx, "", "Target.closeTarget", map[string]any{"targetId": t.target})
	return err
}

// Close stops the browser (it exits when its pipe closes; killed after
// ten seconds) and removes its profile.
func (b *Browser) Close() error {
	b.in.Close()
	exited := make(chan error, 1)
	go func() { exited <- b.cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		b.cmd.Process.Kill()
		<-exited
	}
	<-b.done
	return os.RemoveAll(b.dir)
}
