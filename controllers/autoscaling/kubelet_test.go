package autoscaling

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/podstate"
)

// fakeKubelet plays ReplicaSet, scheduler and kubelet for one site, which envtest does not run: it keeps as many
// pods as spec.replicas says, each Running and Ready at once (there is no container to start), and tells the load
// model which pods receive traffic. A pod gets its share just before the API shows it Ready and loses it just
// before it is deleted, so the pods the autoscaler sees Ready never carry more than the site's total load: a lag
// between the two (only possible when the kubelet runs concurrently with the autoscaler) can make it measure
// less, never more.
//
// By default every pod is Ready at once. readyPerConverge > 0 models slow starts: new pods are created Pending,
// and each converge makes at most that many of them Ready, oldest first.
type fakeKubelet struct {
	c                client.Client
	load             *loadModel
	ns, site         string
	created          int
	readyPerConverge int
}

func newFakeKubelet(c client.Client, load *loadModel, ns, site string) *fakeKubelet {
	return &fakeKubelet{c: c, load: load, ns: ns, site: site}
}

// converge makes one round: reads spec.replicas, creates the missing pods and deletes the extra ones. Called by
// the step-by-step tests between autoscaler passes, it leaves the pods exactly at spec.replicas when it returns.
func (k *fakeKubelet) converge(ctx context.Context) error {
	s := &v1alpha1.StaticSite{}
	if err := k.c.Get(ctx, types.NamespacedName{Namespace: k.ns, Name: k.site}, s); err != nil {
		return fmt.Errorf("kubelet: get site: %w", err)
	}
	want := 1
	if s.Spec.Replicas != nil {
		want = int(*s.Spec.Replicas)
	}
	pods := &corev1.PodList{}
	if err := k.c.List(ctx, pods, client.InNamespace(k.ns), client.MatchingLabels{v1alpha1.LabelSite: k.site}); err != nil {
		return fmt.Errorf("kubelet: list pods: %w", err)
	}
	readies := k.readyPerConverge
	if readies == 0 {
		readies = want
	}
	for i := range min(want, len(pods.Items)) {
		if p := &pods.Items[i]; !podstate.Serving(p) && readies > 0 {
			readies--
			if err := k.markReady(ctx, p); err != nil { // a pending pod, or one whose first status write failed
				return err
			}
		}
	}
	for i := len(pods.Items); i < want; i++ {
		p, err := k.createPod(ctx)
		if err != nil {
			return err
		}
		if readies > 0 {
			readies--
			if err := k.markReady(ctx, p); err != nil {
				return err
			}
		}
	}
	for i := want; i < len(pods.Items); i++ {
		p := &pods.Items[i]
		k.load.unserve(siteKey(k.ns, k.site), p.UID)
		// No kubelet drains the pod, so it goes at once.
		if err := k.c.Delete(ctx, p, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("kubelet: delete pod %s: %w", p.Name, err)
		}
	}
	return nil
}

// createPod creates the next pod, Pending (the API server's default status) and without traffic. Pods are
// named <site>-01, <site>-02, ... so the API lists them oldest first.
func (k *fakeKubelet) createPod(ctx context.Context) (*corev1.Pod, error) {
	k.created++
	p := &corev1.Pod{}
	p.Namespace, p.Name = k.ns, fmt.Sprintf("%s-%02d", k.site, k.created)
	p.Labels = map[string]string{v1alpha1.LabelSite: k.site}
	p.Spec.Containers = []corev1.Container{{Name: "server", Image: "hyperstatic/server:test"}}
	if err := k.c.Create(ctx, p); err != nil {
		return nil, fmt.Errorf("kubelet: create pod: %w", err)
	}
	return p, nil
}

// markReady sends the pod traffic and reports it Running and Ready.
func (k *fakeKubelet) markReady(ctx context.Context, p *corev1.Pod) error {
	k.load.serve(siteKey(k.ns, k.site), p.UID)
	p.Status.Phase = corev1.PodRunning
	p.Status.PodIP = "10.0.0.1" // never dialled: the load model answers the scrapes
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if err := k.c.Status().Update(ctx, p); err != nil {
		return fmt.Errorf("kubelet: pod %s status: %w", p.Name, err)
	}
	return nil
}

// run converges every 20 ms (wall clock) until ctx ends, for the test that runs the autoscaler in a manager; the
// returned channel closes when it has stopped. Errors go to logf and the next round retries, as a kubelet would.
func (k *fakeKubelet) run(ctx context.Context, logf func(format string, args ...any)) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if err := k.converge(ctx); err != nil && ctx.Err() == nil {
					logf("%v", err)
				}
			}
		}
	}()
	return done
}
