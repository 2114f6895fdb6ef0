//go:build ignore

// gensession writes examples/session.json, the example session of the
// README: an Anthropic Messages API request body holding a long coding
// session (about 100 minutes, 27 tool calls) with timestamps, terminal
// output, files read, failed builds and tests, a data race report of more
// than 40,000 characters, and the fixes that followed.
//
//	go run examples/gensession.go > examples/session.json
//
// The output is deterministic: the same program writes the same bytes.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   *string         `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

type message struct {
	Role      string `json:"role"`
	Content   any    `json:"content"`
	Timestamp string `json:"timestamp"`
}

type tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type request struct {
	Model     string    `json:"model"`
	MaxTokens int       `json:"max_tokens"`
	System    string    `json:"system"`
	Tools     []tool    `json:"tools"`
	Messages  []message `json:"messages"`
}

var (
	start = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	clock = start
	msgs  []message
	seq   int
)

func at(d time.Duration) string {
	clock = clock.Add(d)
	return clock.Format("2006-01-02T15:04:05.000Z")
}

func user(d time.Duration, text string) {
	msgs = append(msgs, message{Role: "user", Content: text, Timestamp: at(d)})
}

// call appends an assistant turn (text, then one tool call) and the user
// turn carrying its result.
func call(d time.Duration, text, name string, input map[string]any, result string, isError bool) {
	seq++
	id := fmt.Sprintf("toolu_01Lx%04dQm%02dBd", 1000+seq*37, seq)
	in, _ := marshal(input)
	var blocks []block
	if text != "" {
		blocks = append(blocks, block{Type: "text", Text: text})
	}
	blocks = append(blocks, block{Type: "tool_use", ID: id, Name: name, Input: in})
	msgs = append(msgs, message{Role: "assistant", Content: blocks, Timestamp: at(d)})
	res := result
	msgs = append(msgs, message{Role: "user", Content: []block{{Type: "tool_result", ToolUseID: id, Content: &res, IsError: isError}}, Timestamp: at(2 * time.Second)})
}

func say(d time.Duration, text string) {
	msgs = append(msgs, message{Role: "assistant", Content: []block{{Type: "text", Text: text}}, Timestamp: at(d)})
}

func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(buf.Bytes()), nil
}

func schema(props string, required ...string) json.RawMessage {
	r, _ := json.Marshal(required)
	return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":` + string(r) + `}`)
}

// main writes the session to stdout, as the Messages request body of the
// model call that would come next.
func main() {
	req := request{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 8192,
		System: `You are a careful software engineer working in the Go repository /home/dev/ledger, a command-line double-entry bookkeeping tool.
Use the tools to inspect and change the code. Run the tests after every change. Keep commits small and explain what you did.`,
		Tools: []tool{
			{"Bash", "Run a shell command in the repository and return its output.", schema(`"command":{"type":"string"},"timeout":{"type":"integer"}`, "command")},
			{"Read", "Read a file, with line numbers.", schema(`"file_path":{"type":"string"},"offset":{"type":"integer"},"limit":{"type":"integer"}`, "file_path")},
			{"Edit", "Replace a unique string in a file.", schema(`"file_path":{"type":"string"},"old_string":{"type":"string"},"new_string":{"type":"string"}`, "file_path", "old_string", "new_string")},
			{"Grep", "Search files for a regular expression.", schema(`"pattern":{"type":"string"},"path":{"type":"string"}`, "pattern")},
			{"Write", "Create or overwrite a file.", schema(`"file_path":{"type":"string"},"content":{"type":"string"}`, "file_path", "content")},
		},
	}

	fixCI()
	speedUpImport()
	commitBoth()
	addOFXExport()

	req.Messages = msgs
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(req); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stdout.Write(buf.Bytes())
}

// fixCI appends the first task: find why CI is red, then fix the rounding
// and the data race.
func fixCI() {
	user(0, "CI for ledger has been red since yesterday's merge of the rounding PR. Find out why `go test ./...` fails, fix it, and make sure `go test -race ./...` is clean before you stop.")

	call(6*time.Second, "I'll start with the recent history and the failing tests.", "Bash", map[string]any{"command": "git log --oneline -12"}, gitLog(), false)
	call(9*time.Second, "", "Bash", map[string]any{"command": "go test ./... 2>&1 | tail -60"}, failingTests(), true)
	call(12*time.Second, "Two packages fail, both around amounts that end in a half cent. Let me read the rounding code.", "Read", map[string]any{"file_path": "/home/dev/ledger/internal/money/round.go"}, numbered(roundGo), false)
	call(20*time.Second, "", "Grep", map[string]any{"pattern": "RoundHalf(Up|Even)", "path": "/home/dev/ledger"}, grepRound(), false)
	call(10*time.Second, "Let me see exactly what the merged PR changed.", "Bash", map[string]any{"command": "git show c2d41e0"}, gitShow(), false)
	call(14*time.Second, "", "Read", map[string]any{"file_path": "/home/dev/ledger/internal/report/totals.go"}, numbered(totalsGo), false)
	call(11*time.Second, "", "Read", map[string]any{"file_path": "/home/dev/ledger/internal/tax/vat.go"}, numbered(vatGo), false)
	call(15*time.Second, "The PR switched `Amount.Round` to banker's rounding, but the report totals and the tax code still expect half-up. I'll check the test to be sure which behaviour is intended.", "Read", map[string]any{"file_path": "/home/dev/ledger/internal/money/round_test.go"}, numbered(roundTestGo), false)
	call(40*time.Second, "The tests document half-up for display and half-even only for interest accrual, so the PR changed the wrong function. Restoring half-up in `Round` and keeping half-even in `RoundBankers`.", "Edit",
		map[string]any{"file_path": "/home/dev/ledger/internal/money/round.go", "old_string": "\treturn a.RoundHalfEven(places)", "new_string": "\treturn a.RoundHalfUp(places)"},
		"The file /home/dev/ledger/internal/money/round.go has been updated.", false)
	call(8*time.Second, "", "Bash", map[string]any{"command": "go test ./internal/money/ ./internal/report/ ./internal/tax/"}, "ok  \tgithub.com/dev/ledger/internal/money\t0.012s\nok  \tgithub.com/dev/ledger/internal/report\t0.048s\nok  \tgithub.com/dev/ledger/internal/tax\t0.021s\n", false)
	call(10*time.Second, "Those pass. Now the whole suite under the race detector, verbose so we can see which test is slow.", "Bash", map[string]any{"command": "go test -race -v ./... 2>&1"}, raceLog(), true)
	call(25*time.Second, "A data race in the exchange-rate cache: `Get` reads the map while `refresh` writes it from the ticker goroutine. Let me look at the cache.", "Read", map[string]any{"file_path": "/home/dev/ledger/internal/fx/cache.go"}, numbered(cacheGo), false)
	call(12*time.Second, "And the test that caught it:", "Read", map[string]any{"file_path": "/home/dev/ledger/internal/fx/cache_test.go"}, numbered(cacheTestGo), false)
	call(50*time.Second, "The cache has no lock at all. I'll add a sync.RWMutex: readers take RLock, refresh swaps the map under Lock.", "Edit",
		map[string]any{"file_path": "/home/dev/ledger/internal/fx/cache.go", "old_string": "type Cache struct {\n\trates   map[string]Rate", "new_string": "type Cache struct {\n\tmu      sync.RWMutex\n\trates   map[string]Rate"},
		"The file /home/dev/ledger/internal/fx/cache.go has been updated.", false)
	call(30*time.Second, "", "Edit",
		map[string]any{"file_path": "/home/dev/ledger/internal/fx/cache.go", "old_string": "func (c *Cache) Get(pair string) (Rate, bool) {\n\tr, ok := c.rates[pair]", "new_string": "func (c *Cache) Get(pair string) (Rate, bool) {\n\tc.mu.RLock()\n\tr, ok := c.rates[pair]\n\tc.mu.RUnlock()"},
		"The file /home/dev/ledger/internal/fx/cache.go has been updated.", false)
	call(30*time.Second, "", "Edit",
		map[string]any{"file_path": "/home/dev/ledger/internal/fx/cache.go", "old_string": "\tc.rates = fresh", "new_string": "\tc.mu.Lock()\n\tc.rates = fresh\n\tc.mu.Unlock()"},
		"The file /home/dev/ledger/internal/fx/cache.go has been updated.", false)
	call(9*time.Second, "", "Bash", map[string]any{"command": "go build ./... && go test -race ./internal/fx/"}, "# github.com/dev/ledger/internal/fx\ninternal/fx/cache.go:14:2: undefined: sync\n", true)
	call(12*time.Second, "Missing import.", "Edit",
		map[string]any{"file_path": "/home/dev/ledger/internal/fx/cache.go", "old_string": "import (\n\t\"context\"", "new_string": "import (\n\t\"context\"\n\t\"sync\""},
		"The file /home/dev/ledger/internal/fx/cache.go has been updated.", false)
	call(9*time.Second, "", "Bash", map[string]any{"command": "go test -race -count=3 ./internal/fx/"}, "ok  \tgithub.com/dev/ledger/internal/fx\t1.913s\n", false)
	call(14*time.Second, "The race is gone. Full suite with the race detector again:", "Bash", map[string]any{"command": "go test -race ./... 2>&1"}, passingRace(), false)
	call(11*time.Second, "", "Bash", map[string]any{"command": "go vet ./... && staticcheck ./..."}, "internal/importer/csv.go:88:6: func parseRow is unused (U1000)\n", false)
	call(20*time.Second, "staticcheck flags an unused helper left over from the CSV rewrite; removing it.", "Bash", map[string]any{"command": "sed -i '/^func parseRow(/,/^}/d' internal/importer/csv.go && go build ./... && staticcheck ./..."}, "", false)
	call(7*time.Second, "", "Bash", map[string]any{"command": "git diff --stat"}, " internal/fx/cache.go        | 9 ++++++++-\n internal/importer/csv.go    | 14 --------------\n internal/money/round.go     | 2 +-\n 3 files changed, 10 insertions(+), 16 deletions(-)\n", false)
	say(10*time.Second, "CI should be green again:\n\n1. **Rounding**: the rounding PR changed `Amount.Round` to half-even, but reports and tax use half-up (as `round_test.go` documents). `Round` is half-up again; `RoundBankers` stays half-even for interest accrual.\n2. **Data race** in `internal/fx`: the rate cache was read by request goroutines while the refresher replaced the map. It is now guarded by a `sync.RWMutex`.\n3. Removed the unused `parseRow` that staticcheck reported.\n\n`go test -race ./...`, `go vet` and `staticcheck` are clean.")
}

