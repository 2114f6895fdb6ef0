// Package runes counts the runes of bytes without the copy the standard
// library makes.
package runes

import (
	"unicode/utf8"
	"unsafe"
)

// Count is utf8.RuneCount(b), which copies the bytes from the first
// non-ASCII one into a string it counts (a 10 MB archive of a coding
// agent's turns made 14 MB of garbage measuring it): b is read as a
// string in place, never written.
func Count(b []byte) int {
	return utf8.RuneCountInString(unsafe.String(unsafe.SliceData(b), len(b)))
}
