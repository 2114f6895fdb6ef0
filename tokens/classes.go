package tokens

import (
	_ "embed" // for the character class table
)

// classesBin is the character class table (see internal/gen): one flag byte
// per code point, as tiktoken's regex engine classifies it (Unicode 16.0.0).
// It is embedded read-only data and never changes.
//
//go:embed data/classes.bin
var classesBin string

// Flag bits of a character class. They must match internal/gen.
const (
	cL     = 1 << iota // \p{L}
	cN                 // \p{N}
	cS                 // \s (White_Space)
	cU                 // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]: o200k's "upper" letters
	cW                 // [\p{Ll}\p{Lm}\p{Lo}\p{M}]: o200k's "lower" letters
	cNL                // '\r' or '\n'
	cSlash             // '/'
	cApos              // '\''
)

const (
	classMagic  = "agtkcls1"
	stage1Len   = 0x1100 // one entry per 256 code points up to U+10FFFF
	classHeader = len(classMagic) + stage1Len
)

// classes classifies the characters of valid UTF-8 text. Its two strings are
// slices of the embedded table.
type classes struct {
	stage1 string // block number of code points c>>8
	stage2 string // flags: stage2[stage1[c>>8]<<8 | c&0xff]; block 0 is U+0000..U+00FF
}

func loadClasses() (classes, error) {
	if len(classesBin) < classHeader+256 || classesBin[:len(classMagic)] != classMagic {
		return classes{}, errCorrupt("classes.bin")
	}
	c := classes{stage1: classesBin[len(classMagic):classHeader], stage2: classesBin[classHeader:]}
	for i := 0; i < stage1Len; i++ {
		if (int(c.stage1[i])+1)<<8 > len(c.stage2) {
			return classes{}, errCorrupt("classes.bin")
		}
	}
	return c, nil
}

// at returns the class flags of the character starting at s[i] and its length
// in bytes. s must be valid UTF-8 and i < len(s) the start of a character.
func (t *classes) at(s string, i int) (uint8, int) {
	if b := s[i]; b < 0x80 {
		return t.stage2[b], 1
	}
	return t.multi(s, i)
}

// multi is at for a multi-byte character.
func (t *classes) multi(s string, i int) (uint8, int) {
	b0 := uint32(s[i])
	var cp uint32
	var n int
	switch {
	case b0 < 0xE0:
		cp = (b0&0x1F)<<6 | uint32(s[i+1]&0x3F)
		n = 2
	case b0 < 0xF0:
		cp = (b0&0x0F)<<12 | uint32(s[i+1]&0x3F)<<6 | uint32(s[i+2]&0x3F)
		n = 3
	default:
		cp = (b0&0x07)<<18 | uint32(s[i+1]&0x3F)<<12 | uint32(s[i+2]&0x3F)<<6 | uint32(s[i+3]&0x3F)
		n = 4
	}
	return t.rune(cp), n
}

// rune returns the class flags of code point cp (cp <= 0x10FFFF).
func (t *classes) rune(cp uint32) uint8 {
	return t.stage2[uint32(t.stage1[cp>>8])<<8|cp&0xFF]
}
