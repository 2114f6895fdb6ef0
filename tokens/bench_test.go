package tokens

import (
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/agentctx/agentctx/bench/mixtext"
)

var mixed = sync.OnceValue(func() string { return mixtext.Build(mixtext.DefaultSize) })

// benchCount reports, besides ns/op, MB/s and allocations, tokens/s and
// cpu-ns/op: the CPU time of the benchmark's thread per operation, which a
// busy shared machine disturbs less than wall time.
func benchCount(b *testing.B, enc *Encoding, text string) {
	n := enc.Count(text)
	benchText(b, text, n, func() {
		if enc.Count(text) != n {
			b.Fatal("count changed")
		}
	})
}

func benchText(b *testing.B, text string, tokens int, op func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	cpu0, cpuOK := threadCPU()
	for b.Loop() {
		op()
	}
	b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
	if cpu1, ok := threadCPU(); ok && cpuOK {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkCount counts the 1 MiB mixed text of bench/mixtext (the text
// bench/peers.sh gives the JavaScript tokenizers).
func BenchmarkCount(b *testing.B) {
	for _, enc := range []*Encoding{O200kBase(), Cl100kBase()} {
		b.Run(enc.Name(), func(b *testing.B) { benchCount(b, enc, mixed()) })
	}
}

// BenchmarkEncode is BenchmarkCount with token ids.
func BenchmarkEncode(b *testing.B) {
	for _, enc := range []*Encoding{O200kBase(), Cl100kBase()} {
		b.Run(enc.Name(), func(b *testing.B) {
			text := mixed()
			benchText(b, text, enc.Count(text), func() { enc.Encode(text) })
		})
	}
}

// BenchmarkCountKinds counts texts of one kind each, to find slow paths.
func BenchmarkCountKinds(b *testing.B) {
	kinds := map[string]string{
		"english": strings.Repeat("The quick brown fox jumps over the lazy dog, doesn't it? ", 2000),
		"code":    corpusFile(b, "code_go.txt"),
		"json":    corpusFile(b, "transcript.json"),
		"cjk":     corpusFile(b, "cjk.txt"),
		"spaces":  strings.Repeat(" ", 100000) + "x",
		"letters": strings.Repeat("a", 100000),
		"digits":  strings.Repeat("7", 100000),
		"emoji":   strings.Repeat("👍🏽🧑‍💻 ", 5000),
	}
	for _, name := range []string{"english", "code", "json", "cjk", "spaces", "letters", "digits", "emoji"} {
		b.Run(name, func(b *testing.B) { benchCount(b, O200kBase(), kinds[name]) })
	}
}

func corpusFile(b *testing.B, name string) string {
	for _, f := range mixtext.Corpus() {
		if f.Name == name {
			return f.Text
		}
	}
	b.Fatalf("no corpus file %s", name)
	return ""
}

// BenchmarkLoad builds an encoding from the embedded data, as the first call
// of O200kBase or Cl100kBase in a process does.
func BenchmarkLoad(b *testing.B) {
	for _, c := range []struct {
		name  string
		bin   string
		o200k bool
	}{{O200kBaseName, o200kBin, true}, {Cl100kBaseName, cl100kBin, false}} {
		b.Run(c.name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ReportAllocs()
			cpu0, cpuOK := threadCPU()
			for b.Loop() {
				if _, err := newEncoding(c.name, c.bin, c.o200k); err != nil {
					b.Fatal(err)
				}
			}
			if cpu1, ok := threadCPU(); ok && cpuOK {
				b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
			}
		})
	}
}
