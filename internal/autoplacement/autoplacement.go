// Package autoplacement decides, purely, where a StaticSite with spec.placement.mode Auto runs: in its pool while its
// traffic is low, on its own pods while it is high (docs/design/pools.md, "Automatic placement").
//
// The contract:
//
//   - Traffic is the site's requests per second over every pod that serves it, the pool's and its own (a site
//     moving between the two is served by both), measured by the pool controller (internal/pooltraffic) and
//     classified into a Band against the site's Thresholds: Above promoteAbove, Below demoteBelow, Between, or
//     Unknown when the measurement is incomplete and cannot tell (a lower bound above promoteAbove is Above).
//     Since is when the site entered its band.
//   - Hysteresis: a site in the pool is promoted as soon as its band is Above; a site on its own pods is demoted
//     only once its band has been Below for demoteAfter (counted from the later of entering Below and the last
//     decision). Between keeps the site where it is, and so does Unknown: the operator never moves a site on a
//     number it does not have.
//   - Cooldown: after a promotion or a demotion no other move is made for cooldown, whatever the traffic, so a
//     site cannot flap; the first decision (Automatic) does not hold a move back.
//   - The first decision leaves the site where it is: on its own pods if it has them, else in the pool.
//   - The clock is an input; the decision says when it should be made again (RecheckAfter) when only time can
//     change it (a window or a cooldown ending), so a caller never polls.
//
// Thresholds have defaults derived from the pool (ThresholdsOf): promoteAbove is half of what the pool lets one
// site take (spec.siteLimits.requestsPerSecond on each of its spec.replicas pods, past which the pool answers 429),
// so a growing site leaves before it is limited; demoteBelow a tenth of promoteAbove; demoteAfter 30 minutes;
// cooldown 5 minutes.
package autoplacement

import (
	"fmt"
	"math"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
)

// Defaults of the thresholds a site does not set.
const (
	// DefaultPromoteShare: promoteAbove is this share of the pool's allowance for one site.
	DefaultPromoteShare = 0.5
	// DefaultDemoteDivisor: demoteBelow is promoteAbove divided by this.
	DefaultDemoteDivisor = 10
	DefaultDemoteAfter   = 30 * time.Minute
	DefaultCooldown      = 5 * time.Minute
	// defaultPoolReplicas is a pool's spec.replicas when it is not set (the CRD's default).
	defaultPoolReplicas = 2
)

// Thresholds are a site's thresholds in effect.
type Thresholds struct {
	// PromoteAbove and DemoteBelow are requests per second; DemoteBelow < PromoteAbove.
	PromoteAbove, DemoteBelow int64
	DemoteAfter, Cooldown     time.Duration
}

// ThresholdsOf resolves spec's thresholds, the ones it does not set derived from pool (nil: a pool's defaults).
func ThresholdsOf(pool *v1alpha1.StaticSitePool, spec *v1alpha1.PlacementSpec) Thresholds {
	p := &v1alpha1.PlacementSpec{}
	if spec != nil {
		p = spec
	}
	allowance := int64(poolplacement.DefaultRequestsPerSecond) * defaultPoolReplicas
	if pool != nil {
		replicas := int64(defaultPoolReplicas)
		if pool.Spec.Replicas != nil {
			replicas = int64(*pool.Spec.Replicas)
		}
		allowance = poolplacement.LimitsOf(pool).RequestsPerSecond * max(replicas, 1)
	}
	t := Thresholds{DemoteAfter: DefaultDemoteAfter, Cooldown: DefaultCooldown}
	switch {
	case p.PromoteAbove != nil:
		t.PromoteAbove = *p.PromoteAbove
	default:
		t.PromoteAbove = max(int64(float64(allowance)*DefaultPromoteShare), 1)
		if p.DemoteBelow != nil {
			t.PromoteAbove = max(t.PromoteAbove, 2**p.DemoteBelow)
		}
	}
	switch {
	case p.DemoteBelow != nil:
		t.DemoteBelow = *p.DemoteBelow
	default:
		t.DemoteBelow = t.PromoteAbove / DefaultDemoteDivisor
	}
	// The API refuses demoteBelow >= promoteAbove when both are set (CEL); anything stored before that rule, or
	// written around it, must still never promote and demote on the same number.
	if t.DemoteBelow >= t.PromoteAbove {
		t.DemoteBelow = t.PromoteAbove - 1
	}
	if p.DemoteAfter != nil && p.DemoteAfter.Duration > 0 {
		t.DemoteAfter = p.DemoteAfter.Duration
	}
	if p.Cooldown != nil && p.Cooldown.Duration >= 0 {
		t.Cooldown = p.Cooldown.Duration
	}
	return t
}

// Band is where a rate stands against a site's thresholds.
type Band string

const (
	// BandUnknown: no complete measurement (the first one, a pod that could not be read or restarted).
	BandUnknown Band = ""
	BandBelow   Band = "Below"
	BandBetween Band = "Between"
	BandAbove   Band = "Above"
)

