package rawjson

import (
	"strings"
	"testing"
)

// BenchmarkStringEnd scans a 1 MB string of terminal output (an escaped
// newline every 48 bytes), the bulk of an agent's request body.
func BenchmarkStringEnd(b *testing.B) {
	line := `drwxr-xr-x  2 root root 4096 Nov 23 file.go ok\n`
	data := []byte(`"` + strings.Repeat(line, (1<<20)/len(line)) + `"`)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if end, err := stringEnd(data, 0); err != nil || end != len(data) {
			b.Fatal(end, err)
		}
	}
}
