package workspace

import (
	"context"
	"io"

	"github.com/agentctx/agentctx/workspace/driver"
)

// A Stream is an artifact whose content a function writes, for content
// too large to hold whole once more (a compaction's archive): its Info
// is measured by MeasureStream, and its Write must write the same bytes
// at every call.
type Stream = driver.Stream

// StreamWriter is a Store that stores a Stream's content as it is written
// (every store NewStore makes is one; the directory store writes the
// content file from it, the others hold it whole first). See PutStream.
type StreamWriter interface {
	PutStream(ctx context.Context, namespace string, s Stream) (Info, error)
}

// ErrStreamChanged is returned (wrapped) by PutStream when a Stream's
// Write wrote other bytes than those it was measured on.
var ErrStreamChanged = driver.ErrStreamChanged

// MeasureStream returns info as Put describes an artifact whose content is
// what write writes (Type defaulted, Created in UTC, the content's Chars,
// Lines, Bytes and SHA256), calling write once, without holding the
// content.
func MeasureStream(info Info, write func(io.Writer) error) (Info, error) {
	return driver.MeasureStream(info, write)
}

// PutStream stores the artifact s describes, replacing any with its id as
// Put does: through store's own PutStream when it is a StreamWriter, else
// with its content made whole and Put. The content written is checked
// against s.Info: a Write that writes other bytes fails with an error
// matching ErrStreamChanged, and nothing is stored.
func PutStream(ctx context.Context, store Store, namespace string, s Stream) (Info, error) {
	if sw, ok := store.(StreamWriter); ok {
		return sw.PutStream(ctx, namespace, s)
	}
	a, err := driver.Materialize(s)
	if err != nil {
		return Info{}, &Error{Op: "put", Namespace: namespace, ID: s.ID, Err: err}
	}
	return store.Put(ctx, namespace, a)
}

// PutStream implements StreamWriter: a driver that writes streams
// (driver.StreamWriter) is handed one whose content is checked as it is
// written; another driver is given the content whole.
func (p *portable) PutStream(ctx context.Context, ns string, s Stream) (Info, error) {
	ctx, cancel, err := p.begin(ctx, "put", ns, s.ID, true)
	if err != nil {
		return Info{}, err
	}
	defer cancel()
	a := Artifact{Info: s.Info}
	if err := driver.ValidateArtifact(&a); err != nil {
		return Info{}, &Error{Op: "put", Namespace: ns, ID: s.ID, Err: err}
	}
	var info Info
	if sw, ok := p.d.(driver.StreamWriter); ok {
		m := driver.Measure(a).Info // the defaults and copies Put makes
		m.Chars, m.Lines, m.Bytes, m.SHA256 = s.Chars, s.Lines, s.Bytes, s.SHA256
		s.Info = m
		info, err = sw.PutStream(ctx, ns, driver.CheckedStream(s))
	} else {
		if a, err = driver.Materialize(s); err != nil {
			return Info{}, &Error{Op: "put", Namespace: ns, ID: s.ID, Err: err}
		}
		info, err = p.d.Put(ctx, ns, driver.Measure(a))
	}
	if err != nil {
		return Info{}, wrap(ctx, err, "put", ns, s.ID)
	}
	return info, nil
}