// BandOf classifies rps. complete says every pod that serves the site was measured; an incomplete rate is a lower
// bound, which can only tell Above.
func BandOf(t Thresholds, rps float64, complete bool) Band {
	switch {
	case rps > float64(t.PromoteAbove):
		return BandAbove
	case !complete || math.IsNaN(rps):
		return BandUnknown
	case rps < float64(t.DemoteBelow):
		return BandBelow
	}
	return BandBetween
}

// Traffic is a site's measured traffic as the pool controller publishes it.
type Traffic struct {
	// Band is where the last measurement stands; Since when the site entered it.
	Band  Band
	Since time.Time
	// RPS is the last measurement (requests per second over every pod that serves the site).
	RPS float64
}

// Input is what one decision reads.
type Input struct {
	Thresholds Thresholds
	// Last is the previous decision (status.placement.auto); nil before the first.
	Last *v1alpha1.AutoPlacementStatus
	// OwnPods: the site has its own pods now (its Deployment exists): where a first decision leaves it.
	OwnPods bool
	Traffic Traffic
	Now     time.Time
}

// Decision is where the site runs from now on.
type Decision struct {
	// Target is PlacementDedicated or PlacementPool.
	Target string
	// Reason is PlacementReasonPromoted, PlacementReasonDemoted or PlacementReasonAutomatic; Message what was
	// measured against which threshold.
	Reason, Message string
	// DecidedAt is when the decision was made (Now for a new one, the last one's time when it stands).
	DecidedAt time.Time
	// Moved: this decision promotes or demotes the site.
	Moved bool
	// RecheckAfter > 0: decide again after this long even if nothing else changes (a window or a cooldown ends).
	RecheckAfter time.Duration
}

// Decide is the decision for in.
func Decide(in Input) Decision {
	t := in.Thresholds
	last := in.Last
	if last == nil || (last.Target != v1alpha1.PlacementPool && last.Target != v1alpha1.PlacementDedicated) {
		first := Decision{Target: v1alpha1.PlacementPool, Reason: v1alpha1.PlacementReasonAutomatic, DecidedAt: in.Now,
			Message: "automatic placement starts in the pool: the site has no pod of its own"}
		if in.OwnPods {
			first.Target = v1alpha1.PlacementDedicated
			first.Message = "automatic placement starts on the site's own pods, where it ran"
		}
		last = status(first, t)
	}
	stay := Decision{Target: last.Target, Reason: last.Reason, Message: last.Message, DecidedAt: last.DecidedAt.Time}
	if last.DecidedAt.IsZero() {
		stay.DecidedAt = in.Now
	}
	// The cooldown holds every move after a move; the first decision holds none.
	holdUntil := time.Time{}
	if last.Reason == v1alpha1.PlacementReasonPromoted || last.Reason == v1alpha1.PlacementReasonDemoted {
		holdUntil = last.DecidedAt.Add(t.Cooldown)
	}
	tr := in.Traffic
	switch {
	case last.Target == v1alpha1.PlacementPool && tr.Band == BandAbove:
		if in.Now.Before(holdUntil) {
			stay.RecheckAfter = holdUntil.Sub(in.Now)
			return stay
		}
		return Decision{Target: v1alpha1.PlacementDedicated, Reason: v1alpha1.PlacementReasonPromoted, DecidedAt: in.Now, Moved: true,
			Message: fmt.Sprintf("%s req/s, above promoteAbove %d req/s: promoted to its own pods", rate(tr.RPS), t.PromoteAbove)}
	case last.Target == v1alpha1.PlacementDedicated && tr.Band == BandBelow:
		// The window counts from the later of entering Below and the last decision: a rate measured before the
		// site came to its own pods says nothing about them.
		from := tr.Since
		if last.DecidedAt.After(from) {
			from = last.DecidedAt.Time
		}
		due := from.Add(t.DemoteAfter)
		if holdUntil.After(due) {
			due = holdUntil
		}
		if in.Now.Before(due) {
			stay.RecheckAfter = due.Sub(in.Now)
			return stay
		}
		return Decision{Target: v1alpha1.PlacementPool, Reason: v1alpha1.PlacementReasonDemoted, DecidedAt: in.Now, Moved: true,
			Message: fmt.Sprintf("%s req/s, below demoteBelow %d req/s for %s: demoted to the pool", rate(tr.RPS), t.DemoteBelow, in.Now.Sub(from).Round(time.Second))}
	}
	return stay
}

// Status is d as status.placement.auto, with the thresholds t in effect.
func Status(d Decision, t Thresholds) *v1alpha1.AutoPlacementStatus { return status(d, t) }

func status(d Decision, t Thresholds) *v1alpha1.AutoPlacementStatus {
	return &v1alpha1.AutoPlacementStatus{Target: d.Target, Reason: d.Reason, Message: d.Message, DecidedAt: metav1.NewTime(d.DecidedAt),
		PromoteAbove: t.PromoteAbove, DemoteBelow: t.DemoteBelow,
		DemoteAfter: metav1.Duration{Duration: t.DemoteAfter}, Cooldown: metav1.Duration{Duration: t.Cooldown}}
}

// rate prints a rate as people read it: whole requests per second, one decimal below 10.
func rate(rps float64) string {
	if rps < 10 {
		return fmt.Sprintf("%.1f", rps)
	}
	return fmt.Sprintf("%.0f", rps)
}
