package driver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"unicode/utf8"
	"unsafe"

	"github.com/agentctx/agentctx/internal/base/runes"
)

// A Stream is an artifact whose content is written by a function rather
// than held whole, for content of tens of MB (a compaction's archive).
// Info is the artifact's description, measured (MeasureStream); Write
// writes the content and must write the same bytes at every call.
type Stream struct {
	Info
	Write func(io.Writer) error
}

// StreamWriter is a Store that writes a Stream's content as it comes
// (into a file, for instance) instead of holding it whole. PutStream is
// Put of the artifact the Stream describes; the description it is given
// is measured, and the portable store checks the content written against
// it (a Write that writes other bytes fails, and nothing is stored).
type StreamWriter interface {
	PutStream(ctx context.Context, namespace string, s Stream) (Info, error)
}

// ErrStreamChanged is returned when a Stream's Write wrote other bytes
// than those it was measured on.
var ErrStreamChanged = errors.New("stream wrote other content than measured")

// MeasureStream returns info as Measure describes an artifact whose
// content is what write writes (Type defaulted, Created in UTC, Metadata
// copied, and the content's Chars, Lines, Bytes and SHA256), calling
// write once, without holding the content.
func MeasureStream(info Info, write func(io.Writer) error) (Info, error) {
	m := Measure(Artifact{Info: info})
	var w measurer
	w.reset()
	if err := write(&w); err != nil {
		return Info{}, err
	}
	w.describe(&m.Info)
	return m.Info, nil
}

// CheckedStream returns s with a Write that fails with ErrStreamChanged,
// once it has written, when what it wrote is not what s.Info describes.
func CheckedStream(s Stream) Stream {
	write := s.Write
	want := s.Info
	s.Write = func(dst io.Writer) error {
		var m measurer
		m.reset()
		if err := write(io.MultiWriter(dst, &m)); err != nil {
			return err
		}
		var got Info
		m.describe(&got)
		if got.Bytes != want.Bytes || got.SHA256 != want.SHA256 || got.Chars != want.Chars || got.Lines != want.Lines {
			return fmt.Errorf("%w: %d bytes (sha256 %s), measured %d (%s)", ErrStreamChanged, got.Bytes, got.SHA256, want.Bytes, want.SHA256)
		}
		return nil
	}
	return s
}

// Materialize returns the artifact s describes with its content whole,
// for a store that does not write streams; the content is checked
// against the description as CheckedStream checks it.
func Materialize(s Stream) (Artifact, error) {
	buf := &appender{b: make([]byte, 0, s.Bytes)}
	if err := CheckedStream(s).Write(buf); err != nil {
		return Artifact{}, err
	}
	b := buf.b // never written again: the content is these bytes, not a copy
	return Artifact{Info: s.Info, Content: unsafe.String(unsafe.SliceData(b), len(b))}, nil
}

// appender is an io.Writer appending to b (sized once by the caller; a
// bytes.Buffer grown to a size allocates it twice in a race build).
type appender struct{ b []byte }

func (a *appender) Write(p []byte) (int, error) {
	a.b = append(a.b, p...)
	return len(p), nil
}

// measurer measures what is written to it as Measure measures a string:
// its runes counted as utf8.RuneCountInString counts them (a sequence cut
// between two writes is counted once whole), its lines as CountLines.
type measurer struct {
	h       hash.Hash
	n       int
	runes   int
	newline int
	last    byte
	carry   [utf8.UTFMax]byte // the start of a rune the last write cut
	ncarry  int
}

func (m *measurer) reset() { *m = measurer{h: sha256.New()} }

func (m *measurer) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	m.h.Write(p)
	m.n += len(p)
	m.newline += bytes.Count(p, []byte{'\n'})
	m.last = p[len(p)-1]
	rest := p
	if m.ncarry > 0 {
		// Finish the cut rune with the first bytes of p.
		k := copy(m.carry[m.ncarry:], rest)
		buf := m.carry[:m.ncarry+k]
		if !utf8.FullRune(buf) {
			m.ncarry += k // still cut (p is shorter than the rest of it)
			return len(p), nil
		}
		if _, size := utf8.DecodeRune(buf); size > m.ncarry {
			m.runes++
			rest = rest[size-m.ncarry:]
		} else {
			// Invalid (size 1): the cut bytes after the first are
			// continuation bytes, each a rune of its own.
			m.runes += m.ncarry
		}
		m.ncarry = 0
	}
	// A rune the end of rest cuts starts at its last non-continuation
	// byte among the last three, when the bytes from there are not a whole
	// rune (every non-continuation byte starts a rune as utf8 decodes).
	cut := len(rest)
	for j := len(rest) - 1; j >= 0 && j >= len(rest)-(utf8.UTFMax-1); j-- {
		if utf8.RuneStart(rest[j]) {
			if !utf8.FullRune(rest[j:]) {
				cut = j
			}
			break
		}
	}
	m.runes += runes.Count(rest[:cut]) // utf8.RuneCount copies what is not ASCII
	m.ncarry = copy(m.carry[:], rest[cut:])
	return len(p), nil
}

// describe sets i's Chars, Lines, Bytes and SHA256 to what was written.
func (m *measurer) describe(i *Info) {
	runes := m.runes + m.ncarry // a cut rune at the end: each byte is one, as RuneCount counts them
	lines := m.newline
	if m.n > 0 && m.last != '\n' {
		lines++
	}
	i.Chars, i.Lines, i.Bytes = runes, lines, m.n
	i.SHA256 = hex.EncodeToString(m.h.Sum(nil))
}
