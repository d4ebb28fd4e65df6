package staticsite

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/gitrevision"
	"hyperstatic.dev/hyperstatic/internal/podstate"
	"hyperstatic.dev/hyperstatic/internal/podtext"
	"hyperstatic.dev/hyperstatic/internal/reconcile"
)

// The two Git steps (docs/staticsite.md, "Content from Git"). The fetcher step, right after the content step,
// applies the fetcher's children (or deletes them when the site is not a Git site), reads what the fetcher
// published, and sizes the server's memory from it; the pullers step, after the pods step, reads what each ready
// server pod's puller serves. deriveStatus (gitstatus.go) turns both into ContentAvailable and
// status.content.revision.

// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=delete
// +kubebuilder:rbac:groups="",resources=services,verbs=delete

// gitConvergePoll is how soon a pass runs again while the fetcher has not published its first commit or a ready
// pod does not serve the fetcher's commit yet: neither shows in any object the controller watches.
const gitConvergePoll = 2 * time.Second

// maxConcurrentPullerReads bounds the pods whose puller is read at once.
const maxConcurrentPullerReads = 8

// gitState is what the Git steps saw.
type gitState struct {
	ref      string        // spec.content.git.ref, for messages
	interval time.Duration // spec.content.git.interval (its default resolved)
	// missingSecrets names the Secrets of secretRef and webhookSecretRef that do not exist.
	missingSecrets []string
	// unlabelledCredentials names the secretRef Secret when it lacks LabelGitCredentials and the policy requires
	// it: the fetcher then runs as if secretRef were unset (fetcherSite).
	unlabelledCredentials string
	// fetcher is what the fetcher pod publishes (nil: not read); fetcherDown says why it could not be read when
	// the pod is failing, fetcherWaiting when it is starting.
	fetcher                     *gitrevision.Revision
	fetcherDown, fetcherWaiting string
	// pods are the ready server pods and what their pullers serve, in name order; podsRead: the pullers step ran.
	pods     []gitPod
	podsRead bool
}

// gitPod is a ready server pod's puller: what it serves (rev), or why it could not be read (err).
type gitPod struct {
	name string
	rev  *gitrevision.Revision
	err  string
}

// published says the fetcher published a commit.
func (g *gitState) published() bool { return g.fetcher != nil && g.fetcher.Published() }

// servedBy counts the ready pods whose puller serves commit.
func (g *gitState) servedBy(commit string) int32 {
	var n int32
	for _, p := range g.pods {
		if p.rev != nil && p.rev.Commit == commit {
			n++
		}
	}
	return n
}

// reconcileGitFetcher applies a Git site's fetcher children and reads what the fetcher published; for any other
// site it deletes the fetcher children the site made (a switch to another source).
func (r *Reconciler) reconcileGitFetcher(ctx context.Context, st *observation) error {
	site := st.site
	g := site.Spec.Content.Git
	if g == nil {
		if r.gitWatch != nil {
			r.gitWatch.Forget(client.ObjectKeyFromObject(site))
		}
		return r.deleteGitChildren(ctx, site, "spec.content.git is unset")
	}
	gs := &gitState{ref: g.Ref, interval: gitIntervalOf(g)}
	st.git = gs
	if err := r.findGitSecrets(ctx, st); err != nil {
		return err
	}
	applied, err := r.applyGitChildren(ctx, st)
	if err != nil {
		return err
	}
	if applied {
		r.observeGitFetcher(ctx, st)
	} else {
		gs.fetcherDown = "the fetcher's objects cannot be applied (see Stalled)"
	}
	return r.sizeGitContent(ctx, st)
}

// findGitSecrets records the Secrets the site names that do not exist. Only their existence is read, as
// metadata: the operator never reads a Git credential (RBAC get by name, like the TLS Secret; no watch).
func (r *Reconciler) findGitSecrets(ctx context.Context, st *observation) error {
	g := st.site.Spec.Content.Git
	for _, ref := range []struct {
		field string
		ref   *v1alpha1.LocalObjectReference
	}{{"secretRef", g.SecretRef}, {"webhookSecretRef", g.WebhookSecretRef}} {
		if ref.ref == nil {
			continue
		}
		m := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}}
		err := r.directReader().Get(ctx, types.NamespacedName{Namespace: st.site.Namespace, Name: ref.ref.Name}, m)
		switch {
		case apierrors.IsNotFound(err):
			st.git.missingSecrets = append(st.git.missingSecrets, fmt.Sprintf("%q (spec.content.git.%s)", ref.ref.Name, ref.field))
		case err != nil:
			return fmt.Errorf("read Secret %s: %w", ref.ref.Name, err)
		case ref.field == "secretRef" && m.Labels[v1alpha1.LabelGitCredentials] != "true" && r.policy().Git.CredentialsLabelRequired():
			st.git.unlabelledCredentials = ref.ref.Name
		}
	}
	return nil
}

