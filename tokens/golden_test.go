package tokens

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/bench/mixtext"
)

// reference is one line of testdata/reference.jsonl.gz, written by
// bench/js/reference.mjs from OpenAI's tiktoken (npm tiktoken 1.0.22, the
// WASM build of the Rust core): an input and its encode_ordinary results.
type reference struct {
	Kind      string `json:"kind"`
	Text      string `json:"text"`
	B64       string `json:"b64"` // input with invalid UTF-8, base64
	O200k     int    `json:"o200k"`
	Cl100k    int    `json:"cl100k"`
	O200kIDs  []int  `json:"o200k_ids"`
	Cl100kIDs []int  `json:"cl100k_ids"`
	Size      int    `json:"size"`   // kind "mixed"
	SHA256    string `json:"sha256"` // kind "mixed"
}

func loadReference(t testing.TB, path string) []reference {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var refs []reference
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var r reference
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("reference line %d: %v", len(refs)+1, err)
		}
		if r.B64 != "" {
			b, err := base64.StdEncoding.DecodeString(r.B64)
			if err != nil {
				t.Fatal(err)
			}
			r.Text = string(b)
		}
		refs = append(refs, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return refs
}

// TestReference checks Count and Encode against tiktoken on every input of
// testdata/reference.jsonl.gz, for both encodings. It reports each mismatch
// and a summary.
func TestReference(t *testing.T) {
	refs := loadReference(t, "testdata/reference.jsonl.gz")
	if len(refs) < 5000 {
		t.Fatalf("only %d reference inputs", len(refs))
	}
	checkReference(t, refs)
}

// TestReferenceFile checks a larger reference file made with
// bench/js/reference.mjs (REF_SEED, REF_SCALE) when
// AGENTCTX_TOKENS_REFERENCE names it.
func TestReferenceFile(t *testing.T) {
	path := os.Getenv("AGENTCTX_TOKENS_REFERENCE")
	if path == "" {
		t.Skip("AGENTCTX_TOKENS_REFERENCE not set")
	}
	checkReference(t, loadReference(t, path))
}

func checkReference(t *testing.T, refs []reference) {
	for _, enc := range []*Encoding{O200kBase(), Cl100kBase()} {
		t.Run(enc.Name(), func(t *testing.T) {
			t.Parallel()
			var inputs, bytes, withIDs, invalid, mismatches int
			kinds := map[string]int{}
			for i, r := range refs {
				want, wantIDs := r.O200k, r.O200kIDs
				if enc.Name() == Cl100kBaseName {
					want, wantIDs = r.Cl100k, r.Cl100kIDs
				}
				text := r.Text
				if r.Kind == "mixed" {
					text = mixtext.Build(r.Size)
					if sum := sha256.Sum256([]byte(text)); hex.EncodeToString(sum[:]) != r.SHA256 {
						t.Fatalf("mixtext.Build(%d) changed since the reference was made: run bench/gen-reference.sh", r.Size)
					}
				}
				inputs++
				bytes += len(text)
				kinds[strings.SplitN(r.Kind, ":", 2)[0]]++
				if r.B64 != "" {
					invalid++
				}
				if got := enc.Count(text); got != want {
					mismatches++
					if mismatches <= 20 {
						t.Errorf("#%d %s: Count(%s) = %d, tiktoken %d", i, r.Kind, quoteShort(text), got, want)
					}
					continue
				}
				if wantIDs == nil {
					continue
				}
				withIDs++
				if got := enc.Encode(text); !slices.Equal(got, wantIDs) {
					mismatches++
					if mismatches <= 20 {
						t.Errorf("#%d %s: Encode(%s)\n got %v\nwant %v", i, r.Kind, quoteShort(text), got, wantIDs)
					}
				}
			}
			t.Logf("%s: %d inputs (%v; %d with invalid UTF-8), %d bytes, ids compared for %d, %d mismatches",
				enc.Name(), inputs, kinds, invalid, bytes, withIDs, mismatches)
		})
	}
}

func quoteShort(s string) string {
	if len(s) > 200 {
		return fmt.Sprintf("%q...(%d bytes)", s[:200], len(s))
	}
	return fmt.Sprintf("%q", s)
}
