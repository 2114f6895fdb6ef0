// Command gen converts the inputs of package tokens into the compact binary
// files that package embeds. It runs at development time only (go generate
// in tokens/); nothing here is linked into a program that uses tokens.
//
// Vocabularies: OpenAI's o200k_base.tiktoken and cl100k_base.tiktoken, taken
// from the MIT-licensed Go module github.com/pkoukk/tiktoken-go-loader
// v0.0.2 (directory assets/), which embeds OpenAI's files unchanged. The
// module is located with "go mod download -json", so it never becomes a
// dependency in go.mod. Each file is checked against the SHA-256 that
// OpenAI's tiktoken (tiktoken_ext/openai_public.py) pins before it is used.
//
// Output format of data/<name>.bin (all integers little-endian):
//
//	magic   "agtkvoc1"         8 bytes
//	n       uint32             number of tokens; token ids are 0..n-1
//	size    uint32             total bytes of all tokens
//	lens    [n]uint8           byte length of token i
//	bytes   [size]byte         the tokens' bytes, concatenated in id order
//	pad     [8]byte            zeros, so that 8-byte loads never run past the end
//
// Character classes: unicode_classes.json (written by
// bench/js/unicode-probe.mjs from the Rust regex engine inside tiktoken's
// WASM build) becomes data/classes.bin, a two-stage table with one flag byte
// per code point:
//
//	magic   "agtkcls1"         8 bytes
//	stage1  [0x1100]uint8      block number of code points c>>8
//	stage2  [blocks][256]uint8 flags of code point c: stage2[stage1[c>>8]][c&0xff]
//
// Block 0 holds U+0000..U+00FF, so the flags of an ASCII byte b are
// stage2[b].
package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

const (
	loaderModule  = "github.com/pkoukk/tiktoken-go-loader"
	loaderVersion = "v0.0.2"
)

// OpenAI's pinned hashes (tiktoken_ext/openai_public.py).
var vocabs = []struct{ name, sha256 string }{
	{"o200k_base", "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"},
	{"cl100k_base", "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"},
}

// Flag bits of data/classes.bin. They must match the constants in
// tokens/classes.go (TestClassTable checks the table against the JSON).
const (
	cL     = 1 << iota // \p{L}
	cN                 // \p{N}
	cS                 // \s (White_Space)
	cU                 // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	cW                 // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
	cNL                // \r or \n
	cSlash             // '/'
	cApos              // '\''
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("gen: ")
	srcDir := flag.String("src", "", "directory holding <name>.tiktoken (default: the module cache copy of "+loaderModule+"@"+loaderVersion+")")
	classes := flag.String("classes", "internal/gen/unicode_classes.json", "character classes probed from tiktoken")
	out := flag.String("out", "data", "output directory")
	flag.Parse()

	if *srcDir == "" {
		*srcDir = moduleAssets()
	}
	for _, v := range vocabs {
		if err := convertVocab(filepath.Join(*srcDir, v.name+".tiktoken"), v.sha256, filepath.Join(*out, v.name+".bin")); err != nil {
			log.Fatal(err)
		}
	}
	if err := convertClasses(*classes, filepath.Join(*out, "classes.bin")); err != nil {
		log.Fatal(err)
	}
}

// moduleAssets downloads (or finds in the module cache) the loader module and
// returns its assets directory.
func moduleAssets() string {
	cmd := exec.Command("go", "mod", "download", "-json", loaderModule+"@"+loaderVersion)
	cmd.Stderr = os.Stderr
	outb, err := cmd.Output()
	if err != nil {
		log.Fatalf("go mod download %s@%s: %v", loaderModule, loaderVersion, err)
	}
	var info struct{ Dir string }
	if err := json.Unmarshal(outb, &info); err != nil || info.Dir == "" {
		log.Fatalf("go mod download: unexpected output %q", outb)
	}
	return filepath.Join(info.Dir, "assets")
}