// fetcherSite is the site as its fetcher is built from: without secretRef when that Secret is not labelled as Git
// credentials (the policy refuses it), so that no fetcher mounts a Secret its owner did not mean for this, an
// earlier fetcher that did included (its Deployment is applied without the volume).
func fetcherSite(st *observation) *v1alpha1.StaticSite {
	if st.git == nil || st.git.unlabelledCredentials == "" {
		return st.site
	}
	s := st.site.DeepCopy()
	s.Spec.Content.Git.SecretRef = nil
	return s
}

// applyGitChildren applies the NetworkPolicy first (the fetcher never runs unprotected), then the Services and the
// Deployment; false when one was refused or is not the site's (recorded: Stalled), and the rest is not applied.
func (r *Reconciler) applyGitChildren(ctx context.Context, st *observation) (bool, error) {
	site := st.site
	key := types.NamespacedName{Namespace: site.Namespace, Name: GitFetcherName(site)}
	res, err := applyChild(ctx, r.Client, r.directReader(), site, "NetworkPolicy", &networkingv1.NetworkPolicy{},
		DesiredGitNetworkPolicy(site, r.OperatorNamespace), key, extractNetworkPolicy)
	if err != nil {
		return false, childRefused(st, "NetworkPolicy", v1alpha1.ReasonNetworkPolicyRejected, err)
	}
	r.recordApplyOf(site, "NetworkPolicy", key.Name, res)
	if res, err = applyChild(ctx, r.Client, r.directReader(), site, "Service", &corev1.Service{}, DesiredGitService(site), key, extractService); err != nil {
		return false, childRefused(st, "Service", v1alpha1.ReasonServiceRejected, err)
	}
	r.recordApplyOf(site, "Service", key.Name, res)
	hookKey := types.NamespacedName{Namespace: site.Namespace, Name: GitWebhookName(site)}
	if hook := DesiredGitWebhookService(site); hook != nil {
		if res, err = applyChild(ctx, r.Client, r.directReader(), site, "Service", &corev1.Service{}, hook, hookKey, extractService); err != nil {
			return false, childRefused(st, "Service", v1alpha1.ReasonServiceRejected, err)
		}
		r.recordApplyOf(site, "Service", hookKey.Name, res)
	} else if err := r.deleteOwnedNamed(ctx, r.Client, site, "Service", hookKey.Name, &corev1.Service{}, "spec.content.git.webhookSecretRef is unset"); err != nil {
		return false, err
	}
	if res, err = applyChild(ctx, r.Client, r.directReader(), site, "Deployment", &appsv1.Deployment{},
		DesiredGitFetcher(fetcherSite(st), r.ContentAgentImage), key, extractDeployment); err != nil {
		return false, childRefused(st, "Deployment", v1alpha1.ReasonDeploymentRejected, err)
	}
	r.recordApplyOf(site, "Deployment", key.Name, res)
	return true, nil
}

// deleteGitChildren deletes the fetcher objects the site made (it is no longer a Git site). Objects of those
// names that are not the site's are left alone. Reads come from the cache: the fetcher objects carry the
// operator's label, so a site that never had any costs no API request.
func (r *Reconciler) deleteGitChildren(ctx context.Context, site *v1alpha1.StaticSite, why string) error {
	for _, c := range []struct {
		kind, name string
		obj        client.Object
	}{
		{"Deployment", GitFetcherName(site), &appsv1.Deployment{}},
		{"Service", GitFetcherName(site), &corev1.Service{}},
		{"Service", GitWebhookName(site), &corev1.Service{}},
		{"NetworkPolicy", GitFetcherName(site), &networkingv1.NetworkPolicy{}},
	} {
		if err := r.deleteOwnedNamed(ctx, r.Client, site, c.kind, c.name, c.obj, why); err != nil {
			return err
		}
	}
	return nil
}

