package staticsite

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/gitcontent"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/podstate"
)

// The two Git steps (package gitcontent): the fetcher step, right after the content step, then the server's
// memory sized from what the fetcher published; the pullers step, after the pods step.

// reconcileGitFetcher applies a Git site's fetcher objects and reads what the fetcher published (for any other
// site it deletes the fetcher objects), then completes the content from it.
func (r *Reconciler) reconcileGitFetcher(ctx context.Context, st *observation) error {
	gs, requeue, err := r.gitStep(st).Fetcher(ctx, st.site)
	st.git = gs
	if requeue > 0 {
		st.requeue(requeue)
	}
	if err != nil || gs == nil {
		return err
	}
	return r.sizeGitContent(ctx, st)
}

// reconcileGitPullers reads what each ready server pod's puller serves.
func (r *Reconciler) reconcileGitPullers(ctx context.Context, st *observation) error {
	if requeue := r.gitStep(st).Pullers(ctx, st.git, st.pods); requeue > 0 {
		st.requeue(requeue)
	}
	return nil
}

// gitStep is this pass's view of the reconciler for package gitcontent.
func (r *Reconciler) gitStep(st *observation) gitcontent.Step {
	return gitcontent.Step{
		Cache: r.Client, Direct: r.directReader(), Children: gitChildren{r: r, st: st}, Writer: r.Client,
		Revisions: r.GitReader, Watch: r.gitWatch, Pins: r.pins,
		AgentImage: r.ContentAgentImage, OperatorNamespace: r.OperatorNamespace,
		CredentialsLabelRequired: r.policy().Git.CredentialsLabelRequired(),
		ScrapeRetry:              st.tun.scrapeRetry, Refresh: st.tun.gitRefresh,
		FetcherTolerations: desired.Tolerations(st.site),
	}
}

// gitChildren applies and deletes the fetcher's objects with this package's machinery (gitcontent.Children).
type gitChildren struct {
	r  *Reconciler
	st *observation
}

// gitChildKinds are the kinds of the fetcher's objects: a new live object to read into, and the fields this
// operator owns in it.
var gitChildKinds = map[string]struct {
	live    func() client.Object
	extract func(client.Object) (any, error)
}{
	"Deployment":    {func() client.Object { return &appsv1.Deployment{} }, extractDeployment},
	"Service":       {func() client.Object { return &corev1.Service{} }, extractService},
	"NetworkPolicy": {func() client.Object { return &networkingv1.NetworkPolicy{} }, extractNetworkPolicy},
}

func (c gitChildren) Apply(ctx context.Context, kind, reason, name string, desired runtime.ApplyConfiguration) (bool, error) {
	site, k := c.st.site, gitChildKinds[kind]
	res, err := applyChild(ctx, c.r.Client, c.r.directReader(), site, kind, k.live(), desired,
		types.NamespacedName{Namespace: site.Namespace, Name: name}, k.extract)
	if err != nil {
		return false, childRefused(c.st, kind, reason, err)
	}
	c.r.recordApplyOf(site, kind, name, res)
	return true, nil
}

// Delete reads from the cache: the fetcher objects carry the operator's label, so a site that never had any
// costs no API request.
func (c gitChildren) Delete(ctx context.Context, kind, name, why string) error {
	return c.r.deleteOwnedNamed(ctx, c.r.Client, c.st.site, kind, name, gitChildKinds[kind].live(), why)
}

// sizeGitContent completes the Git content from what the fetcher published: its revision, its size and so the
// server's memory. Without spec.memory the memory is sized from the bundle, so nothing can be sized before the
// first publish: the Deployment is then not created yet (a new site) or left as it is while it already runs a
// Git template (its pods keep their memory; e.g. a fetcher pod restarting on an empty volume). A site switching
// to Git from another source keeps its old Deployment until the first commit is published, then rolls once.
func (r *Reconciler) sizeGitContent(ctx context.Context, st *observation) error {
	site := st.site
	st.content.Size = -1
	if rev := st.git.Published(); rev != nil {
		st.content.Size = rev.Size
		st.content.Revision = gitcontent.RevisionString(rev)
	}
	switch {
	case site.Spec.Memory != nil:
		st.memory = *site.Spec.Memory
	case st.content.Size >= 0:
		st.memory = desired.MemoryFor(site, st.content)
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
		st.memory = desired.MemoryFor(site, st.content)
		st.skipDeployment = true
	}
	return nil
}

// gitTemplateMemory is the server container's memory limit in d's template when the template is a Git site's
// (it has the puller sidecar).
func gitTemplateMemory(d *appsv1.Deployment) (q resource.Quantity, ok bool) {
	spec := d.Spec.Template.Spec
	if podstate.Container(spec.InitContainers, gitcontent.PullerContainerName) == nil {
		return q, false
	}
	c := podstate.Container(spec.Containers, sitechild.ContainerName)
	if c == nil {
		return q, false
	}
	m, ok := c.Resources.Limits[corev1.ResourceMemory]
	return m, ok
}
