package dirsession

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strconv"
)

// A session file is a journal: the states a session was saved with, one
// record each, appended under the session's lock, so that a Save writes
// into a file that exists instead of creating one. When the journal has
// grown past journalBound of its last record it is written anew, holding
// that record only, by the atomic temp file + rename of fsutil.WriteFile.
//
// Layout:
//
//	file:    journalMagic (16 bytes) | nonce (16 bytes, random per file)
//	record:  nonce (16) | version (8) | length (8) | data CRC (4) | header CRC (4)
//	         | data (length bytes)
//	         | length (8) | header CRC (4)
//
// Integers are big-endian; CRCs are CRC-32C, the data CRC of the data,
// the header CRC of the header's first 36 bytes. The last complete record
// is the session's state. The trailer (the length and header CRC again)
// finds it from the end of the file; the nonce, which is not in any
// state's data, keeps a record's data from passing for a record. A record
// whose write was cut short (a crash, a full disk, a writer killed) fails
// these checks and the one before it is the state: readers never see a
// partial state, and a torn write never loses the state before it. The
// next Save writes such a journal anew.
//
// A file in the format before journals (dirHeader, the version, a newline,
// the data) is read as the state it holds, and the next Save replaces it
// with a journal. A program of a version before journals refuses a
// journal ("not a session file") rather than misread it: the processes
// sharing a directory run versions that read journals.
const (
	journalMagic   = "agentctx-jrnl-1\n"
	nonceSize      = 16
	fileHeaderSize = len(journalMagic) + nonceSize
	recHeaderSize  = nonceSize + 8 + 8 + 4 + 4
	trailerSize    = 8 + 4
	recOverhead    = recHeaderSize + trailerSize
	// journalSlack is what a journal may hold beyond its records' bound.
	journalSlack = 64 << 10
	// A journal holds up to journalGrowth times its last record, but no
	// more than journalExcess beyond journalFloor times it: a proxy saves
	// a session's state twice per request (the preparation and the
	// usage), and writing the file anew costs a file creation (0.5 ms and
	// more on a busy disk), so a state of 25 KB is written anew once
	// every 9 requests rather than every 3, and one of 1 MB takes at most
	// 5 MB on disk.
	journalGrowth = 16
	journalFloor  = 4
	journalExcess = 1 << 20
)

// journalBound is the largest a journal whose last record takes recSize
// bytes may be: appending a record that would take it past this bound
// writes the journal anew instead.
func journalBound(recSize int64) int64 {
	return min(journalGrowth*recSize, journalFloor*recSize+journalExcess) + journalSlack
}

// castagnoli is the CRC-32C table (read-only).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errCorrupt is the error of a session file that holds no complete state.
var errCorrupt = errors.New("no complete session state")

// newNonce returns a new journal's nonce.
func newNonce() ([nonceSize]byte, error) {
	var n [nonceSize]byte
	_, err := rand.Read(n[:])
	return n, err
}

// appendFileHeader appends a journal's file header to buf.
func appendFileHeader(buf []byte, nonce *[nonceSize]byte) []byte {
	buf = append(buf, journalMagic...)
	return append(buf, nonce[:]...)
}

// appendRecord appends one record of data at version to buf.
func appendRecord(buf []byte, nonce *[nonceSize]byte, version int64, data []byte) []byte {
	hdr, trl := recordFrame(nonce, version, data)
	buf = append(buf, hdr[:]...)
	buf = append(buf, data...)
	return append(buf, trl[:]...)
}

// recordFrame returns the header and the trailer of the record of data at
// version: the record is the header, data, then the trailer.
func recordFrame(nonce *[nonceSize]byte, version int64, data []byte) (hdr [recHeaderSize]byte, trl [trailerSize]byte) {
	b := append(hdr[:0], nonce[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(version))
	b = binary.BigEndian.AppendUint64(b, uint64(len(data)))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(data, castagnoli))
	hcrc := crc32.Checksum(b, castagnoli)
	binary.BigEndian.AppendUint32(b, hcrc)
	t := binary.BigEndian.AppendUint64(trl[:0], uint64(len(data)))
	binary.BigEndian.AppendUint32(t, hcrc)
	return hdr, trl
}

// recordCRC is the header CRC of the record that starts rec.
func recordCRC(rec []byte) uint32 { return binary.BigEndian.Uint32(rec[recHeaderSize-4:]) }

// recHeader is a record's header, decoded.
type recHeader struct {
	version int64
	length  int64
	dataCRC uint32
	hdrCRC  uint32
}

// parseHeader decodes the record header at the start of b, if it is one
// of the journal with this nonce.
func parseHeader(b []byte, nonce []byte) (recHeader, bool) {
	if len(b) < recHeaderSize || !bytes.Equal(b[:nonceSize], nonce) {
		return recHeader{}, false
	}
	h := recHeader{
		version: int64(binary.BigEndian.Uint64(b[nonceSize:])),
		length:  int64(binary.BigEndian.Uint64(b[nonceSize+8:])),
		dataCRC: binary.BigEndian.Uint32(b[nonceSize+16:]),
		hdrCRC:  binary.BigEndian.Uint32(b[nonceSize+20:]),
	}
	if h.version < 1 || h.length < 0 || crc32.Checksum(b[:recHeaderSize-4], castagnoli) != h.hdrCRC {
		return recHeader{}, false
	}
	return h, true
}

