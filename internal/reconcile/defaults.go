package reconcile

import "cmp"

// OrDefault is v when it is positive, else def: the meaning of a zero (or negative) tunable throughout the
// operator. Controllers resolve all their tunables through it in one place (one resolved value per controller),
// never in an accessor per field.
func OrDefault[T cmp.Ordered](v, def T) T {
	var zero T
	if v > zero {
		return v
	}
	return def
}
