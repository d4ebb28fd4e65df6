package pool

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// How soon the pods are read again while a site waits: fast right after a tell, backing off to the tunable.
func TestServedRetryAfter(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name     string
		since    time.Duration // now - lastTold; negative: no tell known
		longest  time.Duration
		expected time.Duration
	}{
		{"told this pass", 0, 5 * time.Second, time.Second},
		{"told a second ago", time.Second, 5 * time.Second, time.Second},
		{"told 3 s ago: half of it", 3 * time.Second, 5 * time.Second, 1500 * time.Millisecond},
		{"told 8 s ago", 8 * time.Second, 5 * time.Second, 4 * time.Second},
		{"told long ago: the tunable", time.Minute, 5 * time.Second, 5 * time.Second},
		{"no tell known: the tunable", -1, 5 * time.Second, 5 * time.Second},
		{"a tunable below the minimum is kept", 0, 200 * time.Millisecond, 200 * time.Millisecond},
		{"a tunable at the minimum is kept", time.Minute, time.Second, time.Second},
	}
	for _, c := range cases {
		var told time.Time
		if c.since >= 0 {
			told = t0.Add(-c.since)
		}
		if got := servedRetryAfter(t0, told, c.longest); got != c.expected {
			t.Errorf("%s: got %v, expected %v", c.name, got, c.expected)
		}
	}
}

// The last tell is the newest mark of the index revision; other revisions' marks do not count.
func TestLastTold(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	marks := map[types.UID]toldMark{
		"a": {revision: "r2", since: t0.Add(-3 * time.Second)},
		"b": {revision: "r2", since: t0.Add(-time.Second)},
		"c": {revision: "r1", since: t0},
	}
	if got := lastTold(marks, "r2"); !got.Equal(t0.Add(-time.Second)) {
		t.Errorf("r2: got %v, expected the newest r2 mark", got)
	}
	if got := lastTold(marks, "r3"); !got.IsZero() {
		t.Errorf("r3: got %v, expected zero (no mark names it)", got)
	}
	if got := lastTold(nil, "r2"); !got.IsZero() {
		t.Errorf("no marks: got %v, expected zero", got)
	}
}
