package tokens

import (
	_ "embed" // for the vocabularies
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// A Counter counts the tokens of a text.
//
// Count must be safe for concurrent use by multiple goroutines and pure: the
// result depends only on text (the same text always gives the same count),
// and counting has no effect that a caller can observe. Count("") is 0.
type Counter interface {
	Count(text string) int
}

// ErrUnknownEncoding is returned (wrapped) by Get for an encoding name it does
// not know. Check it with errors.Is.
var ErrUnknownEncoding = errors.New("tokens: unknown encoding")

// Names of the encodings Get accepts.
const (
	O200kBaseName  = "o200k_base"
	Cl100kBaseName = "cl100k_base"
)

// Vocabularies, converted from OpenAI's .tiktoken files by internal/gen. They
// are embedded read-only data.
var (
	//go:embed data/o200k_base.bin
	o200kBin string
	//go:embed data/cl100k_base.bin
	cl100kBin string
)

// The encodings are built from the embedded data on first use, once per
// process. These two values are the text counter's only package-level
// state: each holds a sync.Once and the immutable *Encoding it produces.
var (
	o200k  = lazyEncoding{name: O200kBaseName, bin: &o200kBin, o200k: true}
	cl100k = lazyEncoding{name: Cl100kBaseName, bin: &cl100kBin}
)

type lazyEncoding struct {
	name  string
	bin   *string
	o200k bool

	once sync.Once
	enc  *Encoding
}

func (l *lazyEncoding) get() *Encoding {
	l.once.Do(func() {
		enc, err := newEncoding(l.name, *l.bin, l.o200k)
		if err != nil {
			// The data is embedded and checked by the tests: a failure here
			// is a broken build, not a run-time condition.
			panic(err)
		}
		l.enc = enc
	})
	return l.enc
}

// An Encoding is a byte pair encoding with a pre-tokenizer: o200k_base or
// cl100k_base. It counts and encodes exactly like OpenAI's tiktoken
// encode_ordinary: special-token text such as "<|endoftext|>" is ordinary
// text.
//
// An Encoding is immutable and safe for concurrent use. Get one with
// [O200kBase], [Cl100kBase] or [Get]; the zero value is not usable.
//
// Text that is not valid UTF-8 is counted and encoded as if each invalid byte
// were U+FFFD, the replacement character, which is what ranging over the
// string yields and what encoding/json sends for it.
type Encoding struct {
	name  string
	o200k bool // which pre-tokenizer
	cls   classes
	voc   *vocab
	pool  sync.Pool // of *scratch for long pieces
}

var _ Counter = (*Encoding)(nil)

func newEncoding(name, bin string, o200k bool) (*Encoding, error) {
	cls, err := loadClasses()
	if err != nil {
		return nil, err
	}
	voc, err := loadVocab(name, bin)
	if err != nil {
		return nil, err
	}
	e := &Encoding{name: name, o200k: o200k, cls: cls, voc: voc}
	e.pool.New = func() any { return new(scratch) }
	return e, nil
}

func errCorrupt(what string) error {
	return fmt.Errorf("tokens: embedded data %s is corrupt", what)
}

// O200kBase returns the o200k_base encoding (GPT-4o, GPT-4.1, GPT-5, o1, o3,
// o4-mini). The first call in a process builds it from the embedded
// vocabulary, which takes about 10 ms; later calls return the same
// *Encoding.
func O200kBase() *Encoding { return o200k.get() }

// Cl100kBase returns the cl100k_base encoding (GPT-4, GPT-3.5-turbo,
// text-embedding-3). Like [O200kBase] it is built once, on first use.
func Cl100kBase() *Encoding { return cl100k.get() }

// Get returns the encoding with the given name: "o200k_base" or
// "cl100k_base". Any other name gives an error that wraps
// [ErrUnknownEncoding].
func Get(name string) (*Encoding, error) {
	switch name {
	case O200kBaseName:
		return O200kBase(), nil
	case Cl100kBaseName:
		return Cl100kBase(), nil
	}
	return nil, fmt.Errorf("%w %q (known: %s, %s)", ErrUnknownEncoding, name, O200kBaseName, Cl100kBaseName)
}

// Name returns the encoding's name, such as "o200k_base".
func (e *Encoding) Name() string { return e.name }

// Count returns the number of tokens of text, equal to
// len(e.Encode(text)). It does not allocate, except to replace invalid
// UTF-8.
//
// Count and Encode panic if text holds a single pre-tokenizer piece of
// 2 GiB or more, such as 2 GiB of spaces and nothing else.
func (e *Encoding) Count(text string) int {
	return e.encode(text, nil)
}

// Encode returns the token ids of text, equal to tiktoken's
// encode_ordinary(text).
func (e *Encoding) Encode(text string) []int {
	// Text averages 3 to 4.5 bytes per token (except CJK and emoji).
	ids := make([]int, 0, len(text)/3+8)
	e.encode(text, &ids)
	return ids
}

// encode counts the tokens of text and appends their ids to ids when ids is
// not nil.
func (e *Encoding) encode(text string, ids *[]int) int {
	if !utf8.ValidString(text) {
		text = replaceInvalid(text)
	}
	v := e.voc
	count := 0
	var sc *scratch
	for i := 0; i < len(text); {
		var j int
		if e.o200k {
			j = e.cls.splitO200k(text, i)
		} else {
			j = e.cls.splitCL100k(text, i)
		}
		if r := v.rank(text, i, j-i); r != noRank { // the piece is a token (always, for one byte)
			count++
			if ids != nil {
				*ids = append(*ids, int(r))
			}
		} else if j-i <= smallPiece {
			count += v.mergeSmall(text, i, j, ids)
		} else {
			if sc == nil {
				sc = e.pool.Get().(*scratch)
			}
			count += v.mergeLarge(text, i, j, sc, ids)
		}
		i = j
	}
	if sc != nil && cap(sc.next) <= maxPooledPiece {
		e.pool.Put(sc) // scratch for a huge piece is left to the GC instead
	}
	return count
}

// maxPooledPiece is the longest piece whose merge scratch (20 to 28 bytes
// per byte of the piece) goes back to the pool.
const maxPooledPiece = 256 << 10

// replaceInvalid returns s with every byte that is not part of a valid UTF-8
// encoding replaced by U+FFFD, as string([]rune(s)) would.
func replaceInvalid(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, r := range s {
		b.WriteRune(r)
	}
	return b.String()
}
