package main

import (
	"bytes"
	"io"
	"sync"
)

// k6OutputBudget is how many bytes of k6's own output (its warnings and errors) the runner passes to the pod log
// per step. k6 logs a warning per failed request: against a target that refuses connections that is megabytes
// a second, which would make the kubelet rotate the log (10 MiB by default) and drop what came before, and bury
// the progress lines. The first lines say what went wrong; the rest are counted, not printed.
const k6OutputBudget = 16 << 10

// boundedWriter passes the first budget bytes written to it on to w, then counts and discards the rest. It is
// safe for concurrent use (k6's stdout and stderr are copied by two goroutines).
type boundedWriter struct {
	mu      sync.Mutex
	w       io.Writer
	left    int
	endedNL bool // the last byte passed on was a newline (or nothing was)
	lines   int  // newlines discarded
	bytes   int  // bytes discarded
}

func newBoundedWriter(w io.Writer, budget int) *boundedWriter {
	return &boundedWriter{w: w, left: budget, endedNL: true}
}

// Write never fails: output past the budget is dropped, and an error of w must not stop k6.
func (b *boundedWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	pass := min(len(p), b.left)
	if pass > 0 {
		_, _ = b.w.Write(p[:pass])
		b.left -= pass
		b.endedNL = p[pass-1] == '\n'
	}
	if rest := p[pass:]; len(rest) > 0 {
		if b.bytes == 0 && !b.endedNL {
			_, _ = b.w.Write([]byte("\n")) // end the cut line, so the runner's next line starts on its own
			b.endedNL = true
		}
		b.bytes += len(rest)
		b.lines += bytes.Count(rest, []byte("\n"))
	}
	return len(p), nil
}

// suppressed is how much was discarded: lines (newlines, at least 1 if any byte was) and bytes.
func (b *boundedWriter) suppressed() (lines, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bytes > 0 && b.lines == 0 {
		return 1, b.bytes
	}
	return b.lines, b.bytes
}
