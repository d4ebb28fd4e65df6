package gitcontent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/gitrevision"
	"hyperstatic.dev/hyperstatic/internal/podstate"
	"hyperstatic.dev/hyperstatic/internal/podtext"
	"hyperstatic.dev/hyperstatic/internal/reconcile"
)

// The two Git steps (doc.go). Fetcher, right after the content step, applies the fetcher's objects (or deletes
// them when the site is not a Git site) and reads what the fetcher published; Pullers, after the pods step, reads
// what each ready server pod's puller serves. Both return when the next pass should run (0: they ask for none).

// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=delete
// +kubebuilder:rbac:groups="",resources=services,verbs=delete

// convergePoll is how soon a pass runs again while the fetcher has not published its first commit or a ready
// pod does not serve the fetcher's commit yet: neither shows in any object the controller watches.
const convergePoll = 2 * time.Second

// maxConcurrentPullerReads bounds the pods whose puller is read at once.
const maxConcurrentPullerReads = 8

// Children is how the Git steps write the site's objects: package staticsite's apply machinery (server-side apply
// skipped when nothing changed, an object that is not the site's or that the API server refuses recorded as
// Stalled with reason, the events). Kind is "Deployment", "Service" or "NetworkPolicy".
type Children interface {
	// Apply applies desired; false when it was refused or is not the site's (recorded), and the rest must wait.
	Apply(ctx context.Context, kind, reason, name string, desired runtime.ApplyConfiguration) (bool, error)
	// Delete deletes the site's object of that kind and name, if the site has one; others' are left alone.
	Delete(ctx context.Context, kind, name, why string) error
}

// Step is what the Git steps read and write through, and the operator's settings they follow.
type Step struct {
	// Cache lists the fetcher's pods (the manager's cache); Direct reads the Secrets' metadata around it.
	Cache, Direct client.Reader
	Children      Children
	// Writer creates the pin token Secret (deploys.go).
	Writer client.Writer
	// Revisions reads /revision of the fetcher and the pullers (nil: none configured, every read fails).
	Revisions gitrevision.Reader
	// Watch long-polls each site's fetcher (nil: none).
	Watch *gitrevision.Watch
	// Pins is what the pin's fast path knows of each site's fetcher (pinnow.go; nil: no fast path).
	Pins                          *PinTargets
	AgentImage, OperatorNamespace string
	// CredentialsLabelRequired: the tenancy policy accepts a secretRef Secret only with LabelGitCredentials.
	CredentialsLabelRequired bool
	// ScrapeRetry is how soon a pod that failed or could not be read is read again.
	ScrapeRetry time.Duration
	// Refresh is how often a site whose pods all serve the fetcher's commit is read again (0: its interval).
	Refresh time.Duration
	// FetcherTolerations are the site's server pods' tolerations (package desired decides them): the fetcher lands
	// where the tenant's pods may.
	FetcherTolerations []*corev1ac.TolerationApplyConfiguration
}

// Fetcher applies a Git site's fetcher objects and reads what the fetcher published; for any other site it
// deletes the fetcher objects the site made (a switch to another source) and returns a nil State.
func (s Step) Fetcher(ctx context.Context, site *v1alpha1.StaticSite) (*State, time.Duration, error) {
	g := site.Spec.Content.Git
	if g == nil {
		if s.Watch != nil {
			s.Watch.Forget(client.ObjectKeyFromObject(site))
		}
		s.Pins.Forget(client.ObjectKeyFromObject(site))
		return nil, 0, s.deleteChildren(ctx, site, "spec.content.git is unset")
	}
	gs := &State{ref: g.Ref, interval: intervalOf(g)}
	if err := s.findSecrets(ctx, site, gs); err != nil {
		return gs, 0, err
	}
	applied, err := s.applyChildren(ctx, site, gs)
	if err != nil {
		return gs, 0, err
	}
	if !applied {
		gs.fetcherDown = "the fetcher's objects cannot be applied (see Stalled)"
		return gs, 0, nil
	}
	return gs, s.observeFetcher(ctx, site, gs), nil
}

// findSecrets records the Secrets the site names that do not exist. Only their existence is read, as
// metadata: the operator never reads a Git credential (RBAC get by name, like the TLS Secret; no watch).
func (s Step) findSecrets(ctx context.Context, site *v1alpha1.StaticSite, gs *State) error {
	g := site.Spec.Content.Git
	for _, ref := range []struct {
		field string
		ref   *v1alpha1.LocalObjectReference
	}{{"secretRef", g.SecretRef}, {"webhookSecretRef", g.WebhookSecretRef}} {
		if ref.ref == nil {
			continue
		}
		m := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}}
		err := s.Direct.Get(ctx, types.NamespacedName{Namespace: site.Namespace, Name: ref.ref.Name}, m)
		switch {
		case apierrors.IsNotFound(err):
			gs.missingSecrets = append(gs.missingSecrets, fmt.Sprintf("%q (spec.content.git.%s)", ref.ref.Name, ref.field))
		case err != nil:
			return fmt.Errorf("read Secret %s: %w", ref.ref.Name, err)
		case ref.field == "secretRef" && m.Labels[v1alpha1.LabelGitCredentials] != "true" && s.CredentialsLabelRequired:
			gs.unlabelledCredentials = ref.ref.Name
		}
	}
	return nil
}

