package pool

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// The pool autoscaler (spec.autoscaling) on the pool pods' per-site counters (/sites): a rate over all its sites
// that needs more pods scales the server Deployment up at once, with status.autoscaling and a PoolScaled event; a
// pod that cannot be read holds the count (its share is unknown, never 0); once the rate has needed fewer pods for
// scaleDownDelaySeconds, down to the most that window needed, never below spec.replicas.
func TestPoolScalesOnItsSitesTraffic(t *testing.T) {
	p := newScaledPool(t, 4, 60)
	pool, s, counts, replicas := p.pool, p.s, p.counts, func(want int32) { t.Helper(); p.replicas(t, want) }
	status := func(what string, check func(*v1alpha1.PoolAutoscalingStatus) error) {
		t.Helper()
		waitPool(t, pool.Name, what, func(p *v1alpha1.StaticSitePool) error {
			if p.Status.Autoscaling == nil {
				return fmt.Errorf("no status.autoscaling: %s", describe(p))
			}
			return check(p.Status.Autoscaling)
		})
	}

	counts(100, 100)
	stepClock(t, s, 10*time.Second)
	// 1,000 + 1,500 requests in 10 s over both sites: 250 req/s at 100 per pod needs 3 pods, at once.
	counts(1100, 1600)
	stepClock(t, s, 10*time.Second)
	status("250 req/s, 3 pods", func(st *v1alpha1.PoolAutoscalingStatus) error {
		if st.CurrentRPS != 250 || !st.Measured || st.DesiredReplicas != 3 || st.LastScaleTime == nil {
			return fmt.Errorf("%+v", *st)
		}
		return nil
	})
	replicas(3)
	waitPoolEvent(t, pool.Name, "Normal PoolScaled 3 pool pods (was 1): 250 req/s at 100 req/s per pod needs 3 pods")

	// The pod's answer cannot be read: the rate is unknown, nothing is removed however long it lasts.
	s.mu.Lock()
	s.body = "not the /sites answer"
	s.mu.Unlock()
	stepClock(t, s, 10*time.Second)
	stepClock(t, s, 2*time.Minute)
	status("unreadable pod: 3 pods kept", func(st *v1alpha1.PoolAutoscalingStatus) error {
		if st.Measured || st.DesiredReplicas != 3 {
			return fmt.Errorf("%+v", *st)
		}
		return nil
	})
	replicas(3)

	// Readable again and quiet: the window opens; 150 req/s inside it needs 2 pods, so after 60 s of fewer
	// than 3 the pool goes to 2, not to 1; 60 s more of nothing and it is back at spec.replicas.
	counts(1100, 1600)
	stepClock(t, s, 10*time.Second)
	counts(2100, 2100)
	stepClock(t, s, 10*time.Second)
	stepClock(t, s, 30*time.Second)
	status("quiet for 50 s: 3 pods kept", func(st *v1alpha1.PoolAutoscalingStatus) error {
		if !st.Measured || st.CurrentRPS != 0 || st.DesiredReplicas != 3 {
			return fmt.Errorf("%+v", *st)
		}
		return nil
	})
	replicas(3)
	stepClock(t, s, 30*time.Second)
	replicas(2)
	waitPoolEvent(t, pool.Name, "Normal PoolScaled 2 pool pods (was 3): 0 req/s at 100 req/s per pod: 2 pods, the most needed over the last 1m0s")
	stepClock(t, s, 30*time.Second)
	stepClock(t, s, 31*time.Second)
	replicas(1)
	status("back at spec.replicas", func(st *v1alpha1.PoolAutoscalingStatus) error {
		if st.DesiredReplicas != 1 {
			return fmt.Errorf("%+v", *st)
		}
		return nil
	})
}

// The CRD refuses an autoscaling range that cannot hold spec.replicas, and a target of no request, naming the field.
func TestPoolAutoscalingValidation(t *testing.T) {
	for _, c := range []struct {
		name string
		spec v1alpha1.StaticSitePoolSpec
		want string
	}{
		{"max below replicas", v1alpha1.StaticSitePoolSpec{Replicas: ptr.To[int32](3),
			Autoscaling: &v1alpha1.PoolAutoscalingSpec{MaxReplicas: 2, TargetRPSPerPod: 100}},
			"spec.autoscaling.maxReplicas must be at least spec.replicas"},
		{"max below the default replicas", v1alpha1.StaticSitePoolSpec{
			Autoscaling: &v1alpha1.PoolAutoscalingSpec{MaxReplicas: 1, TargetRPSPerPod: 100}},
			"spec.autoscaling.maxReplicas must be at least spec.replicas"},
		{"no target", v1alpha1.StaticSitePoolSpec{Autoscaling: &v1alpha1.PoolAutoscalingSpec{MaxReplicas: 4}},
			"spec.autoscaling.targetRPSPerPod"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.spec.Namespace = "pool-objects"
			p := &v1alpha1.StaticSitePool{ObjectMeta: metav1.ObjectMeta{Name: uniqueName("refused")}, Spec: c.spec}
			err := k8s.Create(context.Background(), p)
			if err == nil {
				_ = k8s.Delete(context.Background(), p)
				t.Fatalf("created, want refused with %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("refused with %v, want %q", err, c.want)
			}
		})
	}
}
