package contentagent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// maxCheckOutput is how much of the check's output is kept for the error: the report's first problems, enough
// for a condition message, never an unbounded buffer.
const maxCheckOutput = 4 << 10

// ServerCheck returns a gitsource.Store Check that runs `server --check --root DIR --max-entries N --max-depth D`,
// the same validation the server does at load (_redirects, _headers, names, the tree's caps, which the operator
// passes to fetcher and server alike), once in the fetcher before a tree is published. Its exit status decides;
// its output (bounded) is the reason's message.
func ServerCheck(server string, timeout time.Duration, maxEntries, maxDepth int) func(dir string) error {
	limits := []string{"--max-entries", strconv.Itoa(maxEntries), "--max-depth", strconv.Itoa(maxDepth)}
	return func(dir string) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		out := &capped{max: maxCheckOutput}
		cmd := exec.CommandContext(ctx, server, append([]string{"--check", "--root", dir}, limits...)...)
		cmd.Stdout, cmd.Stderr = out, out
		err := cmd.Run()
		if err == nil {
			return nil
		}
		var exit *exec.ExitError
		if errors.As(err, &exit) && ctx.Err() == nil {
			return fmt.Errorf("%s", firstLines(out.String(), 5))
		}
		return fmt.Errorf("running %s --check: %w", server, err)
	}
}

// capped keeps the first max bytes written to it and drops the rest.
type capped struct {
	buf bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capped) String() string { return c.buf.String() }

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[:min(len(lines), n)], "; ")
}
