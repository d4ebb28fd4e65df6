package staticsite

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/capacitygate"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/gitcontent"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
	"hyperstatic.dev/hyperstatic/internal/reconcile"
)

// observation is what one reconcile pass learns. The steps fill it in order; deriveStatus turns it into the status.
type observation struct {
	site *v1alpha1.StaticSite
	// now is the injected clock's one reading, taken at the start of the pass: every decision and condition
	// timestamp of the pass uses it.
	now time.Time
	// tun is the Reconciler's tunables with their defaults resolved, once per pass.
	tun tunables
	// refused: the tenancy policy refuses the spec (PolicyViolation), or its pool refuses the site
	// (placeRefusal); no step ran.
	refused      *problem
	placeRefusal *poolplacement.Refusal
	// pool: a site in a pool, or moving into or out of one (pool.go); nil for a site on its own pods only.
	pool *poolPass
	// auto: the decision of automatic placement (poolauto.go); nil unless spec.placement.mode is Auto.
	auto *autoPass
	// err is the transient error that stopped the pass (retried with backoff); the steps after it did not run.
	err error

	content    desired.Content
	memory     resource.Quantity
	deployment *appsv1.Deployment // as this pass's apply left it; nil when it did not exist
	// templateChanged: this pass's apply changed the pod template, so the Deployment's status (until the Deployment
	// controller observes the new generation) describes pods of the old template.
	templateChanged bool
	pods            []corev1.Pod // the site's pods that are not terminating

	contentProblem *problem // ContentAvailable=False reason and message
	contentReason  string   // ContentAvailable=True reason and message
	contentMessage string
	rejected       *problem // an owned object the API server refused (Stalled)
	skipDeployment bool     // content that cannot be mounted: leave the running Deployment alone
	pinned         metav1.Condition
	served         *v1alpha1.ServedContent // a ready pod's content reading; nil: none, see notMeasured
	notMeasured    string                  // why there is no reading (the ContentInMemory=Unknown message)
	requeueAfter   time.Duration

	// gate: the performance gate's view of the live and desired templates (nil: gate off, or no Deployment yet).
	gate *capacitygate.View
	// capacity: what the capacity step measured and decided (capacitygate.State; step_capacity.go).
	capacity capacitygate.State

	// serverImageQueued: the site waits for its turn to move to a new default server image (the Reconciling message).
	serverImageQueued string

	// git: what the Git steps saw (step_git.go); nil for other sources. deriveStatus reads it (status.go, contentverdict.go).
	git *gitcontent.State

	// siteValue: the rendered site value and what the pods say of it (step_sitevalue.go); nil until that step ran.
	siteValue *siteValueState
	// scraped: the pods' metrics read in this pass (scrapeInPass), so the steps that read a pod share one request.
	scraped map[types.UID]podmetrics.Sample

	// hostnames: which of spec.hostnames the site holds (step_hostnames.go); nil until that step ran.
	hostnames *hostnameClaims

	// Exposure (nil: the spec field is unset, the condition goes): TLSReady, CertificateReady with
	// status.certificate (step_certificate.go), RouteApplied and PodMonitorApplied, and the public URLs of the route
	// once it exists.
	tls         *metav1.Condition
	access      *metav1.Condition // AccessApplied (step_access.go)
	certificate *certificateState
	route       *metav1.Condition
	podMonitor  *metav1.Condition
	publicURLs  []string
}

// problem is a condition's reason and message, recorded by a step instead of an error no retry can fix.
type problem = reconcile.Problem

// conflictRetry is how soon a pass whose status write lost a race (with the autoscaler) runs again.
const conflictRetry = 200 * time.Millisecond

// reject records a child the API server refused or that is not the site's; the first one found is reported.
func (st *observation) reject(p *problem) {
	if st.rejected == nil {
		st.rejected = p
	}
}

func (st *observation) requeue(d time.Duration) {
	if st.requeueAfter == 0 || d < st.requeueAfter {
		st.requeueAfter = d
	}
}

// step is one sub-reconciler. Steps run in order; an error stops the pass and is retried with backoff. Problems a
// retry cannot fix are recorded in the observation instead, and end as conditions.
type step func(ctx context.Context, st *observation) error

// notOwned records a child that exists under the site's name without being the site's: the site is Stalled until
// someone removes or renames it (periodic retries notice, see StalledRetry).
func notOwned(st *observation, err error) bool {
	var e *notOwnedError
	if !errors.As(err, &e) {
		return false
	}
	st.reject(&problem{Reason: v1alpha1.ReasonNotOwned, Message: e.Error()})
	return true
}

// childRefused turns an apply error of a child into Stalled when only a person can fix it (a foreign object of
// that name: NotOwned; a refusal by the API server: reason), else returns it to retry the pass.
func childRefused(st *observation, kind, reason string, err error) error {
	if notOwned(st, err) {
		return nil
	}
	if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
		st.reject(&problem{Reason: reason, Message: err.Error()})
		return nil
	}
	return fmt.Errorf("apply %s: %w", kind, err)
}
