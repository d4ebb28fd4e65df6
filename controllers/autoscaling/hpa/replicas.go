// Package hpa is the HorizontalPodAutoscaler v2 decision, re-implemented as pure functions over plain values so
// Hyperstatic can scale StaticSites on requests per second without a metrics adapter. It follows the behaviour
// of kube-controller-manager's pkg/controller/podautoscaler (replica_calculator.go for the replica count from a
// Pods-type metric, horizontal.go for stabilization windows, rate policies and min/max clamps). Test names cite
// the HPA behaviour each case checks.
package hpa

import (
	"errors"
	"math"
)

// PodState is how the replica calculation treats a pod, as the HPA groups pods.
type PodState int

const (
	// PodReady pods count in the usage ratio when they have a metric, and are "missing" when they do not.
	PodReady PodState = iota
	// PodUnready pods (pending, or running but not Ready) are set aside; on a scale-up they count as using 0.
	PodUnready
	// PodIgnored pods (being deleted, or failed) are left out entirely.
	PodIgnored
)

// Pod is one pod of the scale target with its metric, if one was measured.
type Pod struct {
	Name  string
	State PodState
	// HasValue says Value was measured; a ready pod without a value is a "missing" pod.
	HasValue bool
	Value    float64
}

// Tolerances is the dead band around the target, per direction (HPA: --horizontal-pod-autoscaler-tolerance,
// or behavior.scaleUp/scaleDown.tolerance). A usage ratio r keeps the current count when
// 1-ScaleDown <= r <= 1+ScaleUp.
type Tolerances struct {
	ScaleUp   float64
	ScaleDown float64
}

// DefaultTolerance is the HPA's default tolerance, 10 %.
const DefaultTolerance = 0.1

func (t Tolerances) within(ratio float64) bool {
	return 1.0-t.ScaleDown <= ratio && ratio <= 1.0+t.ScaleUp
}

// Errors the replica calculation returns when it cannot produce a count (the HPA then does not scale).
var (
	ErrNoPods    = errors.New("no pods returned by selector while calculating replica count")
	ErrNoMetrics = errors.New("did not receive metrics for targeted pods (pods might be unready)")
)

// Usage is what the calculation observed.
type Usage struct {
	// Average is the mean metric over the ready pods that have one (the number compared with the target).
	Average float64
	// Total is the sum of the metric over those pods.
	Total float64
	// Measured is how many pods contributed.
	Measured int
	// Ratio is Average / target.
	Ratio float64
}

// ReplicaCount is the replica count the HPA computes for a Pods-type metric with an AverageValue target
// (calcPlainMetricReplicas): desired = ceil(readyPods × average/target), no change within tolerance, missing
// pods assumed at 100 % of target when scaling down and 0 when scaling up, unready pods assumed at 0 when
// scaling up, and no change when those assumptions reverse the direction of the scale.
func ReplicaCount(currentReplicas int32, pods []Pod, target float64, tol Tolerances) (int32, Usage, error) {
	if len(pods) == 0 {
		return 0, Usage{}, ErrNoPods
	}
	if target <= 0 {
		return 0, Usage{}, errors.New("target must be positive")
	}
	var sum float64
	var measured, missing, unready int
	for _, p := range pods {
		switch {
		case p.State == PodIgnored:
		case p.State == PodUnready:
			unready++
		case !p.HasValue:
			missing++
		default:
			measured++
			sum += p.Value
		}
	}
	if measured == 0 {
		return 0, Usage{}, ErrNoMetrics
	}
	avg := sum / float64(measured)
	ratio := avg / target
	usage := Usage{Average: avg, Total: sum, Measured: measured, Ratio: ratio}

	rebalanceUnready := unready > 0 && ratio > 1.0
	if !rebalanceUnready && missing == 0 {
		if tol.within(ratio) {
			return currentReplicas, usage, nil
		}
		return ceilReplicas(ratio * float64(measured)), usage, nil
	}

	// Re-run the ratio with assumed values for the pods set aside.
	newSum, n := sum, measured
	if missing > 0 {
		if ratio < 1.0 {
			newSum += float64(missing) * target // scale-down: missing pods at 100 % of target
		}
		// scale-up (ratio >= 1): missing pods at 0
		n += missing
	}
	if rebalanceUnready {
		n += unready // at 0
	}
	newRatio := newSum / float64(n) / target
	if tol.within(newRatio) || (ratio < 1.0 && newRatio > 1.0) || (ratio > 1.0 && newRatio < 1.0) {
		return currentReplicas, usage, nil
	}
	newReplicas := ceilReplicas(newRatio * float64(n))
	if (newRatio < 1.0 && newReplicas > currentReplicas) || (newRatio > 1.0 && newReplicas < currentReplicas) {
		return currentReplicas, usage, nil
	}
	return newReplicas, usage, nil
}

// ceilReplicas rounds up, ignoring float noise of one part in 1e9 so 1.2 × 5 pods is 6, never 7.
func ceilReplicas(x float64) int32 {
	c := math.Ceil(x - 1e-9)
	if c > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(c)
}
