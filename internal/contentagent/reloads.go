package contentagent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// reloadsMetric is the server's count of reloads, by result (success, failure), on its admin port's /metrics.
const reloadsMetric = "hyperstatic_reloads_total"

// maxMetricsBytes bounds the read of the server's /metrics: its page is a few KiB.
const maxMetricsBytes = 1 << 20

// adminTimeout bounds one read of the server's /metrics (loopback: a live server answers in milliseconds).
const adminTimeout = 5 * time.Second

// reloadPoll is how often the server's counter is read while the puller waits for a reload.
const reloadPoll = 100 * time.Millisecond

// reloads reads the server's reload count: every result summed, since a failed reload ends the server's use of
// the old tree generation as much as a successful one.
func (p *Puller) reloads(ctx context.Context) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	body, err := p.get(ctx, p.ServerAdmin+"/metrics", maxMetricsBytes)
	if err != nil {
		return 0, err
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, maxMetricsBytes+1))
	if err != nil {
		return 0, fmt.Errorf("reading the server's metrics: %w", err)
	}
	if len(data) > maxMetricsBytes {
		return 0, fmt.Errorf("the server's metrics are over %d bytes", maxMetricsBytes)
	}
	return parseReloads(data)
}

// reloadMark is the server's reload count read just before a flip; known is false when it could not be read
// (the server not started yet, or its admin not answering).
type reloadMark struct {
	count float64
	known bool
}

// waitForReload returns once the server's reload count exceeds before's (the server has loaded what the flip
// published) or ReloadWait has passed; with before unknown only the bound ends the wait. It reports whether a
// reload was seen.
func (p *Puller) waitForReload(ctx context.Context, before reloadMark) bool {
	bound := p.After(p.ReloadWait)
	for {
		var poll <-chan time.Time
		if before.known {
			if n, err := p.reloads(ctx); err == nil && n > before.count {
				return true
			}
			poll = p.After(reloadPoll)
		}
		select {
		case <-bound:
			return false
		case <-ctx.Done():
			return false
		case <-poll:
		}
	}
}

// parseReloads sums the values of the reloadsMetric series in a Prometheus text page, reading only the lines of
// that metric (HELP, TYPE, other metrics and names that merely start the same are skipped).
func parseReloads(page []byte) (float64, error) {
	var sum float64
	found := false
	for line := range bytes.Lines(page) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(string(line)), reloadsMetric)
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(rest, "{"):
			end := labelsEnd(rest)
			if end < 0 {
				return 0, fmt.Errorf("%s: unterminated labels in %q", reloadsMetric, line)
			}
			rest = rest[end+1:]
		case strings.HasPrefix(rest, " "), strings.HasPrefix(rest, "\t"):
		default:
			continue // another metric whose name starts the same (…_total_created)
		}
		fields := strings.Fields(rest) // the value, then an optional timestamp
		if len(fields) == 0 {
			return 0, fmt.Errorf("%s: no value in %q", reloadsMetric, line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", reloadsMetric, err)
		}
		sum += v
		found = true
	}
	if !found {
		return 0, errors.New("the server's metrics have no " + reloadsMetric)
	}
	return sum, nil
}

// labelsEnd returns the index of the '}' closing the label set that s starts with, skipping quoted values
// (which may hold '}' and escaped quotes), or -1.
func labelsEnd(s string) int {
	quoted := false
	for i := 1; i < len(s); i++ {
		switch {
		case quoted && s[i] == '\\':
			i++
		case s[i] == '"':
			quoted = !quoted
		case !quoted && s[i] == '}':
			return i
		}
	}
	return -1
}
