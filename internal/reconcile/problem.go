package reconcile

import "fmt"

// Problem is what a step records instead of returning an error when no retry can fix it: a condition's reason
// (CamelCase, from api/v1alpha1) and a message with the details. It ends as conditions, not as a requeue with
// backoff.
type Problem struct{ Reason, Message string }

// Problemf builds a Problem with a formatted message.
func Problemf(reason, format string, args ...any) *Problem {
	return &Problem{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

func (p *Problem) Error() string { return p.Reason + ": " + p.Message }