// fetcherStarting are the waiting reasons of a container that is on its way up.
var fetcherStarting = map[string]bool{"ContainerCreating": true, "PodInitializing": true}

// observeGitFetcher reads /revision of the fetcher pod that runs the current spec (a pod of an earlier spec would
// describe another ref or repository). Its container must be running; it need not be ready, since the fetcher is
// ready only once it has published, and the failure of a first fetch is exactly what the status must say.
func (r *Reconciler) observeGitFetcher(ctx context.Context, st *observation) {
	site, gs := st.site, st.git
	list := &corev1.PodList{}
	if err := r.List(ctx, list, client.InNamespace(site.Namespace), client.MatchingLabels(gitFetcherSelector(site))); err != nil {
		gs.fetcherWaiting = "cannot list the fetcher's pods: " + err.Error()
		st.requeue(gitConvergePoll)
		return
	}
	want := FetchArgs(fetcherSite(st))
	var current []*corev1.Pod
	older := ""
	for i := range list.Items {
		p := &list.Items[i]
		if !p.DeletionTimestamp.IsZero() {
			continue
		}
		if c := findContainer(p.Spec.Containers, fetchContainerName); c != nil && c.Image == r.ContentAgentImage && slices.Equal(c.Args, want) {
			current = append(current, p)
		} else {
			older = p.Name
		}
	}
	if len(current) == 0 {
		gs.fetcherWaiting = fmt.Sprintf("waiting for the pod of Deployment %s", GitFetcherName(site))
		if older != "" {
			gs.fetcherWaiting = fmt.Sprintf("the fetcher pod %s runs an earlier spec; waiting for its replacement", older)
		}
		st.requeue(gitConvergePoll)
		return
	}
	slices.SortFunc(current, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	p := current[0]
	status := findContainerStatus(p.Status.ContainerStatuses, fetchContainerName)
	switch {
	case p.Status.PodIP != "" && status != nil && status.State.Running != nil:
		rev, err := r.readRevision(ctx, p, v1alpha1.GitFetcherPort)
		switch {
		case err == nil:
			gs.fetcher = &rev
			if r.gitWatch != nil {
				r.gitWatch.Follow(client.ObjectKeyFromObject(site), p, v1alpha1.GitFetcherPort, rev)
			}
		case podstate.Ready(p):
			gs.fetcherDown = fmt.Sprintf("cannot read the fetcher pod %s: %v", p.Name, err)
			st.requeue(st.tun.scrapeRetry)
		default:
			gs.fetcherWaiting = fmt.Sprintf("the fetcher pod %s is starting (%v)", p.Name, err)
			st.requeue(gitConvergePoll)
		}
	case status != nil && status.State.Waiting != nil && !fetcherStarting[status.State.Waiting.Reason]:
		w := status.State.Waiting
		gs.fetcherDown = fmt.Sprintf("the fetcher pod %s is not running: %s: %s", p.Name, w.Reason, cleanPodText(w.Message))
		st.requeue(st.tun.scrapeRetry)
	case status != nil && status.State.Terminated != nil:
		t := status.State.Terminated
		gs.fetcherDown = fmt.Sprintf("the fetcher pod %s exited %d: %s", p.Name, t.ExitCode, cleanPodText(t.Message))
		st.requeue(st.tun.scrapeRetry)
	case unschedulable(p) != "":
		gs.fetcherDown = fmt.Sprintf("the fetcher pod %s cannot be scheduled: %s", p.Name, unschedulable(p))
		st.requeue(st.tun.scrapeRetry)
	default:
		gs.fetcherWaiting = fmt.Sprintf("the fetcher pod %s is starting (%s)", p.Name, p.Status.Phase)
		st.requeue(gitConvergePoll)
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

func findContainer(cs []corev1.Container, name string) *corev1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

func findContainerStatus(cs []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

// readRevision reads a content-agent's /revision on a pod: the one place the controller does.
func (r *Reconciler) readRevision(ctx context.Context, p *corev1.Pod, port int) (gitrevision.Revision, error) {
	if r.GitReader == nil {
		return gitrevision.Revision{}, fmt.Errorf("no Git revision reader configured")
	}
	return r.GitReader.Read(ctx, p, port)
}

// sizeGitContent completes the Git content from what the fetcher published: its revision, its size and so the
// server's memory. Without spec.memory the memory is sized from the bundle, so nothing can be sized before the
// first publish: the Deployment is then not created yet (a new site) or left as it is while it already runs a
// Git template (its pods keep their memory; e.g. a fetcher pod restarting on an empty volume). A site switching
// to Git from another source keeps its old Deployment until the first commit is published, then rolls once.
func (r *Reconciler) sizeGitContent(ctx context.Context, st *observation) error {
	site, gs := st.site, st.git
	st.content.Size = -1
	if gs.published() {
		st.content.Size = gs.fetcher.Size
		st.content.Revision = gitRevisionString(gs.fetcher)
	}
	switch {
	case site.Spec.Memory != nil:
		st.memory = *site.Spec.Memory
	case st.content.Size >= 0:
		st.memory = MemoryFor(site, st.content)
	default:
		live := &appsv1.Deployment{}
		err := r.Get(ctx, types.NamespacedName{Namespace: site.Namespace, Name: site.Name}, live)
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("read the Deployment: %w", err)
		}
		if m, ok := gitTemplateMemory(live); err == nil && ok {
			st.memory = m
			return nil
		}
		st.memory = MemoryFor(site, st.content)
		st.skipDeployment = true
	}
	return nil
}

// gitTemplateMemory is the server container's memory limit in d's template when the template is a Git site's
// (it has the puller sidecar).
func gitTemplateMemory(d *appsv1.Deployment) (q resource.Quantity, ok bool) {
	spec := d.Spec.Template.Spec
	if findContainer(spec.InitContainers, pullerContainerName) == nil {
		return q, false
	}
	c := findContainer(spec.Containers, containerName)
	if c == nil {
		return q, false
	}
	m, ok := c.Resources.Limits[corev1.ResourceMemory]
	return m, ok
}

// gitRevisionString is status.contentRevision for a published revision, in Flux's form: <branch or tag>@sha1:<commit>,
// or sha1:<commit> for a pinned commit.
func gitRevisionString(rev *gitrevision.Revision) string {
	name := strings.TrimPrefix(strings.TrimPrefix(rev.Ref, "refs/heads/"), "refs/tags/")
	if name == "" {
		return "sha1:" + rev.Commit
	}
	return name + "@sha1:" + rev.Commit
}

// reconcileGitPullers reads what each ready server pod's puller serves, and asks for the next pass: soon while the
// fetcher has not published or a ready pod does not serve its commit, else at the site's interval (the status then
// follows new commits at the pace the fetcher looks for them).
func (r *Reconciler) reconcileGitPullers(ctx context.Context, st *observation) error {
	gs := st.git
	if gs == nil {
		return nil
	}
	var ready []*corev1.Pod
	for i := range st.pods {
		if podstate.Ready(&st.pods[i]) {
			ready = append(ready, &st.pods[i])
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
			rev, err := r.readRevision(ctx, p, v1alpha1.ContentPort)
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

	switch {
	case !gs.published():
		switch {
		case gs.fetcher == nil: // not read: the fetcher step asked for its own retry (and its pod's changes wake us)
		case gs.fetcher.Failure != nil:
			st.requeue(gs.interval) // the fetcher tries again at its interval (or on a webhook)
		default:
			st.requeue(gitConvergePoll) // its first fetch is under way
		}
	default:
		lagging, stuck := false, false
		for _, p := range gs.pods {
			if p.rev == nil || p.rev.Commit != gs.fetcher.Commit {
				lagging = true
				stuck = stuck || p.rev == nil || p.rev.Failure != nil
			}
		}
		switch {
		case stuck:
			st.requeue(st.tun.scrapeRetry) // a puller that fails backs off; read it again, not every 2 s
		case lagging:
			st.requeue(gitConvergePoll)
		default:
			st.requeue(reconcile.OrDefault(st.tun.gitRefresh, gs.interval))
		}
	}
	return nil
}

// cleanPodText makes text a pod's status carries (the kubelet's copy of what the container said) safe for a status.
func cleanPodText(s string) string { return podtext.Clean(strings.TrimSpace(s), podtext.MaxStatusText) }