func convertVocab(src, wantSum, dst string) error {
	raw, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != wantSum {
		return fmt.Errorf("%s: sha256 %x, want %s", src, sum, wantSum)
	}
	var toks [][]byte
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		b64, rankStr, ok := strings.Cut(line, " ")
		if !ok {
			return fmt.Errorf("%s: bad line %q", src, line)
		}
		tok, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return fmt.Errorf("%s: %v", src, err)
		}
		rank, err := strconv.Atoi(rankStr)
		if err != nil {
			return fmt.Errorf("%s: %v", src, err)
		}
		if rank != len(toks) {
			return fmt.Errorf("%s: rank %d at line %d: ranks are not dense", src, rank, len(toks))
		}
		if len(tok) == 0 || len(tok) > 255 {
			return fmt.Errorf("%s: token %d has %d bytes", src, rank, len(tok))
		}
		toks = append(toks, tok)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	seen := make(map[string]bool, len(toks))
	size := 0
	for _, t := range toks {
		if seen[string(t)] {
			return fmt.Errorf("%s: duplicate token %q", src, t)
		}
		seen[string(t)] = true
		size += len(t)
	}
	for b := 0; b < 256; b++ {
		if !seen[string([]byte{byte(b)})] {
			return fmt.Errorf("%s: byte %#x is not a token", src, b)
		}
	}
	var buf bytes.Buffer
	buf.WriteString("agtkvoc1")
	buf.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(toks))))
	buf.Write(binary.LittleEndian.AppendUint32(nil, uint32(size)))
	for _, t := range toks {
		buf.WriteByte(byte(len(t)))
	}
	for _, t := range toks {
		buf.Write(t)
	}
	buf.Write(make([]byte, 8))
	log.Printf("%s: %d tokens, %d token bytes -> %s (%d bytes)", filepath.Base(src), len(toks), size, dst, buf.Len())
	return os.WriteFile(dst, buf.Bytes(), 0o644)
}

func convertClasses(src, dst string) error {
	raw, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return err
	}
	ranges := func(name string) [][2]int {
		var r [][2]int
		if err := json.Unmarshal(probe[name], &r); err != nil || len(r) == 0 {
			log.Fatalf("%s: class %s missing or bad: %v", src, name, err)
		}
		return r
	}
	flags := make([]byte, 0x110000)
	for _, c := range []struct {
		name string
		bit  byte
	}{{"L", cL}, {"N", cN}, {"S", cS}, {"U", cU}, {"W", cW}} {
		for _, r := range ranges(c.name) {
			for cp := r[0]; cp <= r[1]; cp++ {
				flags[cp] |= c.bit
			}
		}
	}
	flags['\r'] |= cNL
	flags['\n'] |= cNL
	flags['/'] |= cSlash
	flags['\''] |= cApos

	// The pre-tokenizers match the (?i:'s|'t|'re|'ve|'m|'ll|'d) letters with
	// hand-written code: ASCII both cases, plus U+017F for s. Check that this
	// is exactly what the regex engine does.
	for _, l := range "strevmld" {
		want := [][2]int{{int(l) - 32, int(l) - 32}, {int(l), int(l)}}
		if l == 's' {
			want = append(want, [2]int{0x17f, 0x17f})
		}
		if got := ranges("fold_" + string(l)); !slices.Equal(got, want) {
			return fmt.Errorf("%s: (?i:%c) matches %v, the pre-tokenizers assume %v", src, l, got, want)
		}
	}

	var stage1 [0x1100]byte
	var blocks [][]byte
	index := map[string]int{}
	for b := 0; b < 0x1100; b++ {
		blk := flags[b<<8 : (b+1)<<8]
		i, ok := index[string(blk)]
		if !ok {
			i = len(blocks)
			if i > 255 {
				return fmt.Errorf("more than 256 distinct blocks")
			}
			index[string(blk)] = i
			blocks = append(blocks, blk)
		}
		stage1[b] = byte(i)
	}
	var buf bytes.Buffer
	buf.WriteString("agtkcls1")
	buf.Write(stage1[:])
	for _, blk := range blocks {
		buf.Write(blk)
	}
	log.Printf("classes: %d distinct blocks -> %s (%d bytes)", len(blocks), dst, buf.Len())
	return os.WriteFile(dst, buf.Bytes(), 0o644)
}