// trailerMatches reports whether t is the trailer of the record with
// header h.
func trailerMatches(t []byte, h recHeader) bool {
	return len(t) >= trailerSize && int64(binary.BigEndian.Uint64(t)) == h.length &&
		binary.BigEndian.Uint32(t[8:]) == h.hdrCRC
}

// state is what a session file holds: its last complete state and where
// the journal stands.
type state struct {
	version int64
	length  int64  // bytes of data
	data    []byte // the data, when asked for
	nonce   [nonceSize]byte
	hdrCRC  uint32 // the last record's header CRC (a journal's)
	// appendable: the file is a journal whose last record ends it, so
	// that a record may be appended to it; size is the file's size.
	appendable bool
	size       int64
}

// readMode says how much readState checks and returns.
type readMode int

const (
	verified   readMode = iota // the version and length of the last record whose data CRC holds (Save, Stat, List)
	withData                   // and its data (Load)
	headerOnly                 // the last record's header and trailer, its data unread (Save, of a record it wrote: see driver.written)
)

// readState reads the state of the session file f, of size bytes. A file
// in the old format is read whole.
func readState(f *os.File, size int64, mode readMode) (state, error) {
	head := make([]byte, max(fileHeaderSize, len(dirHeader)+24))
	n, err := f.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return state{}, err
	}
	head = head[:n]
	if !bytes.HasPrefix(head, []byte(journalMagic)) || n < fileHeaderSize {
		return readOld(f, head, size, mode)
	}
	st := state{size: size}
	copy(st.nonce[:], head[len(journalMagic):])
	if ok, err := st.readLast(f, mode); ok || err != nil {
		return st, err
	}
	return st.scan(f, mode)
}

// readLast reads the last record through the trailer that ends the file:
// the way a journal is read unless its last write was cut short (or is in
// progress). ok is false when the end of the file is not a whole record.
func (st *state) readLast(f *os.File, mode readMode) (ok bool, err error) {
	if st.size < int64(fileHeaderSize+recOverhead) {
		return false, nil
	}
	var t [trailerSize]byte
	if _, err := f.ReadAt(t[:], st.size-trailerSize); err != nil {
		return false, eofIsNotOK(err)
	}
	length := int64(binary.BigEndian.Uint64(t[:]))
	if length < 0 || length > st.size-int64(fileHeaderSize+recOverhead) {
		return false, nil
	}
	off := st.size - trailerSize - length - recHeaderSize
	n := recHeaderSize
	if mode != headerOnly {
		n += int(length)
	}
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, off); err != nil {
		return false, eofIsNotOK(err)
	}
	h, hok := parseHeader(buf, st.nonce[:])
	if !hok || !trailerMatches(t[:], h) {
		return false, nil
	}
	data := buf[recHeaderSize:]
	if mode != headerOnly && crc32.Checksum(data, castagnoli) != h.dataCRC {
		return false, nil
	}
	st.version, st.length, st.hdrCRC, st.appendable = h.version, h.length, h.hdrCRC, true
	if mode == withData {
		st.data = data
	}
	return true, nil
}

// eofIsNotOK is nil for io.EOF (a journal shortened since its size was
// taken: a failed append taken back) and err otherwise.
func eofIsNotOK(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// scan reads the journal whole and walks its records from the first: the
// state is the last one that is complete. A journal read so is never
// appendable (the next Save writes it anew).
func (st *state) scan(f *os.File, mode readMode) (state, error) {
	raw := make([]byte, st.size)
	n, err := f.ReadAt(raw, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return state{}, err
	}
	raw = raw[:n]
	var recs [][2]int // offset and end of each record whose header and trailer are whole
	for off := fileHeaderSize; ; {
		h, ok := parseHeader(raw[off:], st.nonce[:])
		if !ok || h.length > int64(len(raw)-off-recOverhead) {
			break
		}
		end := off + recHeaderSize + int(h.length) + trailerSize
		if !trailerMatches(raw[end-trailerSize:], h) {
			break
		}
		recs = append(recs, [2]int{off, end})
		off = end
	}
	for i := len(recs) - 1; i >= 0; i-- {
		b := raw[recs[i][0]:recs[i][1]]
		h, _ := parseHeader(b, st.nonce[:])
		data := b[recHeaderSize : len(b)-trailerSize]
		if crc32.Checksum(data, castagnoli) != h.dataCRC {
			continue
		}
		st.version, st.length = h.version, h.length
		if mode == withData {
			st.data = bytes.Clone(data)
		}
		return *st, nil
	}
	return state{}, fmt.Errorf("%s: %w", f.Name(), errCorrupt)
}

// readOld reads a session file in the format before journals: dirHeader,
// the version, a newline, the data. head is the start of the file.
func readOld(f *os.File, head []byte, size int64, mode readMode) (state, error) {
	rest, ok := bytes.CutPrefix(head, []byte(dirHeader))
	i := bytes.IndexByte(rest, '\n')
	if !ok || i < 0 {
		return state{}, fmt.Errorf("%s: not a session file", f.Name())
	}
	v, err := strconv.ParseInt(string(rest[:i]), 10, 64)
	if err != nil || v < 1 {
		return state{}, fmt.Errorf("%s: bad version %q", f.Name(), rest[:i])
	}
	start := int64(len(dirHeader) + i + 1)
	st := state{version: v, length: size - start, size: size}
	if mode == withData {
		st.data = make([]byte, st.length)
		if _, err := f.ReadAt(st.data, start); err != nil && !errors.Is(err, io.EOF) {
			return state{}, err
		}
	}
	return st, nil
}
