package autoscaling

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// perPodTarget is the per-pod request rate the autoscaler aims at, and where it comes from.
type perPodTarget struct {
	// rps is what the decision compares the pods' average rate with.
	rps float64
	// source and message go to status.autoscaling.targetSource and targetMessage.
	source  v1alpha1.AutoscalingTargetSource
	message string
}

// resolveTarget is the per-pod target of spec.autoscaling for a site of the given spec.cpu whose measured capacity
// is capacity (status.capacity, nil when none was measured). In order:
//
//  1. targetUtilization with a current capacity (measured against the template the serving pods run) of more
//     than 0 req/s: floor(rpsPerPod × targetUtilization / 100), at least 1 (source Capacity). Rounding down
//     never aims above the share asked for, and the decision uses exactly the figure status shows.
//  2. targetRPSPerPod (source TargetRPSPerPod).
//  3. targetRPSPerCPU × cpu (source TargetRPSPerCPU).
//  4. targetUtilization alone: DefaultTargetRPSPerCPU × cpu (source Default).
//
// When targetUtilization is set but not used, the message says why (no capacity yet, or one measured for another
// template). Without targetUtilization, 2 and 3 are the autoscaler's behaviour before capacity existed. The error
// is for a spec that bypassed the CRD's validation (no target, or both RPS targets, or a value out of range).
func resolveTarget(a *v1alpha1.AutoscalingSpec, cpu resource.Quantity, capacity *v1alpha1.CapacityStatus) (perPodTarget, error) {
	if a.TargetRPSPerPod != nil && a.TargetRPSPerCPU != nil {
		return perPodTarget{}, errors.New("set at most one of spec.autoscaling.targetRPSPerPod and spec.autoscaling.targetRPSPerCPU")
	}
	util := a.TargetUtilization
	if util != nil && (*util < 1 || *util > 100) {
		return perPodTarget{}, fmt.Errorf("spec.autoscaling.targetUtilization must be between 1 and 100, is %d", *util)
	}
	why := "" // why targetUtilization is not used, when it is set
	if util != nil {
		switch {
		case capacity == nil:
			why = "no capacity measured yet"
		case !capacity.Current:
			why = fmt.Sprintf("the capacity of %d req/s per pod was measured for template %s, not the one serving (not current)",
				capacity.RPSPerPod, capacity.MeasuredAgainst.ID)
		case capacity.RPSPerPod <= 0:
			why = fmt.Sprintf("the measured capacity is %d req/s per pod", capacity.RPSPerPod)
		default:
			return fromCapacity(*util, capacity), nil
		}
	}

	var t perPodTarget
	cpuFactor := cpu.AsApproximateFloat64()
	switch {
	case a.TargetRPSPerPod != nil:
		t = perPodTarget{rps: float64(*a.TargetRPSPerPod), source: v1alpha1.TargetFromTargetRPSPerPod,
			message: fmt.Sprintf("targetRPSPerPod %d", *a.TargetRPSPerPod)}
	case a.TargetRPSPerCPU != nil:
		t = perPodTarget{rps: float64(*a.TargetRPSPerCPU) * cpuFactor, source: v1alpha1.TargetFromTargetRPSPerCPU,
			message: fmt.Sprintf("targetRPSPerCPU %d × cpu %s", *a.TargetRPSPerCPU, cpu.String())}
	case util != nil:
		t = perPodTarget{rps: v1alpha1.DefaultTargetRPSPerCPU * cpuFactor, source: v1alpha1.TargetFromDefault,
			message: fmt.Sprintf("default %d req/s per CPU × cpu %s", v1alpha1.DefaultTargetRPSPerCPU, cpu.String())}
	default:
		return perPodTarget{}, errors.New("spec.autoscaling needs a target: targetUtilization, targetRPSPerPod or targetRPSPerCPU")
	}
	if t.rps <= 0 {
		return perPodTarget{}, fmt.Errorf("the per-pod target (%s) must be positive", t.message)
	}
	if why != "" {
		t.message = fmt.Sprintf("targetUtilization %d%% not used: %s; %s", *util, why, t.message)
	}
	return t, nil
}

// fromCapacity is util percent of a current capacity with rpsPerPod > 0, rounded down to whole requests per second
// (at least 1). rpsPerPod is split into hundreds and the rest so the product cannot overflow.
func fromCapacity(util int32, c *v1alpha1.CapacityStatus) perPodTarget {
	u := int64(util)
	rps := max(c.RPSPerPod/100*u+c.RPSPerPod%100*u/100, 1)
	return perPodTarget{rps: float64(rps), source: v1alpha1.TargetFromCapacity,
		message: fmt.Sprintf("%d%% of %d req/s per pod measured (%s, template %s, %s)", util, c.RPSPerPod,
			c.Source, c.MeasuredAgainst.ID, c.MeasuredAt.UTC().Format(time.RFC3339))}
}