// fetcherSite is the site as its fetcher is built from: without secretRef when that Secret is not labelled as Git
// credentials (the policy refuses it), so that no fetcher mounts a Secret its owner did not mean for this, an
// earlier fetcher that did included (its Deployment is applied without the volume).
func fetcherSite(site *v1alpha1.StaticSite, gs *State) *v1alpha1.StaticSite {
	if gs == nil || gs.unlabelledCredentials == "" {
		return site
	}
	s := site.DeepCopy()
	s.Spec.Content.Git.SecretRef = nil
	return s
}

// applyChildren applies the NetworkPolicy first (the fetcher never runs unprotected), then the Services and the
// Deployment; false when one was refused or is not the site's (recorded: Stalled), and the rest is not applied.
func (s Step) applyChildren(ctx context.Context, site *v1alpha1.StaticSite, gs *State) (bool, error) {
	name := FetcherName(site)
	if ok, err := s.Children.Apply(ctx, "NetworkPolicy", v1alpha1.ReasonNetworkPolicyRejected, name,
		DesiredNetworkPolicy(site, s.OperatorNamespace)); !ok || err != nil {
		return false, err
	}
	if ok, err := s.Children.Apply(ctx, "Service", v1alpha1.ReasonServiceRejected, name, DesiredService(site)); !ok || err != nil {
		return false, err
	}
	if hook := DesiredWebhookService(site); hook != nil {
		if ok, err := s.Children.Apply(ctx, "Service", v1alpha1.ReasonServiceRejected, WebhookName(site), hook); !ok || err != nil {
			return false, err
		}
	} else if err := s.Children.Delete(ctx, "Service", WebhookName(site), "spec.content.git.webhookSecretRef is unset"); err != nil {
		return false, err
	}
	s.preparePinToken(ctx, site, gs) // deploys.go: before the fetcher, so that its pod starts with the token
	return s.Children.Apply(ctx, "Deployment", v1alpha1.ReasonDeploymentRejected, name,
		DesiredFetcher(fetcherSite(site, gs), s.AgentImage, s.FetcherTolerations))
}

// Remove deletes the fetcher objects the site made and stops following its fetcher, whatever its spec: a Git site
// placed in a pool has no fetcher of its own (the pool's fetches for it).
func (s Step) Remove(ctx context.Context, site *v1alpha1.StaticSite, why string) error {
	if s.Watch != nil {
		s.Watch.Forget(client.ObjectKeyFromObject(site))
	}
	s.Pins.Forget(client.ObjectKeyFromObject(site))
	return s.deleteChildren(ctx, site, why)
}

// deleteChildren deletes the fetcher objects the site made (it is no longer a Git site). Objects of those names
// that are not the site's are left alone.
func (s Step) deleteChildren(ctx context.Context, site *v1alpha1.StaticSite, why string) error {
	for _, c := range []struct{ kind, name string }{
		{"Deployment", FetcherName(site)},
		{"Service", FetcherName(site)},
		{"Service", WebhookName(site)},
		{"NetworkPolicy", FetcherName(site)},
	} {
		if err := s.Children.Delete(ctx, c.kind, c.name, why); err != nil {
			return err
		}
	}
	return nil
}

// fetcherStarting are the waiting reasons of a container that is on its way up.
var fetcherStarting = map[string]bool{"ContainerCreating": true, "PodInitializing": true}

