package storetest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/workspace"
)

// The environment of a child process of RunProcesses.
const (
	envKey    = "STORETEST_PROCESS_KEY"    // the store's key
	envWriter = "STORETEST_PROCESS_WRITER" // the child's number
	envOut    = "STORETEST_PROCESS_OUT"    // the file the child writes its outcomes to
)

// Processes and ids of RunProcesses.
const (
	processWriters = 4
	processIDs     = 40
)

// Child reports whether this process is a child started by RunProcesses. A
// TestMain may skip the setup the children do not need (a database server:
// the children are given the key of the parent's store).
func Child() bool { return os.Getenv(envKey) != "" }

// processOutcome is what a child reports of one Create.
type processOutcome struct {
	Won   bool           `json:"won,omitempty"`
	Info  workspace.Info `json:"info"`
	Error string         `json:"error,omitempty"` // an error other than ErrExists
}

// RunProcesses checks the rule "CreateProcesses" of the contract for a
// backend that several processes share (a directory, a file, a database):
// processes that create the same ids at once with different contents
// each get success or ErrExists, exactly one wins each id, and the id
// holds the winner's artifact.
//
// newKey makes a fresh empty store and returns what names it (a directory,
// a file path, a database URL); it is called in the test's process only.
// open opens the store a key names; it is called in every process. The
// children are the test binary itself, run again for the calling test
// alone, in which RunProcesses plays the child: so call it from its own
// test function, with nothing else in that test that a child must not do.
//
//	func TestProcesses(t *testing.T) {
//		storetest.RunProcesses(t, func(t testing.TB) string { return t.TempDir() }, openDir)
//	}
func RunProcesses(t *testing.T, newKey func(t testing.TB) string, open func(t testing.TB, key string) workspace.Store) {
	if key := os.Getenv(envKey); key != "" {
		runChild(t, key, open)
		return
	}
	key := newKey(t)
	children := startChildren(t, key, processWriters)
	awaitReady(t, children)
	for _, c := range children {
		c.stdin.Write([]byte("go\n"))
	}
	outcomes := collectOutcomes(t, children)

	s := open(t, key)
	defer s.Close()
	defer func() {
		if t.Failed() {
			t.Logf("rule CreateProcesses: processes creating one id at once with different contents: exactly one wins, every other gets ErrExists, the id holds the winner's artifact")
		}
	}()
	checkProcessOutcomes(t, s, outcomes)
}

// procChild is one writer process of RunProcesses.
type procChild struct {
	cmd   *exec.Cmd
	stdin *os.File // "go\n" starts its writes
	out   string   // the file of its outcomes; out+".ready" once it opened the store
	log   syncLog
	done  chan error // the child's exit
}

// startChildren starts writers children: the test binary again, for the
// calling test alone, playing writer w on the store key names.
func startChildren(t *testing.T, key string, writers int) []*procChild {
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	children := make([]*procChild, writers)
	for w := range writers {
		c := &procChild{out: filepath.Join(dir, fmt.Sprintf("writer-%d.json", w))}
		r, wr, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		c.stdin = wr
		c.cmd = exec.CommandContext(t.Context(), bin, "-test.run="+runPattern(t.Name()), "-test.count=1", "-test.v=false")
		c.cmd.Env = append(os.Environ(), envKey+"="+key, envWriter+"="+strconv.Itoa(w), envOut+"="+c.out)
		c.cmd.Stdin = r
		c.cmd.Stdout, c.cmd.Stderr = &c.log, &c.log
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c.done = make(chan error, 1)
		go func() { c.done <- c.cmd.Wait() }()
		r.Close()
		t.Cleanup(func() { wr.Close() })
		children[w] = c
	}
	return children
}

