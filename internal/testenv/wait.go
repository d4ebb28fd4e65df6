package testenv

import (
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// EventuallyTimeout bounds Eventually: long enough for a controller's watch, queue and retry on a loaded 2-core
// machine, short enough that a stuck test says so within the suite's timeout.
const EventuallyTimeout = 20 * time.Second

// Must fails the test at once on err.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Eventually retries check every 100 ms until it returns nil, and fails the test with the last error, prefixed by
// what, after EventuallyTimeout.
func Eventually(t testing.TB, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(EventuallyTimeout)
	var err error
	for time.Now().Before(deadline) {
		if err = check(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: %v", what, err)
}

// Gone is nil when err, from reading an object, says it does not exist; otherwise an error for Eventually.
func Gone(err error) error {
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("cannot tell whether it is gone: %w", err)
	}
	return errors.New("still there")
}