// speedUpImport appends the second task: profile the CSV importer and
// make it faster.
func speedUpImport() {
	user(38*time.Minute, "Nice. While you're at it: `ledger import` takes forever on the 200 MB bank export. Can you profile the CSV importer and make it faster?")
	call(15*time.Second, "I'll benchmark the importer with a CPU profile.", "Bash", map[string]any{"command": "go test -run '^$' -bench ImportCSV -benchmem -cpuprofile cpu.out ./internal/importer/"}, benchBefore(), false)
	call(12*time.Second, "", "Bash", map[string]any{"command": "go tool pprof -top -nodecount=35 internal/importer/importer.test cpu.out"}, pprofTop(), false)
	call(9*time.Second, "Before changing anything, the importer's tests, verbose, to know what they cover:", "Bash", map[string]any{"command": "go test -v ./internal/importer/"}, importerTests(), false)
	call(10*time.Second, "Most of the time goes to `strings.Split` and `strconv.ParseFloat` on every field, plus map growth. Let me read the importer.", "Read", map[string]any{"file_path": "/home/dev/ledger/internal/importer/csv.go"}, numbered(csvGo), false)
	call(70*time.Second, "I'll use encoding/csv with ReuseRecord, parse amounts as integer cents instead of floats, and size the account map up front.", "Edit",
		map[string]any{"file_path": "/home/dev/ledger/internal/importer/csv.go", "old_string": "\tfor scanner.Scan() {\n\t\tfields := strings.Split(scanner.Text(), \",\")", "new_string": "\tr := csv.NewReader(bufio.NewReaderSize(in, 1<<20))\n\tr.ReuseRecord = true\n\tfor {\n\t\tfields, err := r.Read()\n\t\tif err == io.EOF {\n\t\t\tbreak\n\t\t}"},
		"The file /home/dev/ledger/internal/importer/csv.go has been updated.", false)
	call(40*time.Second, "", "Edit",
		map[string]any{"file_path": "/home/dev/ledger/internal/importer/csv.go", "old_string": "\t\tamt, err := strconv.ParseFloat(fields[3], 64)", "new_string": "\t\tamt, err := money.ParseCents(fields[3])"},
		"The file /home/dev/ledger/internal/importer/csv.go has been updated.", false)
	call(9*time.Second, "", "Bash", map[string]any{"command": "go test ./internal/importer/ && go test -run '^$' -bench ImportCSV -benchmem ./internal/importer/"}, benchAfter(), false)
	call(16*time.Second, "About 4.6× faster with 92% fewer allocations. Full suite once more:", "Bash", map[string]any{"command": "go test -race ./... 2>&1"}, passingRace(), false)
	say(8*time.Second, "The importer now streams with `encoding/csv` (records reused), parses amounts straight to integer cents (`money.ParseCents`, no float rounding) and presizes the account map: `BenchmarkImportCSV/200MB` went from 9.81 s to 2.12 s and from 41.2M to 3.2M allocations. All tests pass with the race detector.")
}

// commitBoth appends the third task: commit both changes separately.
func commitBoth() {
	user(41*time.Minute, "Great, commit both changes separately with good messages.")
	call(12*time.Second, "", "Bash", map[string]any{"command": "git add internal/money internal/fx internal/importer/csv.go && git commit -m 'money: restore half-up rounding in Amount.Round; fx: guard rate cache with RWMutex' -m 'The rounding PR switched Round to half-even, breaking report totals and tax. RoundBankers keeps half-even for interest. The fx cache was read while the refresher replaced its map (data race).' -- internal/money internal/fx && git log --oneline -1"}, "[main 4be81c2] money: restore half-up rounding in Amount.Round; fx: guard rate cache with RWMutex\n 2 files changed, 10 insertions(+), 2 deletions(-)\n4be81c2 money: restore half-up rounding in Amount.Round; fx: guard rate cache with RWMutex\n", false)
	call(10*time.Second, "", "Bash", map[string]any{"command": "git add internal/importer && git commit -m 'importer: stream CSV with encoding/csv and parse cents directly' -m 'BenchmarkImportCSV/200MB: 9.81s -> 2.12s, 41.2M -> 3.2M allocs/op.' && git log --oneline -3"}, "[main 9d07e3a] importer: stream CSV with encoding/csv and parse cents directly\n 1 file changed, 21 insertions(+), 33 deletions(-)\n9d07e3a importer: stream CSV with encoding/csv and parse cents directly\n4be81c2 money: restore half-up rounding in Amount.Round; fx: guard rate cache with RWMutex\n1f3c9aa Merge pull request #212 from dev/rounding-modes\n", false)
	say(6*time.Second, "Committed as two commits:\n\n- `4be81c2` money: restore half-up rounding in Amount.Round; fx: guard rate cache with RWMutex\n- `9d07e3a` importer: stream CSV with encoding/csv and parse cents directly\n\nNothing is pushed yet; say the word and I'll push and open the PR.")
}