// observeFetcher reads /revision of the fetcher pod that runs the current spec (a pod of an earlier spec would
// describe another ref or repository). Its container must be running; it need not be ready, since the fetcher is
// ready only once it has published, and the failure of a first fetch is exactly what the status must say.
func (s Step) observeFetcher(ctx context.Context, site *v1alpha1.StaticSite, gs *State) time.Duration {
	list := &corev1.PodList{}
	if err := s.Cache.List(ctx, list, client.InNamespace(site.Namespace), client.MatchingLabels(fetcherSelector(site))); err != nil {
		gs.fetcherWaiting = "cannot list the fetcher's pods: " + err.Error()
		return convergePoll
	}
	want := FetchArgs(fetcherSite(site, gs))
	var current []*corev1.Pod
	older := ""
	for i := range list.Items {
		p := &list.Items[i]
		if !p.DeletionTimestamp.IsZero() {
			continue
		}
		if c := podstate.Container(p.Spec.Containers, FetchContainerName); c != nil && c.Image == s.AgentImage && slices.Equal(c.Args, want) {
			current = append(current, p)
		} else {
			older = p.Name
		}
	}
	if len(current) == 0 {
		gs.fetcherWaiting = fmt.Sprintf("waiting for the pod of Deployment %s", FetcherName(site))
		if older != "" {
			gs.fetcherWaiting = fmt.Sprintf("the fetcher pod %s runs an earlier spec; waiting for its replacement", older)
		}
		return convergePoll
	}
	slices.SortFunc(current, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	p := current[0]
	status := podstate.ContainerStatus(p.Status.ContainerStatuses, FetchContainerName)
	switch {
	case p.Status.PodIP != "" && status != nil && status.State.Running != nil:
		rev, err := s.readRevision(ctx, p, v1alpha1.GitFetcherPort)
		switch {
		case err == nil:
			gs.fetcher = &rev
			s.deliverPin(ctx, site, p, gs) // deploys.go
			if s.Watch != nil {
				s.Watch.Follow(client.ObjectKeyFromObject(site), p, v1alpha1.GitFetcherPort, *gs.fetcher)
			}
			if gs.pin.undelivered != "" {
				return s.ScrapeRetry
			}
			return 0
		case podstate.Ready(p):
			gs.fetcherDown = fmt.Sprintf("cannot read the fetcher pod %s: %v", p.Name, err)
			return s.ScrapeRetry
		default:
			gs.fetcherWaiting = fmt.Sprintf("the fetcher pod %s is starting (%v)", p.Name, err)
			return convergePoll
		}
	case status != nil && status.State.Waiting != nil && !fetcherStarting[status.State.Waiting.Reason]:
		w := status.State.Waiting
		gs.fetcherDown = fmt.Sprintf("the fetcher pod %s is not running: %s: %s", p.Name, w.Reason, cleanPodText(w.Message))
		return s.ScrapeRetry
	case status != nil && status.State.Terminated != nil:
		t := status.State.Terminated
		gs.fetcherDown = fmt.Sprintf("the fetcher pod %s exited %d: %s", p.Name, t.ExitCode, cleanPodText(t.Message))
		return s.ScrapeRetry
	case unschedulable(p) != "":
		gs.fetcherDown = fmt.Sprintf("the fetcher pod %s cannot be scheduled: %s", p.Name, unschedulable(p))
		return s.ScrapeRetry
	default:
		gs.fetcherWaiting = fmt.Sprintf("the fetcher pod %s is starting (%s)", p.Name, p.Status.Phase)
		return convergePoll
	}
}

// unschedulable is the scheduler's message for a pod it could not place, or "".
func unschedulable(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return cleanPodText(c.Message)
		}
	}
	return ""
}

// readRevision reads a content-agent's /revision on a pod: the one place the controller does.
func (s Step) readRevision(ctx context.Context, p *corev1.Pod, port int) (gitrevision.Revision, error) {
	if s.Revisions == nil {
		return gitrevision.Revision{}, fmt.Errorf("no Git revision reader configured")
	}
	return s.Revisions.Read(ctx, p, port)
}

// Pullers reads what each ready server pod's puller serves into gs (nil: not a Git site, nothing to do), and
// says when the next pass should run: soon while the fetcher has not published or a ready pod does not serve its
// commit, else at the site's interval (the status then follows new commits at the pace the fetcher looks for
// them).
func (s Step) Pullers(ctx context.Context, gs *State, pods []corev1.Pod) time.Duration {
	if gs == nil {
		return 0
	}
	var ready []*corev1.Pod
	for i := range pods {
		if podstate.Ready(&pods[i]) {
			ready = append(ready, &pods[i])
		}
	}
	slices.SortFunc(ready, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	gs.pods = make([]gitPod, len(ready))
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxConcurrentPullerReads)
	for i, p := range ready {
		gs.pods[i].name = p.Name
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			rev, err := s.readRevision(ctx, p, v1alpha1.ContentPort)
			if err != nil {
				log.FromContext(ctx).V(1).Info("cannot read the puller", "pod", p.Name, "error", err.Error())
				gs.pods[i].err = err.Error()
				return
			}
			gs.pods[i].rev = &rev
		}()
	}
	wg.Wait()
	gs.podsRead = true

	if !gs.published() {
		switch {
		case gs.fetcher == nil: // not read: the fetcher step asked for its own retry (and its pod's changes wake us)
			return 0
		case gs.fetcher.Failure != nil:
			return gs.interval // the fetcher tries again at its interval (or on a webhook)
		default:
			return convergePoll // its first fetch is under way
		}
	}
	lagging, stuck := false, false
	for _, p := range gs.pods {
		if p.rev == nil || p.rev.Commit != gs.fetcher.Commit {
			lagging = true
			stuck = stuck || p.rev == nil || p.rev.Failure != nil
		}
	}
	switch {
	case stuck:
		return s.ScrapeRetry // a puller that fails backs off; read it again, not every 2 s
	case lagging:
		return convergePoll
	default:
		return reconcile.OrDefault(s.Refresh, gs.interval)
	}
}

// cleanPodText makes text a pod's status carries (the kubelet's copy of what the container said) safe for a status.
func cleanPodText(s string) string { return podtext.Clean(strings.TrimSpace(s), podtext.MaxStatusText) }
