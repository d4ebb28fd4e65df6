// Package reconcile is the skeleton the operator's controllers share (in the spirit of fluxcd's
// internal/reconcile/summarize): a pass reads the clock once, runs its ordered steps, each filling part of an
// observation, derives the whole status from the observation in one pure function, writes it only when it changed,
// and records the events of its condition transitions only once that write is in.
//
// What lives here is the part every controller would otherwise spell its own way: the problem type a step records
// instead of an error no retry can fix, the condition setter stamped with the pass's one clock reading, condition
// polarity (declared as data beside the condition types, in api/v1alpha1), the status write followed by the
// transitions, the clock seam, and "zero means the default" resolved once.
package reconcile