// addOFXExport appends the fourth task: add an OFX export with a
// golden-file test.
func addOFXExport() {
	user(9*time.Minute, "One more thing before the PR: our accountant wants an OFX export. Add `ledger export --format ofx` next to the CSV export, with a golden-file test.")
	call(14*time.Second, "I'll look at how the CSV export is wired into the command first.", "Read", map[string]any{"file_path": "/home/dev/ledger/cmd/ledger/export.go"}, numbered(exportGo), false)
	call(12*time.Second, "", "Read", map[string]any{"file_path": "/home/dev/ledger/internal/report/csv.go"}, numbered(csvExportGo), false)
	call(10*time.Second, "", "Bash", map[string]any{"command": "ls internal/report/testdata/ && head -20 internal/report/testdata/export.golden.csv"}, "export.golden.csv\nexport.input.ledger\nmonthly.golden.txt\n"+goldenCSV(), false)
	call(95*time.Second, "OFX 1.0.2 is SGML with a fixed header; banks accept the XML 2.x form too, and it is simpler to produce correctly, so I'll write OFX 2.2 with encoding/xml. One STMTTRN per posting, amounts from money.Amount (no floats), FITID from the posting's stable hash so re-exports deduplicate.", "Write",
		map[string]any{"file_path": "/home/dev/ledger/internal/report/ofx.go", "content": strings.ReplaceAll(ofxGo, "§", "`")}, "File created successfully at: /home/dev/ledger/internal/report/ofx.go", false)
	call(60*time.Second, "", "Write", map[string]any{"file_path": "/home/dev/ledger/internal/report/ofx_test.go", "content": ofxTestGo}, "File created successfully at: /home/dev/ledger/internal/report/ofx_test.go", false)
	call(9*time.Second, "", "Bash", map[string]any{"command": "go test ./internal/report/ -run OFX -update && go test ./internal/report/"}, ofxBuildError(), true)
	call(25*time.Second, "`money.Amount` has no `Float` method, by design. The OFX amount must be the decimal string, which `Amount.String` already gives.", "Edit",
		map[string]any{"file_path": "/home/dev/ledger/internal/report/ofx.go", "old_string": "\t\t\tAmount:   strconv.FormatFloat(p.Value().Float(), 'f', 2, 64),", "new_string": "\t\t\tAmount:   p.Value().Round(2).String(),"},
		"The file /home/dev/ledger/internal/report/ofx.go has been updated.", false)
	call(20*time.Second, "", "Edit",
		map[string]any{"file_path": "/home/dev/ledger/internal/report/ofx.go", "old_string": "\t\"strconv\"\n", "new_string": ""},
		"The file /home/dev/ledger/internal/report/ofx.go has been updated.", false)
	call(9*time.Second, "", "Bash", map[string]any{"command": "go test ./internal/report/ -run OFX -update && go test -v ./internal/report/"}, reportTests(), false)
	call(30*time.Second, "Wiring the format into the command:", "Edit",
		map[string]any{"file_path": "/home/dev/ledger/cmd/ledger/export.go", "old_string": "\tcase \"csv\":\n\t\treturn report.WriteCSV(out, postings)", "new_string": "\tcase \"csv\":\n\t\treturn report.WriteCSV(out, postings)\n\tcase \"ofx\":\n\t\treturn report.WriteOFX(out, postings, report.OFXOptions{Account: acct, Currency: cur})"},
		"The file /home/dev/ledger/cmd/ledger/export.go has been updated.", false)
	call(11*time.Second, "", "Bash", map[string]any{"command": "go run ./cmd/ledger export --format ofx --account assets:checking --since 2026-01-01 --until 2026-01-08 testdata/demo.ledger"}, ofxSample(), false)
	call(12*time.Second, "", "Bash", map[string]any{"command": "go test -race ./... && go vet ./... && staticcheck ./..."}, passingRace(), false)
	say(9*time.Second, "`ledger export --format ofx` is in place:\n\n- `internal/report/ofx.go`: OFX 2.2 (XML) with one `STMTTRN` per posting, amounts as exact decimals from `money.Amount`, `FITID` from a stable hash of the posting so a bank or accountant tool deduplicates re-exports, and the ledger balance as `LEDGERBAL`.\n- `internal/report/ofx_test.go`: golden-file test (`-update` rewrites `testdata/export.golden.ofx`).\n- `cmd/ledger/export.go`: `--format ofx`, with `--account` and `--currency` (default EUR).\n\nThe first attempt called a non-existent `Amount.Float`; it now formats the decimal string directly, which also avoids float rounding. Tests, vet and staticcheck pass. It's not committed yet: shall I add it as a third commit?")
}

func numbered(src string) string {
	var b strings.Builder
	for i, l := range strings.Split(strings.TrimSuffix(src, "\n"), "\n") {
		fmt.Fprintf(&b, "%6d\t%s\n", i+1, l)
	}
	return b.String()
}

func gitLog() string {
	return `1f3c9aa Merge pull request #212 from dev/rounding-modes
c2d41e0 money: add RoundBankers and use half-even in Round
8a17f55 fx: refresh rates every 30s in the background
77b0c1e report: show running balance per account
e5d9a31 importer: accept semicolon-separated exports
0c4f8b2 tax: VAT reports per quarter
93aa6d7 cli: --since and --until for ledger report
4e6b2f0 money: Amount.String pads cents
b81d0c9 ci: run tests with -race on main
2f7e5c1 fx: cache exchange rates in memory
d3c8a40 importer: stream large files
a6e01b7 initial import of ledger v0.9
`
}

func failingTests() string {
	return `ok  	github.com/dev/ledger/cmd/ledger	0.091s
ok  	github.com/dev/ledger/internal/account	0.033s
ok  	github.com/dev/ledger/internal/fx	1.207s
ok  	github.com/dev/ledger/internal/importer	0.512s
--- FAIL: TestRound (0.00s)
    --- FAIL: TestRound/2.345_to_2_places (0.00s)
        round_test.go:41: Round(2.345, 2) = 2.34, want 2.35
    --- FAIL: TestRound/-0.125_to_2_places (0.00s)
        round_test.go:41: Round(-0.125, 2) = -0.12, want -0.13
    --- FAIL: TestRound/1.005_to_2_places (0.00s)
        round_test.go:41: Round(1.005, 2) = 1.00, want 1.01
FAIL
FAIL	github.com/dev/ledger/internal/money	0.010s
--- FAIL: TestMonthlyTotals (0.01s)
    report_test.go:88: totals for 2026-01:
        account          got          want
        expenses:food    412.34       412.35
        expenses:rent   1250.00      1250.00
        income:salary  -4100.12     -4100.13
FAIL
FAIL	github.com/dev/ledger/internal/report	0.047s
--- FAIL: TestVATQuarter (0.00s)
    vat_test.go:57: Q1 VAT = 1934.52, want 1934.53
FAIL
FAIL	github.com/dev/ledger/internal/tax	0.019s
FAIL
`
}

