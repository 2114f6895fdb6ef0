// Package mixtext builds the deterministic mixed text that the token-counter
// benchmarks use: paragraphs drawn from a small committed corpus (English
// prose, this project's spec, Go/Python/JavaScript code, an agent transcript
// in JSON, terminal output, CSV with CRLF line endings, base64/hex blobs,
// long whitespace and digit runs, CJK, many other scripts, and emoji with
// ZWJ sequences and skin tones).
//
// The same size always gives the same text, on every platform and Go
// version: the paragraph order comes from a fixed-seed SplitMix64 generator,
// not from math/rand. bench/peers.sh feeds exactly this text to agentctx and
// to the JavaScript tokenizers, and the tokens package's BenchmarkCount uses
// it too.
package mixtext

import (
	"embed"
	"io/fs"
	"sort"
	"strings"
	"unicode/utf8"
)

// DefaultSize is the size of the benchmark text: 1 MiB.
const DefaultSize = 1 << 20

//go:embed corpus
var corpus embed.FS

// A File is one corpus file.
type File struct {
	Name string // base name, such as "prose_en.txt"
	Text string
}

// Corpus returns the corpus files sorted by name.
func Corpus() []File {
	var files []File
	err := fs.WalkDir(corpus, "corpus", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := corpus.ReadFile(path)
		if err != nil {
			return err
		}
		files = append(files, File{Name: d.Name(), Text: string(b)})
		return nil
	})
	if err != nil {
		panic(err) // embedded files cannot fail to read
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files
}

// weights says how often a paragraph of each file is drawn; files not listed
// have weight 1. The mix leans on what agents send: prose, code, JSON and
// tool output.
var weights = map[string]int{
	"prose_en.txt":     6,
	"spec.md":          6,
	"code_go.txt":      6,
	"code_py.txt":      4,
	"code_js.txt":      4,
	"transcript.json":  5,
	"terminal.txt":     4,
	"prose_mixed.txt":  3,
	"data_crlf.csv":    2,
	"cjk.txt":          2,
	"multilingual.txt": 2,
	"emoji_chat.txt":   2,
	"blobs.txt":        1,
	"whitespace.txt":   1,
}

// Build returns size bytes of mixed text (a little less when the last
// character would not fit: the result is always valid UTF-8).
func Build(size int) string {
	var pool []string // paragraphs, repeated by weight
	for _, f := range Corpus() {
		w, ok := weights[f.Name]
		if !ok {
			w = 1
		}
		paras := paragraphs(f.Text)
		for i := 0; i < w; i++ {
			pool = append(pool, paras...)
		}
	}
	rng := splitMix64(0x6167656e74637478) // "agentctx"
	var b strings.Builder
	b.Grow(size + 4096)
	for b.Len() < size {
		b.WriteString(pool[rng.next()%uint64(len(pool))])
	}
	s := b.String()[:size]
	for len(s) > 0 {
		if r, n := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || n != 1 {
			break
		}
		s = s[:len(s)-1] // a cut character
	}
	return s
}

// paragraphs splits text after each blank line, keeping every byte, so the
// paragraphs keep their own line endings and white space.
func paragraphs(text string) []string {
	var out []string
	for text != "" {
		i := strings.Index(text, "\n\n")
		if i < 0 {
			out = append(out, text)
			break
		}
		out = append(out, text[:i+2])
		text = text[i+2:]
	}
	return out
}

type splitMix64 uint64

func (s *splitMix64) next() uint64 {
	*s += 0x9E3779B97F4A7C15
	z := uint64(*s)
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}
