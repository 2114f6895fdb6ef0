package fsutil

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
)

// ReadAll reads r to its end in chunks, stopping early with ctx's error
// when ctx is done (a reader of stdin or a pipe may not return soon).
func ReadAll(ctx context.Context, r io.Reader) ([]byte, error) {
	var buf bytes.Buffer
	chunk := make([]byte, 256<<10)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := r.Read(chunk)
		buf.Write(chunk[:n])
		if errors.Is(err, io.EOF) {
			return buf.Bytes(), nil
		}
		if err != nil {
			return nil, fmt.Errorf("read input: %w", err)
		}
	}
}
