package autoscaling

import (
	"context"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// laggingClient is the API server seen through a cache that can fall behind: while frozen is set, a Get of the
// StaticSite returns that older copy (as an informer that has not yet delivered an event would). It also counts
// the requests on the scale subresource.
type laggingClient struct {
	mu                 sync.Mutex
	frozen             *v1alpha1.StaticSite
	scaleGets, updates int
}

func (l *laggingClient) wrap(c client.WithWatch) client.WithWatch {
	return interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			l.mu.Lock()
			frozen := l.frozen
			l.mu.Unlock()
			if s, ok := obj.(*v1alpha1.StaticSite); ok && frozen != nil {
				frozen.DeepCopyInto(s)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
		SubResourceGet: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceGetOption) error {
			l.mu.Lock()
			l.scaleGets++
			l.mu.Unlock()
			return c.SubResource(sub).Get(ctx, obj, subObj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			l.mu.Lock()
			if sub == "scale" {
				l.updates++
			}
			l.mu.Unlock()
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
}

func (l *laggingClient) freeze(s *v1alpha1.StaticSite) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.frozen = s
}

// newLaggingStepper is a stepper whose autoscaler reads through a laggingClient.
func newLaggingStepper(t *testing.T, site *v1alpha1.StaticSite) (*stepper, *laggingClient) {
	t.Helper()
	s := newStepper(t, site)
	l := &laggingClient{}
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	s.r = New(l.wrap(c), s.recorder, s.load, WithClock(s.clock))
	return s, l
}

// A pass takes the current count from the (cached) site: at 1,000 autoscaled sites a GET of the scale
// subresource per pass was 200 quorum reads a second (docs/bench/operator-2026-11-27.md).
func TestPassesDoNotGetTheScale(t *testing.T) {
	ns := newNamespace(t, "autoscale-noget")
	s, l := newLaggingStepper(t, newSite(ns, "web", 1, &v1alpha1.AutoscalingSpec{MaxReplicas: 6, TargetRPSPerPod: ptr.To[int64](100)}))
	s.load.setRPS(siteKey(ns, "web"), 350)
	s.pass()
	for range 4 {
		s.step()
	}
	if len(s.rescales) == 0 {
		t.Fatal("350 req/s against a target of 100 never rescaled: the test no longer exercises a rescale")
	}
	if l.scaleGets != 0 {
		t.Errorf("%d GETs of the scale subresource over 5 passes, want 0", l.scaleGets)
	}
}

// After its own rescale, the autoscaler does not decide on a cache that has not seen it: no decision, no request.
func TestLaggingCacheAfterRescaleDoesNotDecide(t *testing.T) {
	ns := newNamespace(t, "autoscale-lag")
	s, l := newLaggingStepper(t, newSite(ns, "web", 1, &v1alpha1.AutoscalingSpec{MaxReplicas: 6, TargetRPSPerPod: ptr.To[int64](100)}))
	s.load.setRPS(siteKey(ns, "web"), 350)
	s.pass()
	before := s.site()
	s.step()
	if len(s.rescales) != 1 {
		t.Fatalf("rescales %v after the load step, want one", s.rescales)
	}
	l.freeze(before) // the cache still shows the site as it was before the rescale
	updates := l.updates
	s.advance()
	if res := s.pass(); res.RequeueAfter != staleRetry {
		t.Fatalf("a pass on a cache behind our own rescale asked for %+v, want a retry after %v", res, staleRetry)
	}
	if l.updates != updates || len(s.rescales) != 1 {
		t.Errorf("the lagging pass sent %d scale updates (rescales %v), want none", l.updates-updates, s.rescales)
	}
	l.freeze(nil)
	s.advance()
	if res := s.pass(); res.RequeueAfter != s.interval {
		t.Fatalf("once the cache caught up the pass asked for %+v, want the interval", res)
	}
}

// Someone else changed the site after the cache saw it: the rescale decided on the older view conflicts, and the
// pass retries soon on the newer one instead of reporting a failure. The other writer's count stays.
func TestScaleConflictRetriesWithoutFailure(t *testing.T) {
	ns := newNamespace(t, "autoscale-conflict")
	s, l := newLaggingStepper(t, newSite(ns, "web", 1, &v1alpha1.AutoscalingSpec{MaxReplicas: 6, TargetRPSPerPod: ptr.To[int64](100)}))
	s.load.setRPS(siteKey(ns, "web"), 350)
	s.pass()
	l.freeze(s.site())
	manual := s.site()
	manual.Spec.Replicas = ptr.To[int32](2)
	if err := env.Client.Update(s.ctx, manual); err != nil {
		t.Fatal(err)
	}
	s.advance()
	if res := s.pass(); res.RequeueAfter != staleRetry {
		t.Fatalf("a conflicting rescale asked for %+v, want a retry after %v", res, staleRetry)
	}
	if l.updates != 1 {
		t.Fatalf("%d scale updates, want the one that conflicted: the test no longer exercises a conflict", l.updates)
	}
	site := s.site()
	if got := replicasOf(site); got != 2 {
		t.Errorf("spec.replicas %d after the conflict, want the other writer's 2", got)
	}
	if c := meta.FindStatusCondition(site.Status.Conditions, v1alpha1.ConditionAbleToScale); c != nil && c.Status == metav1.ConditionFalse {
		t.Errorf("a conflict reported as a failure: %+v", c)
	}
	for _, e := range s.events {
		if strings.Contains(e.text, v1alpha1.EventReasonFailedRescale) {
			t.Errorf("a conflict recorded as a failure: %s", e.text)
		}
	}
}