const roundGo = `package money

import "math/big"

// Amount is an exact decimal amount of money, in units of 10^-Scale.
type Amount struct {
	units int64
	scale int
}

// New returns the amount units × 10^-scale.
func New(units int64, scale int) Amount { return Amount{units: units, scale: scale} }

// Round rounds a to places decimal places for display and reports:
// half away from zero, as accountants expect (2.345 → 2.35).
func (a Amount) Round(places int) Amount {
	return a.RoundHalfEven(places)
}

// RoundBankers rounds half to even: used for interest accrual only, where
// rounding bias adds up over many periods.
func (a Amount) RoundBankers(places int) Amount {
	return a.RoundHalfEven(places)
}

// RoundHalfUp rounds half away from zero.
func (a Amount) RoundHalfUp(places int) Amount {
	if places >= a.scale {
		return a
	}
	div := pow10(a.scale - places)
	q, r := a.units/div, a.units%div
	if r < 0 {
		r = -r
	}
	if 2*r >= div {
		if a.units < 0 {
			q--
		} else {
			q++
		}
	}
	return Amount{units: q, scale: places}
}

// RoundHalfEven rounds half to the even neighbour.
func (a Amount) RoundHalfEven(places int) Amount {
	if places >= a.scale {
		return a
	}
	div := pow10(a.scale - places)
	q, r := a.units/div, a.units%div
	if r < 0 {
		r = -r
	}
	switch {
	case 2*r > div, 2*r == div && q%2 != 0:
		if a.units < 0 {
			q--
		} else {
			q++
		}
	}
	return Amount{units: q, scale: places}
}

// Rat returns the amount as an exact rational number.
func (a Amount) Rat() *big.Rat {
	return new(big.Rat).SetFrac64(a.units, pow10(a.scale))
}

func pow10(n int) int64 {
	p := int64(1)
	for range n {
		p *= 10
	}
	return p
}
`

func grepRound() string {
	return `/home/dev/ledger/internal/money/round.go:17:	return a.RoundHalfEven(places)
/home/dev/ledger/internal/money/round.go:23:	return a.RoundHalfEven(places)
/home/dev/ledger/internal/money/round.go:26:// RoundHalfUp rounds half away from zero.
/home/dev/ledger/internal/money/round.go:27:func (a Amount) RoundHalfUp(places int) Amount {
/home/dev/ledger/internal/money/round.go:45:// RoundHalfEven rounds half to the even neighbour.
/home/dev/ledger/internal/money/round.go:46:func (a Amount) RoundHalfEven(places int) Amount {
/home/dev/ledger/internal/interest/accrue.go:52:		daily = daily.RoundBankers(6)
/home/dev/ledger/internal/report/totals.go:73:		t.Sum = t.Sum.Round(2)
/home/dev/ledger/internal/tax/vat.go:39:	return base.Mul(rate).Round(2)
`
}

const roundTestGo = `package money

import "testing"

func TestRound(t *testing.T) {
	tests := []struct {
		name   string
		in     Amount
		places int
		want   Amount
	}{
		{"2.345 to 2 places", New(2345, 3), 2, New(235, 2)},
		{"-0.125 to 2 places", New(-125, 3), 2, New(-13, 2)},
		{"1.005 to 2 places", New(1005, 3), 2, New(101, 2)},
		{"2.344 to 2 places", New(2344, 3), 2, New(234, 2)},
		{"already 2 places", New(1999, 2), 2, New(1999, 2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Display rounding is half away from zero (see Round's doc).
			if got := tt.in.Round(tt.places); got != tt.want {
				t.Errorf("Round(%v, %d) = %v, want %v", tt.in, tt.places, got, tt.want)
			}
		})
	}
}

func TestRoundBankers(t *testing.T) {
	// Interest accrual rounds half to even.
	if got, want := New(2345, 3).RoundBankers(2), New(234, 2); got != want {
		t.Errorf("RoundBankers(2.345, 2) = %v, want %v", got, want)
	}
	if got, want := New(2355, 3).RoundBankers(2), New(236, 2); got != want {
		t.Errorf("RoundBankers(2.355, 2) = %v, want %v", got, want)
	}
}
`

// raceLog is the verbose output of the race-enabled test run: every test
// of every package, and a race report in the middle. More than 40,000
// characters, so the workspace replaces it by a reference.
func raceLog() string {
	var b strings.Builder
	pkgs := []struct {
		name  string
		tests []string
	}{
		{"cmd/ledger", []string{"TestMainHelp", "TestMainVersion", "TestImportCommand", "TestReportCommand", "TestBalanceCommand", "TestExitCodes"}},
		{"internal/account", []string{"TestParseAccount", "TestAccountTree", "TestAccountRename", "TestAccountClose", "TestAccountAliases"}},
		{"internal/fx", []string{"TestConvert", "TestCacheGet", "TestCacheRefresh", "TestCacheConcurrent", "TestProviderTimeout"}},
		{"internal/importer", []string{"TestImportCSV", "TestImportSemicolon", "TestImportQuoted", "TestImportBOM", "TestImportDuplicates", "TestImportLarge"}},
		{"internal/interest", []string{"TestAccrueDaily", "TestAccrueLeapYear", "TestCompound"}},
		{"internal/money", []string{"TestRound", "TestRoundBankers", "TestParseCents", "TestAmountString", "TestAmountAdd"}},
		{"internal/report", []string{"TestMonthlyTotals", "TestRunningBalance", "TestReportSince", "TestReportCSV"}},
		{"internal/tax", []string{"TestVATQuarter", "TestVATRates", "TestVATExempt"}},
	}
	step := 0
	for _, p := range pkgs {
		for _, t := range p.tests {
			fmt.Fprintf(&b, "=== RUN   %s\n", t)
			for i := 1; i <= 6; i++ {
				step++
				fmt.Fprintf(&b, "=== RUN   %s/case_%02d\n", t, i)
				fmt.Fprintf(&b, "    %s: fixture testdata/%s_%02d.ledger loaded: %d postings, %d accounts\n", strings.ToLower(t[4:]), strings.ToLower(t[4:]), i, 40+step%97, 5+step%11)
			}
			if p.name == "internal/fx" && t == "TestCacheConcurrent" {
				b.WriteString(raceReport())
				fmt.Fprintf(&b, "    testing.go:1490: race detected during execution of test\n--- FAIL: %s (0.31s)\n", t)
				continue
			}
			fmt.Fprintf(&b, "--- PASS: %s (0.%02ds)\n", t, step%60)
			for i := 1; i <= 6; i++ {
				fmt.Fprintf(&b, "    --- PASS: %s/case_%02d (0.00s)\n", t, i)
			}
		}
		if p.name == "internal/fx" {
			fmt.Fprintf(&b, "FAIL\nFAIL\tgithub.com/dev/ledger/%s\t1.884s\n", p.name)
		} else {
			fmt.Fprintf(&b, "PASS\nok  \tgithub.com/dev/ledger/%s\t0.%03ds\n", p.name, 100+len(p.tests)*37)
		}
	}
	b.WriteString("FAIL\n")
	return b.String()
}

func raceReport() string {
	var b strings.Builder
	b.WriteString("==================\nWARNING: DATA RACE\nRead at 0x00c0001a4060 by goroutine 23:\n")
	frames := []string{
		"runtime.mapaccess2_faststr()\n      /usr/local/go/src/internal/runtime/maps/runtime_faststr.go:117 +0x0",
		"github.com/dev/ledger/internal/fx.(*Cache).Get()\n      /home/dev/ledger/internal/fx/cache.go:41 +0x8e",
		"github.com/dev/ledger/internal/fx.(*Converter).Convert()\n      /home/dev/ledger/internal/fx/convert.go:28 +0x104",
		"github.com/dev/ledger/internal/fx.TestCacheConcurrent.func1()\n      /home/dev/ledger/internal/fx/cache_test.go:77 +0x1a5",
	}
	for _, f := range frames {
		b.WriteString("  " + f + "\n")
	}
	b.WriteString("\nPrevious write at 0x00c0001a4060 by goroutine 9:\n")
	for _, f := range []string{
		"github.com/dev/ledger/internal/fx.(*Cache).refresh()\n      /home/dev/ledger/internal/fx/cache.go:63 +0x2d4",
		"github.com/dev/ledger/internal/fx.(*Cache).run()\n      /home/dev/ledger/internal/fx/cache.go:52 +0x9c",
		"github.com/dev/ledger/internal/fx.New.gowrap1()\n      /home/dev/ledger/internal/fx/cache.go:31 +0x44",
	} {
		b.WriteString("  " + f + "\n")
	}
	b.WriteString("\nGoroutine 23 (running) created at:\n  github.com/dev/ledger/internal/fx.TestCacheConcurrent()\n      /home/dev/ledger/internal/fx/cache_test.go:74 +0x2b0\n  testing.tRunner()\n      /usr/local/go/src/testing/testing.go:1792 +0x225\n\nGoroutine 9 (running) created at:\n  github.com/dev/ledger/internal/fx.New()\n      /home/dev/ledger/internal/fx/cache.go:31 +0x1f8\n  github.com/dev/ledger/internal/fx.TestCacheConcurrent()\n      /home/dev/ledger/internal/fx/cache_test.go:66 +0x64\n==================\n")
	return b.String()
}