// awaitReady waits until every child has opened the store, so that they
// can be started together; a child that ends first, or takes more than
// 60s, fails the test.
func awaitReady(t *testing.T, children []*procChild) {
	deadline := time.Now().Add(60 * time.Second)
	for w, c := range children {
		for {
			if _, err := os.Stat(c.out + ".ready"); err == nil {
				break
			}
			select {
			case err := <-c.done: // it ended before opening the store
				t.Fatalf("child %d ended before it opened the store: %v\n%s", w, err, c.log.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("child %d did not open the store within 60s:\n%s", w, c.log.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// collectOutcomes waits for each child to exit and reads its outcomes.
func collectOutcomes(t *testing.T, children []*procChild) [][]processOutcome {
	outcomes := make([][]processOutcome, len(children))
	for w, c := range children {
		if err := <-c.done; err != nil {
			t.Fatalf("child %d: %v\n%s", w, err, c.log.String())
		}
		data, err := os.ReadFile(c.out)
		if err != nil {
			t.Fatalf("child %d wrote no outcomes: %v\n%s", w, err, c.log.String())
		}
		if err := json.Unmarshal(data, &outcomes[w]); err != nil || len(outcomes[w]) != processIDs {
			t.Fatalf("child %d: %d outcomes, %v", w, len(outcomes[w]), err)
		}
	}
	return outcomes
}

// checkProcessOutcomes checks that exactly one writer created each id,
// every other getting ErrExists, and that s holds the winner's artifact.
func checkProcessOutcomes(t *testing.T, s workspace.Store, outcomes [][]processOutcome) {
	writers := len(outcomes)
	wins := make([]int, writers)
	for i := range processIDs {
		id := processID(i)
		winner := -1
		for w := range writers {
			o := outcomes[w][i]
			if o.Error != "" {
				t.Errorf("%s: process %d: Create failed with %s, want success or ErrExists", id, w, o.Error)
			}
			if o.Won {
				if winner >= 0 {
					t.Errorf("%s: processes %d and %d both created it", id, winner, w)
				}
				winner = w
			}
		}
		if winner < 0 {
			t.Errorf("%s: no process created it", id)
			continue
		}
		got := mustGet(t, s, "default", id)
		if got.Content != raceContent(id, winner) || got.Metadata["writer"] != strconv.Itoa(winner) {
			t.Errorf("%s: holds process %s's artifact (%d bytes), but process %d won", id, got.Metadata["writer"], len(got.Content), winner)
		}
		checkArtifact(t, got, outcomes[winner][i].Info, raceContent(id, winner))
		wins[winner]++
	}
	t.Logf("%d processes × %d ids created at once: ids won by each process %v", writers, processIDs, wins)
}

func processID(i int) string { return fmt.Sprintf("tool_result_proc_%02d", i) }

// runPattern is a -test.run pattern that selects the test named name
// (subtests included) and nothing else.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// runChild is RunProcesses in a child: open the store, say so, wait for
// the start, create every id, and write the outcomes.
func runChild(t *testing.T, key string, open func(t testing.TB, key string) workspace.Store) {
	w, err := strconv.Atoi(os.Getenv(envWriter))
	if err != nil {
		t.Fatalf("child: %s=%q", envWriter, os.Getenv(envWriter))
	}
	out := os.Getenv(envOut)
	s := open(t, key)
	defer s.Close()
	if err := os.WriteFile(out+".ready", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		t.Fatalf("child: waiting for the start: %v", err)
	}
	outcomes := make([]processOutcome, processIDs)
	for i := range processIDs {
		id := processID(i)
		info, err := s.Create(bg, "default", art(id, raceContent(id, w), workspace.Metadata{"writer": strconv.Itoa(w)}, t0))
		switch {
		case err == nil:
			outcomes[i] = processOutcome{Won: true, Info: info}
		case !errors.Is(err, workspace.ErrExists):
			outcomes[i] = processOutcome{Error: err.Error()}
		}
	}
	data, err := json.Marshal(outcomes)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// syncLog is a child's output, written by its copying goroutine and read
// by the test.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
