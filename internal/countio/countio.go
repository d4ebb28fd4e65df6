// Package countio counts the bytes written through a writer: a bundle's files' offsets and the bytes hashed
// (internal/gitsource), the packs the test Git server sends (internal/gittestserver).
package countio

import "io"

// Writer passes writes to W and adds the bytes written to N.
type Writer struct {
	W io.Writer
	N int64
}

func (c *Writer) Write(p []byte) (int, error) {
	n, err := c.W.Write(p)
	c.N += int64(n)
	return n, err
}