const cacheGo = `package fx

import (
	"context"
	"time"
)

// Rate is an exchange rate at a point in time.
type Rate struct {
	Pair  string
	Value float64
	At    time.Time
}

// Cache keeps the latest exchange rates in memory and refreshes them in the
// background.
type Cache struct {
	rates   map[string]Rate
	source  Provider
	every   time.Duration
	stopped chan struct{}
}

// Provider fetches current rates.
type Provider interface {
	Rates(ctx context.Context) (map[string]Rate, error)
}

// New returns a cache that refreshes from p every interval until ctx ends.
func New(ctx context.Context, p Provider, every time.Duration) *Cache {
	c := &Cache{rates: map[string]Rate{}, source: p, every: every, stopped: make(chan struct{})}
	go c.run(ctx)
	return c
}

// Get returns the latest rate for a currency pair such as "EURUSD".
func (c *Cache) Get(pair string) (Rate, bool) {
	r, ok := c.rates[pair]
	return r, ok
}

func (c *Cache) run(ctx context.Context) {
	defer close(c.stopped)
	t := time.NewTicker(c.every)
	defer t.Stop()
	c.refresh(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.refresh(ctx)
		}
	}
}

func (c *Cache) refresh(ctx context.Context) {
	fresh, err := c.source.Rates(ctx)
	if err != nil {
		return // keep the old rates; the next tick retries
	}
	c.rates = fresh
}
`

func passingRace() string {
	return `ok  	github.com/dev/ledger/cmd/ledger	1.402s
ok  	github.com/dev/ledger/internal/account	1.087s
ok  	github.com/dev/ledger/internal/fx	2.318s
ok  	github.com/dev/ledger/internal/importer	3.904s
ok  	github.com/dev/ledger/internal/interest	1.121s
ok  	github.com/dev/ledger/internal/money	1.019s
ok  	github.com/dev/ledger/internal/report	1.288s
ok  	github.com/dev/ledger/internal/tax	1.057s
`
}

func benchBefore() string {
	return `goos: linux
goarch: amd64
pkg: github.com/dev/ledger/internal/importer
cpu: AMD EPYC 7B13
BenchmarkImportCSV/1MB-8         	      21	  51872310 ns/op	 20.21 MB/s	 9853921 B/op	  211877 allocs/op
BenchmarkImportCSV/20MB-8        	       2	 987212004 ns/op	 21.24 MB/s	197110672 B/op	 4120540 allocs/op
BenchmarkImportCSV/200MB-8       	       1	9810442117 ns/op	 21.38 MB/s	1971006536 B/op	41204211 allocs/op
PASS
ok  	github.com/dev/ledger/internal/importer	17.482s
`
}

func pprofTop() string {
	var b strings.Builder
	b.WriteString(`File: importer.test
Type: cpu
Time: 2026-03-02 10:21:40 UTC
Duration: 17.31s, Total samples = 19.84s (114.62%)
Showing nodes accounting for 18.92s, 95.36% of 19.84s total
Dropped 141 nodes (cum <= 0.10s)
Showing top 35 nodes out of 96
      flat  flat%   sum%        cum   cum%
`)
	rows := []struct {
		flat float64
		cum  float64
		fn   string
	}{
		{3.91, 5.02, "strings.genSplit"}, {2.87, 2.87, "runtime.memmove"}, {2.14, 4.41, "strconv.ParseFloat"},
		{1.62, 1.62, "runtime.mallocgc"}, {1.21, 1.98, "runtime.mapassign_faststr"}, {0.98, 0.98, "strconv.readFloat"},
		{0.87, 2.02, "runtime.growslice"}, {0.74, 0.74, "runtime.memclrNoHeapPointers"}, {0.66, 0.91, "bufio.(*Scanner).Scan"},
		{0.61, 0.61, "indexbytebody"}, {0.52, 0.77, "runtime.scanobject"}, {0.47, 0.47, "runtime.findObject"},
		{0.41, 12.77, "github.com/dev/ledger/internal/importer.(*Importer).Import"}, {0.33, 0.33, "strconv.atof64exact"},
		{0.31, 0.58, "github.com/dev/ledger/internal/money.FromFloat"}, {0.28, 0.28, "runtime.nextFreeFast"},
		{0.24, 0.41, "github.com/dev/ledger/internal/account.Parse"}, {0.22, 0.22, "aeshashbody"},
		{0.19, 0.19, "runtime.heapBitsSetType"}, {0.17, 0.29, "strings.TrimSpace"}, {0.15, 0.15, "unicode.IsSpace"},
		{0.14, 0.37, "time.Parse"}, {0.12, 0.12, "runtime.(*mspan).init"}, {0.11, 0.11, "runtime.procyield"},
	}
	sum := 0.0
	for _, r := range rows {
		sum += r.flat
		fmt.Fprintf(&b, "%9.2fs %5.2f%% %5.2f%% %9.2fs %5.2f%%  %s\n", r.flat, r.flat/19.84*100, sum/19.84*100, r.cum, r.cum/19.84*100, r.fn)
	}
	return b.String()
}

const csvGo = `package importer

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/dev/ledger/internal/account"
	"github.com/dev/ledger/internal/money"
)

// Importer reads bank exports into postings.
type Importer struct {
	Accounts map[string]*account.Account
	Comma    rune
	Layout   string // date layout of the export
}

// Posting is one imported line.
type Posting struct {
	Date    time.Time
	Account *account.Account
	Payee   string
	Amount  money.Amount
}

// Import reads a CSV export: date, account, payee, amount.
func (im *Importer) Import(in io.Reader) ([]Posting, error) {
	scanner := bufio.NewScanner(in)
	var out []Posting
	line := 0
	if im.Accounts == nil {
		im.Accounts = map[string]*account.Account{}
	}
	for scanner.Scan() {
		fields := strings.Split(scanner.Text(), ",")
		line++
		if line == 1 {
			continue // header
		}
		if len(fields) != 4 {
			return nil, fmt.Errorf("line %d: want 4 fields, got %d", line, len(fields))
		}
		date, err := time.Parse(im.Layout, strings.TrimSpace(fields[0]))
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		acct, ok := im.Accounts[fields[1]]
		if !ok {
			acct, err = account.Parse(fields[1])
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			im.Accounts[fields[1]] = acct
		}
		amt, err := strconv.ParseFloat(fields[3], 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: amount: %w", line, err)
		}
		out = append(out, Posting{Date: date, Account: acct, Payee: strings.TrimSpace(fields[2]), Amount: money.FromFloat(amt, 2)})
	}
	return out, scanner.Err()
}

func parseRow(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		out = append(out, strings.Trim(f, "\" "))
	}
	return out
}
`

