package staticsite

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/capacitygate"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/capacity"
	"hyperstatic.dev/hyperstatic/internal/reconcile"
)

// deriveStatus is the one place the StaticSite controller's part of the status is decided: Ready, Reconciling and
// Stalled are set here and nowhere else. It is pure: from the site as the pass read it (its spec, and the status the
// last pass wrote, for what cannot be observed again: whether it was Ready, how many pods were) and the pass's
// observation, it returns the new status; condition transitions are stamped with the pass's one clock reading. It
// never touches status.autoscaling nor conditions it does not own (the autoscaler writes those).
func deriveStatus(site *v1alpha1.StaticSite, o *observation) v1alpha1.StaticSiteStatus {
	s := *site.Status.DeepCopy()
	set := reconcile.NewConditions(&s.Conditions, site.Generation, o.now)
	if o.hostnames != nil {
		// The hostname step runs first: what it decided is recorded even when a later step failed, so a site keeps
		// its place as the first claimant and one waiting for it is not kept waiting by its failure. A refused
		// spec (no step ran) leaves the record as it was: its route still serves those names.
		s.Hostnames = o.hostnames.held
	}
	switch {
	case o.refused != nil:
		// The tenancy policy refuses the spec: no step ran. The rest of the status stays as the last allowed pass
		// left it.
		s.ObservedGeneration = site.Generation
		set.SetProblem(v1alpha1.ConditionStalled, metav1.ConditionTrue, o.refused)
		set.SetProblem(v1alpha1.ConditionReady, metav1.ConditionFalse, o.refused)
		set.Remove(v1alpha1.ConditionReconciling)
		if r := o.placeRefusal; r != nil {
			// Its pool refuses the site (pool.go): status.placement stays where it runs.
			set.Set(v1alpha1.ConditionPlaced, metav1.ConditionFalse, r.Reason, r.Error())
		}
		return s
	case o.err != nil:
		// A transient failure: say so and keep the rest of the status as it was (but the hostnames, above); the
		// pass is retried.
		set.Set(v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonRetryingAfterError, o.err.Error())
		return s
	}

	s.ObservedGeneration = site.Generation
	s.Selector = sitechild.Selector(site)
	s.URL = desired.URL(site)
	s.HTTPSURL = desired.HTTPSURL(site)
	s.Protocols = desired.Protocols(site)
	s.PublicURLs = o.publicURLs
	s.Certificate = nil
	if o.certificate != nil {
		s.Certificate = o.certificate.status
	}
	if o.pool != nil && o.pool.phase == phasePooled {
		derivePooled(&s, site, o, set) // poolstatus.go
		derivePlacement(&s, site, o, set)
		return s
	}
	s.ContentSource = o.content.Source
	s.ContentRevision = o.content.Revision
	if o.git != nil && s.ContentRevision == "" {
		// A Git site without the fetcher's commit in this pass: gitcontent's fallback (what most ready pods serve,
		// or what the last pass said).
		s.ContentRevision = o.git.ContentRevision(site)
	}
	s.Deploys = o.git.Deploys(site)   // gitcontent/deploystatus.go
	s.Previews = o.git.Previews(site) // gitcontent/previewstatus.go
	mem := o.memory.DeepCopy()
	s.Memory = &mem
	if d := o.deployment; d != nil {
		s.Replicas, s.ReadyReplicas, s.UpdatedReplicas = d.Status.Replicas, d.Status.ReadyReplicas, d.Status.UpdatedReplicas
	} else if !o.skipDeployment {
		s.Replicas, s.ReadyReplicas, s.UpdatedReplicas = 0, 0, 0
	}

	content := contentVerdictOf(o) // contentverdict.go
	set.Set(v1alpha1.ConditionContentAvailable, content.status, content.reason, content.message)
	set.Set(o.pinned.Type, o.pinned.Status, o.pinned.Reason, o.pinned.Message)
	setDeployPinned(set, o.git.PinCondition()) // deploystatus.go
	// Rebuilt every pass, like every field above: absent when no pod could be read (the condition says why).
	s.Content = o.served
	if s.Content != nil && o.git != nil {
		// A Git site's revision comes with the content reading: which commit the fetcher published and how many
		// ready pods serve it.
		s.Content = s.Content.DeepCopy()
		s.Content.Revision = o.git.ServedRevision()
	}
	inMemory := contentInMemoryCondition(o.served, o.notMeasured)
	set.Set(inMemory.Type, inMemory.Status, inMemory.Reason, inMemory.Message)
	var sv siteValueVerdict
	if o.siteValue != nil {
		sv = siteValueVerdictOf(o.siteValue) // sitevaluestatus.go
		s.SiteValue = siteValueStatus(o.siteValue)
		set.Set(sv.condition.Type, sv.condition.Status, sv.condition.Reason, sv.condition.Message)
	}
	// The exposure conditions are informational: none of them changes Ready (see exposure_reasons.go).
	for _, e := range []struct {
		typ string
		c   *metav1.Condition
	}{{v1alpha1.ConditionTLSReady, o.tls}, {v1alpha1.ConditionCertificateReady, o.certificate.conditionOf()},
		{v1alpha1.ConditionRouteApplied, o.route}, {v1alpha1.ConditionPodMonitorApplied, o.podMonitor},
		{v1alpha1.ConditionAccessApplied, o.access}} {
		if e.c == nil {
			set.Remove(e.typ)
		} else {
			set.Set(e.typ, e.c.Status, e.c.Reason, e.c.Message)
		}
	}

	deriveCapacity(&s, site, o, set)
	deriveProgress(&s, site, o, set, content, sv)
	derivePlacement(&s, site, o, set) // poolstatus.go
	return s
}

