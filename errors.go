package agentctx

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// Sentinel errors for callers to branch on with errors.Is.
var (
	// ErrInvalidInput marks input that cannot be read as a conversation:
	// malformed JSON, an unknown document shape, a message that is not an
	// object. Every *InputError matches it.
	ErrInvalidInput = errors.New("agentctx: invalid input")
	// ErrUnpaired marks a history whose tool calls and results do not pair
	// (see ValidatePairing). Every *PairingError matches it.
	ErrUnpaired = errors.New("agentctx: unpaired tool calls")
)

// InputError describes malformed input and where it is.
type InputError struct {
	Line   int   // 1-based line of the error; 0 when unknown
	Column int   // 1-based column in bytes; 0 when unknown
	Offset int64 // byte offset in the input
	Msg    string
}

func (e *InputError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d, column %d (byte %d): %s", e.Line, e.Column, e.Offset, e.Msg)
	}
	return e.Msg
}

// Is makes errors.Is(err, ErrInvalidInput) true.
func (e *InputError) Is(target error) bool { return target == ErrInvalidInput }

// inputErrorAt returns an InputError at a byte offset of data.
func inputErrorAt(data []byte, off int64, msg string) *InputError {
	if off < 0 {
		off = 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line := bytes.Count(before, []byte{'\n'}) + 1
	col := int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return &InputError{Line: line, Column: col, Offset: off, Msg: msg}
}

// syntaxError turns a scanner error into an InputError; offsets of
// rawjson.SyntaxError are relative to the slice that was scanned, which for
// every caller here starts at data's start or is a subslice of it.
func syntaxError(data []byte, err error) error {
	var se *rawjson.SyntaxError
	if errors.As(err, &se) {
		return inputErrorAt(data, se.Offset, se.Msg)
	}
	return &InputError{Msg: err.Error()}
}

// Version is the version of the agentctx library and command.
const Version = "0.1.0-dev"