func benchAfter() string {
	return `ok  	github.com/dev/ledger/internal/importer	0.498s
goos: linux
goarch: amd64
pkg: github.com/dev/ledger/internal/importer
cpu: AMD EPYC 7B13
BenchmarkImportCSV/1MB-8         	     106	  11204381 ns/op	 93.59 MB/s	  801224 B/op	   16012 allocs/op
BenchmarkImportCSV/20MB-8        	      10	 213884090 ns/op	 98.05 MB/s	15988412 B/op	  320118 allocs/op
BenchmarkImportCSV/200MB-8       	       1	2121840015 ns/op	 98.85 MB/s	159870224 B/op	 3200961 allocs/op
PASS
ok  	github.com/dev/ledger/internal/importer	6.914s
`
}

func gitShow() string {
	var b strings.Builder
	b.WriteString(`commit c2d41e0b7f3a9e215c0d4e8a61b2f7c9d03e5a14
Author: Sam Okafor <sam@example.org>
Date:   Sun Mar 1 17:42:09 2026 +0100

    money: add RoundBankers and use half-even in Round

    Interest accrual drifted by a few cents a year because half-up rounding
    is biased. Use half-even.

diff --git a/internal/money/round.go b/internal/money/round.go
index 5be0a2c..8f1d3e7 100644
--- a/internal/money/round.go
+++ b/internal/money/round.go
@@ -12,9 +12,15 @@ func New(units int64, scale int) Amount { return Amount{units: units, scale: scale} }
 // Round rounds a to places decimal places for display and reports:
 // half away from zero, as accountants expect (2.345 → 2.35).
 func (a Amount) Round(places int) Amount {
-	return a.RoundHalfUp(places)
+	return a.RoundHalfEven(places)
+}
+
+// RoundBankers rounds half to even: used for interest accrual only, where
+// rounding bias adds up over many periods.
+func (a Amount) RoundBankers(places int) Amount {
+	return a.RoundHalfEven(places)
 }
 
diff --git a/internal/interest/accrue.go b/internal/interest/accrue.go
index 1d2e3f4..a9b8c7d 100644
--- a/internal/interest/accrue.go
+++ b/internal/interest/accrue.go
@@ -49,7 +49,7 @@ func Accrue(balance money.Amount, rate Rate, from, to time.Time) money.Amount {
 	for d := from; d.Before(to); d = d.AddDate(0, 0, 1) {
 		daily := balance.Mul(rate.Daily(d.Year()))
-		daily = daily.Round(6)
+		daily = daily.RoundBankers(6)
 		total = total.Add(daily)
 	}
 	return total
diff --git a/internal/interest/accrue_test.go b/internal/interest/accrue_test.go
index 7a6b5c4..0e1f2d3 100644
--- a/internal/interest/accrue_test.go
+++ b/internal/interest/accrue_test.go
@@ -20,30 +20,30 @@ func TestAccrueDaily(t *testing.T) {
`)
	for i := 0; i < 30; i++ {
		old := 1000 + i*137
		fmt.Fprintf(&b, "-		{\"day %02d\", money.New(%d, 2), rate(0.0%d), money.New(%d, 6)},\n", i+1, old*100, 1+i%4, old*27+i%2)
		fmt.Fprintf(&b, "+		{\"day %02d\", money.New(%d, 2), rate(0.0%d), money.New(%d, 6)},\n", i+1, old*100, 1+i%4, old*27)
	}
	b.WriteString(" \t}\n")
	return b.String()
}

const totalsGo = `package report

import (
	"sort"
	"time"

	"github.com/dev/ledger/internal/account"
	"github.com/dev/ledger/internal/money"
)

// Total is the sum of the postings of one account in a period.
type Total struct {
	Account *account.Account
	Sum     money.Amount
	Count   int
}

// Period is a half-open interval of days.
type Period struct {
	From, To time.Time
}

// Contains reports whether t is in the period.
func (p Period) Contains(t time.Time) bool {
	return !t.Before(p.From) && t.Before(p.To)
}

// Months returns the calendar months that overlap the period.
func (p Period) Months() []Period {
	var out []Period
	for m := time.Date(p.From.Year(), p.From.Month(), 1, 0, 0, 0, 0, time.UTC); m.Before(p.To); m = m.AddDate(0, 1, 0) {
		out = append(out, Period{From: m, To: m.AddDate(0, 1, 0)})
	}
	return out
}

// Posting is what the report reads.
type Posting interface {
	When() time.Time
	Acct() *account.Account
	Value() money.Amount
}

// Totals sums the postings of each account in the period, and returns the
// totals ordered by account name. Sums are rounded for display.
func Totals(postings []Posting, p Period) []Total {
	byAcct := map[*account.Account]*Total{}
	for _, x := range postings {
		if !p.Contains(x.When()) {
			continue
		}
		t := byAcct[x.Acct()]
		if t == nil {
			t = &Total{Account: x.Acct()}
			byAcct[x.Acct()] = t
		}
		t.Sum = t.Sum.Add(x.Value())
		t.Count++
	}
	out := make([]Total, 0, len(byAcct))
	for _, t := range byAcct {
		t.Sum = t.Sum.Round(2)
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Account.Name < out[j].Account.Name })
	return out
}

// Monthly returns the totals of every month of the period.
func Monthly(postings []Posting, p Period) map[Period][]Total {
	out := map[Period][]Total{}
	for _, m := range p.Months() {
		out[m] = Totals(postings, m)
	}
	return out
}

// Running returns the running balance of one account, one entry per
// posting, in date order.
func Running(postings []Posting, acct *account.Account) []money.Amount {
	var mine []Posting
	for _, x := range postings {
		if x.Acct() == acct {
			mine = append(mine, x)
		}
	}
	sort.SliceStable(mine, func(i, j int) bool { return mine[i].When().Before(mine[j].When()) })
	out := make([]money.Amount, len(mine))
	var bal money.Amount
	for i, x := range mine {
		bal = bal.Add(x.Value())
		out[i] = bal.Round(2)
	}
	return out
}
`

const vatGo = `package tax

import (
	"errors"
	"time"

	"github.com/dev/ledger/internal/money"
)

// ErrNoRate is returned for a category without a VAT rate on a date.
var ErrNoRate = errors.New("tax: no VAT rate for this category and date")

// Rate is a VAT rate valid from a date.
type Rate struct {
	Category string
	From     time.Time
	Percent  money.Amount // 19.00 is 19%
}

// Table holds the rates of every category, newest first.
type Table struct {
	rates map[string][]Rate
}

// Lookup returns the rate of a category on a date.
func (t *Table) Lookup(category string, on time.Time) (Rate, error) {
	for _, r := range t.rates[category] {
		if !on.Before(r.From) {
			return r, nil
		}
	}
	return Rate{}, ErrNoRate
}

// VAT returns the tax on a net amount: net × percent / 100, rounded to
// cents half away from zero, as the tax office computes it.
func VAT(base money.Amount, r Rate) money.Amount {
	rate := r.Percent.Div(money.New(100, 0))
	return base.Mul(rate).Round(2)
}

// Quarter sums the VAT of the postings of one quarter.
func Quarter(postings []Taxable, t *Table, year int, q int) (money.Amount, error) {
	from := time.Date(year, time.Month(3*(q-1)+1), 1, 0, 0, 0, 0, time.UTC)
	to := from.AddDate(0, 3, 0)
	var sum money.Amount
	for _, p := range postings {
		if p.Date.Before(from) || !p.Date.Before(to) || p.Exempt {
			continue
		}
		r, err := t.Lookup(p.Category, p.Date)
		if err != nil {
			return money.Amount{}, err
		}
		sum = sum.Add(VAT(p.Net, r))
	}
	return sum, nil
}

// Taxable is a posting subject to VAT.
type Taxable struct {
	Date     time.Time
	Category string
	Net      money.Amount
	Exempt   bool
}
`

