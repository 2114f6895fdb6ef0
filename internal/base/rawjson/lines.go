package rawjson

import (
	"bytes"
	"context"
	"fmt"
)

// Lines scans data as a sequence of JSON objects (JSON Lines, or objects
// one after another): each object's bytes and its members, in order. An
// incomplete last line (no newline after it, not a whole object: a file
// still being written) is skipped and its 1-based line returned as
// partial; a bad value elsewhere is a *SyntaxError (its Offset in data,
// or, for a bad member, in the object). A value that is not an object is
// a *SyntaxError at its first byte. ctx is checked every 4096 values.
func Lines(ctx context.Context, data []byte) (values [][]byte, members [][]Member, partial int, err error) {
	for i := SkipSpace(data, 0); i < len(data); i = SkipSpace(data, i) {
		if len(values)%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, 0, err
			}
		}
		if data[i] != '{' {
			return nil, nil, 0, &SyntaxError{Offset: int64(i), Msg: fmt.Sprintf("invalid character %q: each line must be a JSON object", rune(data[i]))}
		}
		end, err := ValueEnd(data, i)
		var ms []Member
		if err == nil {
			ms, err = Members(data[i:end])
		}
		if err != nil {
			if len(values) > 0 && bytes.IndexByte(data[i:], '\n') < 0 {
				return values, members, bytes.Count(data[:i], []byte{'\n'}) + 1, nil
			}
			return nil, nil, 0, err
		}
		values, members = append(values, data[i:end]), append(members, ms)
		i = end
	}
	return values, members, 0, nil
}
