package retrybudget

import (
	"fmt"
	"testing"
	"time"
)

// While few are stuck, each waits the minimum (plus its tenth at most); many stuck together share the budget:
// 10,000 at 5 a second are each retried every 2,000 s, and together at most 5 a second.
func TestIntervalKeepsTheTotalWithinTheBudget(t *testing.T) {
	b := &Budget{Min: time.Minute, PerSecond: 5}
	for i := range 10 {
		if got := b.Stuck(fmt.Sprintf("ns/site-%d", i)); got < time.Minute || got >= 66*time.Second {
			t.Fatalf("%d stuck: interval %s, want the minute and at most a tenth more", i+1, got)
		}
	}
	for i := 10; i < 10_000; i++ {
		b.Stuck(fmt.Sprintf("ns/site-%d", i))
	}
	if b.Len() != 10_000 {
		t.Fatalf("Len %d", b.Len())
	}
	var rate float64 // retries a second of all of them, each at its own interval
	for i := range 10_000 {
		d := Interval(b.Min, b.PerSecond, b.Len(), fmt.Sprintf("ns/site-%d", i))
		if d < 2000*time.Second || d >= 2200*time.Second {
			t.Fatalf("site-%d: interval %s at 10,000 stuck, want 2,000 s and at most a tenth more", i, d)
		}
		rate += 1 / d.Seconds()
	}
	if rate > 5 {
		t.Errorf("10,000 stuck retry %.2f times a second, over the budget of 5", rate)
	}
}

// The spread comes from the key, so stuck objects do not retry in lockstep, and it is the same on every call.
func TestIntervalSpreadsKeysDeterministically(t *testing.T) {
	seen := map[time.Duration]bool{}
	for i := range 100 {
		k := fmt.Sprintf("tenant-%d/docs", i)
		d := Interval(time.Minute, 5, 1, k)
		if d != Interval(time.Minute, 5, 1, k) {
			t.Fatalf("%s: two intervals", k)
		}
		seen[d] = true
	}
	if len(seen) < 50 {
		t.Errorf("100 keys share %d intervals, want them spread", len(seen))
	}
}

// An object no longer stuck stops counting against the others.
func TestUnstuckFreesTheBudget(t *testing.T) {
	b := &Budget{Min: time.Second, PerSecond: 1}
	for i := range 30 {
		b.Stuck(fmt.Sprint(i))
	}
	if d := b.Stuck("0"); d < 30*time.Second {
		t.Fatalf("30 stuck at 1 a second: interval %s, want 30 s or more", d)
	}
	for i := range 30 {
		b.Unstuck(fmt.Sprint(i))
	}
	if d := b.Stuck("0"); d >= 2*time.Second {
		t.Fatalf("alone again: interval %s, want about the minimum", d)
	}
}