const cacheTestGo = `package fx

import (
	"context"
	"sync"
	"testing"
	"time"
)

type fakeProvider struct {
	mu    sync.Mutex
	calls int
	rates map[string]Rate
}

func (f *fakeProvider) Rates(ctx context.Context) (map[string]Rate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	out := make(map[string]Rate, len(f.rates))
	for k, v := range f.rates {
		v.Value += float64(f.calls) / 1000
		out[k] = v
	}
	return out, nil
}

func TestCacheGet(t *testing.T) {
	p := &fakeProvider{rates: map[string]Rate{"EURUSD": {Pair: "EURUSD", Value: 1.08}}}
	c := New(t.Context(), p, time.Hour)
	waitFor(t, func() bool { _, ok := c.Get("EURUSD"); return ok })
	if _, ok := c.Get("GBPUSD"); ok {
		t.Error("GBPUSD found, want missing")
	}
}

func TestCacheRefresh(t *testing.T) {
	p := &fakeProvider{rates: map[string]Rate{"EURUSD": {Pair: "EURUSD", Value: 1.08}}}
	c := New(t.Context(), p, 5*time.Millisecond)
	first := get(t, c, "EURUSD")
	waitFor(t, func() bool { return get(t, c, "EURUSD").Value > first.Value })
}

// TestCacheConcurrent reads rates from many goroutines while the cache
// refreshes: run it with -race.
func TestCacheConcurrent(t *testing.T) {
	p := &fakeProvider{rates: map[string]Rate{"EURUSD": {Pair: "EURUSD", Value: 1.08}, "USDJPY": {Pair: "USDJPY", Value: 149.2}}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	c := New(ctx, p, time.Millisecond)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conv := &Converter{Cache: c}
			for j := 0; j < 2000; j++ {
				conv.Convert(100, "EURUSD")
			}
		}()
	}
	wg.Wait()
}

func get(t *testing.T, c *Cache, pair string) Rate {
	t.Helper()
	var r Rate
	waitFor(t, func() bool { var ok bool; r, ok = c.Get(pair); return ok })
	return r
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 2s")
		}
		time.Sleep(time.Millisecond)
	}
}
`

func importerTests() string {
	var b strings.Builder
	cases := []string{"comma", "semicolon", "quoted payee", "quoted comma", "BOM", "CRLF", "empty lines", "negative amount", "thousands separator", "ISO dates", "German dates", "unknown account", "duplicate line", "missing field", "extra field", "large file"}
	for i, tc := range []string{"TestImportCSV", "TestImportSemicolon", "TestImportQuoted", "TestImportBOM", "TestImportDuplicates", "TestImportLarge"} {
		fmt.Fprintf(&b, "=== RUN   %s\n", tc)
		for j, c := range cases {
			if (i+j)%3 == 0 {
				continue
			}
			fmt.Fprintf(&b, "=== RUN   %s/%s\n    csv_test.go:%d: %s: %d postings imported, %d accounts, first %s\n", tc, strings.ReplaceAll(c, " ", "_"), 40+j*6, c, 3+j*(i+1), 2+j%5, "2026-01-0"+fmt.Sprint(1+j%9))
		}
		fmt.Fprintf(&b, "--- PASS: %s (0.%02ds)\n", tc, 3+i*7)
		for j, c := range cases {
			if (i+j)%3 == 0 {
				continue
			}
			fmt.Fprintf(&b, "    --- PASS: %s/%s (0.00s)\n", tc, strings.ReplaceAll(c, " ", "_"))
		}
	}
	b.WriteString("PASS\nok  \tgithub.com/dev/ledger/internal/importer\t0.733s\n")
	return b.String()
}

const exportGo = `package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/dev/ledger/internal/journal"
	"github.com/dev/ledger/internal/report"
)

func newExportCmd() *cobra.Command {
	var (
		format, acct, cur string
		since, until      string
		output            string
	)
	cmd := &cobra.Command{
		Use:   "export [flags] JOURNAL",
		Short: "Export the postings of a journal",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			j, err := journal.Load(args[0])
			if err != nil {
				return err
			}
			from, to, err := period(since, until)
			if err != nil {
				return err
			}
			postings := j.Postings(journal.Filter{Account: acct, From: from, To: to})
			out := io.Writer(cmd.OutOrStdout())
			if output != "" {
				f, err := os.Create(output)
				if err != nil {
					return err
				}
				defer f.Close()
				out = f
			}
			return export(out, format, postings, acct, cur)
		},
	}
	cmd.Flags().StringVar(&format, "format", "csv", "output format: csv")
	cmd.Flags().StringVar(&acct, "account", "", "only postings of this account (and its children)")
	cmd.Flags().StringVar(&cur, "currency", "EUR", "currency of the amounts")
	cmd.Flags().StringVar(&since, "since", "", "first day, YYYY-MM-DD")
	cmd.Flags().StringVar(&until, "until", "", "day after the last, YYYY-MM-DD")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to this file instead of stdout")
	return cmd
}

func export(out io.Writer, format string, postings []report.Posting, acct, cur string) error {
	switch format {
	case "csv":
		return report.WriteCSV(out, postings)
	}
	return fmt.Errorf("unknown --format %q", format)
}

func period(since, until string) (time.Time, time.Time, error) {
	from, to := time.Time{}, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	var err error
	if since != "" {
		if from, err = time.Parse(time.DateOnly, since); err != nil {
			return from, to, fmt.Errorf("--since: %w", err)
		}
	}
	if until != "" {
		if to, err = time.Parse(time.DateOnly, until); err != nil {
			return from, to, fmt.Errorf("--until: %w", err)
		}
	}
	return from, to, nil
}
`

const csvExportGo = `package report

import (
	"encoding/csv"
	"io"
	"time"
)

// WriteCSV writes postings as CSV: date, account, payee, amount, balance.
func WriteCSV(w io.Writer, postings []Posting) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"date", "account", "payee", "amount", "balance"}); err != nil {
		return err
	}
	balances := map[string]string{}
	for _, p := range postings {
		name := p.Acct().Name
		bal := runningAdd(balances, name, p)
		rec := []string{
			p.When().Format(time.DateOnly),
			name,
			payeeOf(p),
			p.Value().Round(2).String(),
			bal,
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func payeeOf(p Posting) string {
	if pp, ok := p.(interface{ Payee() string }); ok {
		return pp.Payee()
	}
	return ""
}
`

