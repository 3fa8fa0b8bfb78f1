// Package ctxio stops long reads that take no context: a reader that fails its next
// Read once the context is done. It owns nothing else.
package ctxio

import (
	"context"
	"io"
)

// Reader returns r, failing each Read with ctx's error once ctx is done. Reads already
// in progress are not interrupted; a large copy stops at its next chunk.
func Reader(ctx context.Context, r io.Reader) io.Reader { return reader{ctx, r} }

type reader struct {
	ctx context.Context
	r   io.Reader
}

func (c reader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