// deriveCapacity sets status.capacity, status.performanceGate, CapacityMeasured and RolloutBlocked from the
// capacity step's result. None of them changes Ready: a blocked candidate leaves the serving pods as they were.
func deriveCapacity(s *v1alpha1.StaticSiteStatus, site *v1alpha1.StaticSite, o *observation, set reconcile.Conditions) {
	cs := &o.capacity
	if !cs.Wanted {
		s.Capacity, s.PerformanceGate = nil, nil
		set.Remove(v1alpha1.ConditionCapacityMeasured)
		set.Remove(v1alpha1.ConditionRolloutBlocked)
		return
	}
	s.Capacity, s.PerformanceGate = cs.Status, cs.Gate
	if c := cs.Measured; c.Type != "" {
		set.Set(c.Type, c.Status, c.Reason, c.Message)
	}
	if cs.Gate == nil {
		set.Remove(v1alpha1.ConditionRolloutBlocked)
		return
	}
	status := metav1.ConditionFalse
	blocked, reason := capacity.GateReason(cs.Gate, capacitygate.GateSpec(site))
	if blocked {
		status = metav1.ConditionTrue
	}
	set.Set(v1alpha1.ConditionRolloutBlocked, status, reason, cs.Gate.Message)
}

// deriveProgress sets Ready, Reconciling and Stalled from the problems the steps found, the Deployment's rollout and
// the server-image queue. The first of these that applies wins: a problem only a person can fix (Stalled), content
// that no pod can serve yet for a reason that may pass (a Git site's first fetch), a scale-up (Ready stays), a
// rollout under way, and, once the rollout is done, pods catching up with a new site value and the queue for a new
// default server image (Reconciling, Ready unchanged: the site serves, on its previous rules or current image). A
// site value a pod refused is a problem only a person can fix (Stalled), after the children refused.
func deriveProgress(s *v1alpha1.StaticSiteStatus, site *v1alpha1.StaticSite, o *observation, set reconcile.Conditions, content contentVerdict, sv siteValueVerdict) {
	// What the last complete pass reported: a scale-up keeps Ready only if no pod that was ready has been lost.
	wasReady, readyBefore := meta.IsStatusConditionTrue(site.Status.Conditions, v1alpha1.ConditionReady), site.Status.ReadyReplicas
	ro := rolloutOf(o.deployment, desired.Replicas(site), o.templateChanged)
	var stalled *problem
	switch {
	case content.stall != nil:
		stalled = content.stall
	case o.rejected != nil:
		stalled = o.rejected
	case sv.stall != nil:
		stalled = sv.stall
	case ro.stalled:
		stalled = &problem{Reason: ro.reason, Message: ro.message}
	}

	switch {
	case stalled != nil:
		setStalled(set, stalled)
	case !ro.done && servedByPoolMeanwhile(site, o): // poolstatus.go
		set.Remove(v1alpha1.ConditionStalled)
		set.Set(v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonMovingToDedicated, ro.message)
		set.Set(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable,
			fmt.Sprintf("StaticSitePool %s serves the site while its own pods start (%s)", o.pool.name, ro.message))
	case content.wait != nil && !ro.done:
		set.Remove(v1alpha1.ConditionStalled)
		set.SetProblem(v1alpha1.ConditionReconciling, metav1.ConditionTrue, content.wait)
		set.SetProblem(v1alpha1.ConditionReady, metav1.ConditionFalse, content.wait)
	case ro.sameTemplate && wasReady && s.ReadyReplicas > 0 && s.ReadyReplicas >= readyBefore:
		// A scale-up: the new pods are starting, the ones serving before still serve. Not "no longer ready".
		reason := ro.reason
		if reason == v1alpha1.ReasonWaitingForReadyPods {
			reason = v1alpha1.ReasonScalingUp
		}
		set.Remove(v1alpha1.ConditionStalled)
		set.Set(v1alpha1.ConditionReconciling, metav1.ConditionTrue, reason, ro.message)
		set.Set(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable,
			fmt.Sprintf("%d of %d pods ready (scaling up), serving %s at %s", s.ReadyReplicas, desired.Replicas(site), s.ContentRevision, s.URL))
	case !ro.done:
		set.Remove(v1alpha1.ConditionStalled)
		set.Set(v1alpha1.ConditionReconciling, metav1.ConditionTrue, ro.reason, ro.message)
		set.Set(v1alpha1.ConditionReady, metav1.ConditionFalse, ro.reason, ro.message)
	default:
		// A Reconciling=True kept from pass to pass keeps its transition time (whatever its reason was).
		var queuedSince *metav1.Time
		if old := meta.FindStatusCondition(s.Conditions, v1alpha1.ConditionReconciling); old != nil && old.Status == metav1.ConditionTrue {
			queuedSince = old.LastTransitionTime.DeepCopy()
		}
		set.Remove(v1alpha1.ConditionStalled)
		set.Remove(v1alpha1.ConditionReconciling)
		if want := desired.Replicas(site); want == 0 {
			set.Set(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonScaledToZero, "the site is scaled to zero replicas")
		} else {
			set.Set(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable,
				fmt.Sprintf("%d of %d pods ready, serving %s at %s", s.ReadyReplicas, want, s.ContentRevision, s.URL))
		}
		if sv.pending != "" {
			// Pods catching up with a rule change: they serve, the previous rules for a second or two.
			set.Set(v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonSiteValuePending, sv.pending)
		}
		if o.capacity.MeasuringCanary != "" {
			set.Set(v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonMeasuringCanary, o.capacity.MeasuringCanary)
		}
		if reason, msg := moveInProgress(o); reason != "" { // poolstatus.go
			set.Set(v1alpha1.ConditionReconciling, metav1.ConditionTrue, reason, msg)
		}
		if o.serverImageQueued != "" {
			set.Set(v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonServerImageUpgradeQueued, o.serverImageQueued)
		}
		// Removed and set again above, so the time would be this pass's: a pending site value (pods catch up for
		// seconds, the operator passes every 2-3 s) rewrote the status on every pass (bench-operator,
		// operator-pools-2026-12-03.md). kstatus moves the time only when the status changes.
		if now := meta.FindStatusCondition(s.Conditions, v1alpha1.ConditionReconciling); now != nil && queuedSince != nil {
			now.LastTransitionTime = *queuedSince
		}
	}
}

// setStalled: Stalled=True and Ready=False with the problem, Reconciling removed (kstatus: a stalled object is not
// progressing).
func setStalled(set reconcile.Conditions, p *problem) {
	set.SetProblem(v1alpha1.ConditionStalled, metav1.ConditionTrue, p)
	set.Remove(v1alpha1.ConditionReconciling)
	set.SetProblem(v1alpha1.ConditionReady, metav1.ConditionFalse, p)
}