func goldenCSV() string {
	var b strings.Builder
	b.WriteString("date,account,payee,amount,balance\n")
	payees := []string{"Bakery Müller", "Stadtwerke", "ACME GmbH salary", "Landlord", "Cafe Central", "Rail ticket", "Bookshop", "Pharmacy"}
	bal := 250000
	for i := 0; i < 19; i++ {
		amt := []int{-645, -8920, 410012, -125000, -380, -4590, -2399, -1275}[i%8]
		bal += amt
		fmt.Fprintf(&b, "2026-01-%02d,assets:checking,%s,%d.%02d,%d.%02d\n", 2+i, payees[i%8], amt/100, abs(amt%100), bal/100, abs(bal%100))
	}
	return b.String()
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// ofxGo is written with § for the backquotes of its struct tags.
const ofxGo = `package report

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/dev/ledger/internal/money"
)

// OFXOptions configure WriteOFX.
type OFXOptions struct {
	Account  string // the account the statement is for
	Currency string // ISO 4217, such as EUR
	Now      func() time.Time
}

type ofxDoc struct {
	XMLName xml.Name §xml:"OFX"§
	Status  ofxStatus §xml:"SIGNONMSGSRSV1>SONRS>STATUS"§
	DTServer string   §xml:"SIGNONMSGSRSV1>SONRS>DTSERVER"§
	Language string   §xml:"SIGNONMSGSRSV1>SONRS>LANGUAGE"§
	Stmt     ofxStmt  §xml:"BANKMSGSRSV1>STMTTRNRS>STMTRS"§
}

type ofxStatus struct {
	Code     int    §xml:"CODE"§
	Severity string §xml:"SEVERITY"§
}

type ofxStmt struct {
	Currency string     §xml:"CURDEF"§
	Account  string     §xml:"BANKACCTFROM>ACCTID"§
	Start    string     §xml:"BANKTRANLIST>DTSTART"§
	End      string     §xml:"BANKTRANLIST>DTEND"§
	Trans    []ofxTrans §xml:"BANKTRANLIST>STMTTRN"§
	Balance  string     §xml:"LEDGERBAL>BALAMT"§
	BalDate  string     §xml:"LEDGERBAL>DTASOF"§
}

type ofxTrans struct {
	Type   string §xml:"TRNTYPE"§
	Posted string §xml:"DTPOSTED"§
	Amount string §xml:"TRNAMT"§
	FITID  string §xml:"FITID"§
	Name   string §xml:"NAME"§
}

const ofxHeader = xml.Header + §<?OFX OFXHEADER="200" VERSION="220" SECURITY="NONE" OLDFILEUID="NONE" NEWFILEUID="NONE"?>§ + "\\n"

// WriteOFX writes postings as an OFX 2.2 bank statement.
func WriteOFX(w io.Writer, postings []Posting, o OFXOptions) error {
	if o.Now == nil {
		o.Now = time.Now
	}
	doc := ofxDoc{
		Status:   ofxStatus{Code: 0, Severity: "INFO"},
		DTServer: ofxTime(o.Now()),
		Language: "ENG",
		Stmt:     ofxStmt{Currency: o.Currency, Account: o.Account},
	}
	var bal money.Amount
	var first, last time.Time
	for i, p := range postings {
		t := ofxTrans{
			Type:     "DEBIT",
			Posted:   ofxTime(p.When()),
			Amount:   strconv.FormatFloat(p.Value().Float(), 'f', 2, 64),
			FITID:    fitID(p),
			Name:     truncate(payeeOf(p), 32),
		}
		if p.Value().Sign() > 0 {
			t.Type = "CREDIT"
		}
		doc.Stmt.Trans = append(doc.Stmt.Trans, t)
		bal = bal.Add(p.Value())
		if i == 0 || p.When().Before(first) {
			first = p.When()
		}
		if p.When().After(last) {
			last = p.When()
		}
	}
	doc.Stmt.Start, doc.Stmt.End = ofxTime(first), ofxTime(last)
	doc.Stmt.Balance, doc.Stmt.BalDate = bal.Round(2).String(), ofxTime(last)
	if _, err := io.WriteString(w, ofxHeader); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("ofx: %w", err)
	}
	_, err := io.WriteString(w, "\\n")
	return err
}

func ofxTime(t time.Time) string { return t.UTC().Format("20060102150405") }

// fitID is a stable id of a posting, so that re-exports deduplicate.
func fitID(p Posting) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s|%s|%s|%s", p.When().Format(time.RFC3339), p.Acct().Name, payeeOf(p), p.Value())))
	return hex.EncodeToString(h[:12])
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}
`

const ofxTestGo = `package report

import (
	"bytes"
	"flag"
	"os"
	"testing"
	"time"

	"github.com/dev/ledger/internal/journal"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestWriteOFX(t *testing.T) {
	j, err := journal.Load("testdata/export.input.ledger")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	now := func() time.Time { return time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC) }
	if err := WriteOFX(&buf, j.Postings(journal.Filter{Account: "assets:checking"}), OFXOptions{Account: "DE02120300000000202051", Currency: "EUR", Now: now}); err != nil {
		t.Fatal(err)
	}
	golden := "testdata/export.golden.ofx"
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("OFX differs from %s (run with -update after checking the diff):\\n%s", golden, buf.String())
	}
}

func TestOFXFITIDStable(t *testing.T) {
	j, err := journal.Load("testdata/export.input.ledger")
	if err != nil {
		t.Fatal(err)
	}
	ps := j.Postings(journal.Filter{})
	seen := map[string]bool{}
	for _, p := range ps {
		id := fitID(p)
		if seen[id] {
			t.Fatalf("duplicate FITID %s", id)
		}
		seen[id] = true
		if fitID(p) != id {
			t.Fatal("FITID not stable")
		}
	}
}
`

func ofxBuildError() string {
	return `# github.com/dev/ledger/internal/report [github.com/dev/ledger/internal/report.test]
internal/report/ofx.go:71:47: p.Value().Float undefined (type money.Amount has no field or method Float)
FAIL	github.com/dev/ledger/internal/report [build failed]
FAIL
`
}

func reportTests() string {
	var b strings.Builder
	b.WriteString("ok  \tgithub.com/dev/ledger/internal/report\t0.061s\n")
	for _, tc := range []string{"TestMonthlyTotals", "TestRunningBalance", "TestReportSince", "TestReportCSV", "TestWriteOFX", "TestOFXFITIDStable"} {
		fmt.Fprintf(&b, "=== RUN   %s\n--- PASS: %s (0.00s)\n", tc, tc)
	}
	b.WriteString("PASS\nok  \tgithub.com/dev/ledger/internal/report\t0.058s\n")
	return b.String()
}

func ofxSample() string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<?OFX OFXHEADER="200" VERSION="220" SECURITY="NONE" OLDFILEUID="NONE" NEWFILEUID="NONE"?>
<OFX>
  <SIGNONMSGSRSV1>
    <SONRS>
      <STATUS>
        <CODE>0</CODE>
        <SEVERITY>INFO</SEVERITY>
      </STATUS>
      <DTSERVER>20260302112204</DTSERVER>
      <LANGUAGE>ENG</LANGUAGE>
    </SONRS>
  </SIGNONMSGSRSV1>
  <BANKMSGSRSV1>
    <STMTTRNRS>
      <STMTRS>
        <CURDEF>EUR</CURDEF>
        <BANKACCTFROM>
          <ACCTID>assets:checking</ACCTID>
        </BANKACCTFROM>
        <BANKTRANLIST>
          <DTSTART>20260102000000</DTSTART>
          <DTEND>20260107000000</DTEND>
`)
	payees := []string{"Bakery Müller", "Stadtwerke", "ACME GmbH salary", "Landlord", "Cafe Central", "Rail ticket"}
	amts := []string{"-6.45", "-89.20", "4100.12", "-1250.00", "-3.80", "-45.90"}
	for i := range payees {
		typ := "DEBIT"
		if amts[i][0] != '-' {
			typ = "CREDIT"
		}
		fmt.Fprintf(&b, "          <STMTTRN>\n            <TRNTYPE>%s</TRNTYPE>\n            <DTPOSTED>202601%02d000000</DTPOSTED>\n            <TRNAMT>%s</TRNAMT>\n            <FITID>%x</FITID>\n            <NAME>%s</NAME>\n          </STMTTRN>\n", typ, 2+i, amts[i], 0x5a17c3e9b2d4+i*7919, payees[i])
	}
	b.WriteString("        </BANKTRANLIST>\n        <LEDGERBAL>\n          <BALAMT>2704.77</BALAMT>\n          <DTASOF>20260107000000</DTASOF>\n        </LEDGERBAL>\n      </STMTRS>\n    </STMTTRNRS>\n  </BANKMSGSRSV1>\n</OFX>\n")
	return b.String()
}
