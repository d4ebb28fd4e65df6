package staticsite

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/gitcontent"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/podstate"
	"hyperstatic.dev/hyperstatic/internal/ssosite"
)

// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch

// reconcileDeployment applies the Deployment that runs the server pods.
func (r *Reconciler) reconcileDeployment(ctx context.Context, st *observation) error {
	if st.skipDeployment {
		return nil
	}
	site := st.site
	key := types.NamespacedName{Namespace: site.Namespace, Name: site.Name}
	if st.content.Source == v1alpha1.ContentSourceImageVolume {
		if ok, err := r.imageVolumeKept(ctx, st, key); err != nil || !ok {
			return err
		}
	}
	serverImage, release, err := r.chooseServerImage(ctx, st)
	if err != nil {
		return err
	}
	defer release() // after the apply: the next admission must see this one
	content, err := r.pullerImageWithTheQueue(ctx, st, serverImage.image)
	if err != nil {
		return err
	}
	live := &appsv1.Deployment{}
	want := desired.Deployment(site, serverImage.image, content, st.memory)
	gate, err := r.capacityStep().Hold(ctx, site, capacityContent(st.content), key, want) // the performance gate
	st.gate = gate
	if err != nil {
		return err
	}
	res, err := applyChild(ctx, r.Client, r.directReader(), site, "Deployment", live, want, key, extractDeployment)
	if err != nil {
		return r.deploymentRefused(st, err)
	}
	switch res {
	case applyUnchanged:
		st.deployment = live
	case applyUpdated:
		// live is the Deployment before the apply: its status describes the old template's pods. Read the applied
		// object so the rollout is judged against the new generation, not reported done by the old ReplicaSet.
		applied := &appsv1.Deployment{}
		if err := r.directReader().Get(ctx, key, applied); err != nil {
			return fmt.Errorf("read the applied Deployment: %w", err)
		}
		st.deployment = applied
		st.templateChanged = !equality.Semantic.DeepEqual(live.Spec.Template, applied.Spec.Template)
	}
	r.recordApply(site, "Deployment", res)
	r.recordServerImageMove(site, serverImage, res)
	return nil
}

// deploymentRefused turns an apply error into a condition when only a person can fix it, else returns it.
func (r *Reconciler) deploymentRefused(st *observation, err error) error {
	if notOwned(st, err) {
		return nil
	}
	if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
		return fmt.Errorf("apply Deployment: %w", err)
	}
	if st.content.Source == v1alpha1.ContentSourceImageVolume && apierrors.IsInvalid(err) {
		st.contentProblem = &problem{Reason: v1alpha1.ReasonImageVolumeUnsupported, Message: "the API server refused the image volume (is the ImageVolume feature gate on?): " + err.Error()}
	} else {
		st.reject(&problem{Reason: v1alpha1.ReasonDeploymentRejected, Message: err.Error()})
	}
	return nil
}

// imageVolumeKept makes sure the API server keeps an image volume before the Deployment is written. With the
// ImageVolume feature gate off (the default up to Kubernetes 1.34) the API server silently drops the volume and
// its mounts, which would start servers with an empty site. A server-side dry run shows what would be stored;
// it is only needed while the live Deployment does not already carry the image volume.
func (r *Reconciler) imageVolumeKept(ctx context.Context, st *observation, key types.NamespacedName) (bool, error) {
	live := &appsv1.Deployment{}
	if err := r.Get(ctx, key, live); ctrl.IgnoreNotFound(err) != nil {
		return false, err
	}
	if hasImageVolume(live.Spec.Template.Spec.Volumes) {
		return true, nil
	}
	// A raw apply patch, so the answer decodes into a fresh typed object (decoding into the apply configuration
	// would keep the volumes the answer leaves out).
	body, err := json.Marshal(desired.Deployment(st.site, r.ServerImage, st.content, st.memory))
	if err != nil {
		return false, err
	}
	probe := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if err := r.Patch(ctx, probe, ctrl.RawPatch(types.ApplyPatchType, body), ctrl.FieldOwner(sitechild.FieldOwner), ctrl.ForceOwnership, ctrl.DryRunAll); err != nil {
		return false, r.deploymentRefused(st, err)
	}
	if hasImageVolume(probe.Spec.Template.Spec.Volumes) {
		return true, nil
	}
	st.contentProblem = &problem{Reason: v1alpha1.ReasonImageVolumeUnsupported, Message: "the API server drops image volumes: the ImageVolume feature gate is off " +
		"(it is off by default up to Kubernetes 1.34); the Deployment is left unchanged"}
	return false, nil
}

func hasImageVolume(vs []corev1.Volume) bool {
	for _, v := range vs {
		if v.Name == sitechild.SiteVolumeName && v.Image != nil {
			return true
		}
	}
	return false
}

// pullerImageWithTheQueue: a Git site's puller sidecar image and an sso site's login agent image (both the
// operator's --content-agent-image) change with an operator upgrade, like the default server image. While the
// server-image queue keeps a site on its current server image (serverimage.go), its pods keep their current agent
// image too, so the queue, not the agent, decides when they roll; the site takes both new images on its turn.
func (r *Reconciler) pullerImageWithTheQueue(ctx context.Context, st *observation, serverImage string) (desired.Content, error) {
	content := st.content
	if content.AgentImage == "" || serverImage == r.ServerImage || !usesDefaultServerImage(st.site) {
		return content, nil
	}
	live := &appsv1.Deployment{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: st.site.Namespace, Name: st.site.Name}, live); err != nil {
		return content, ctrl.IgnoreNotFound(err)
	}
	if c := podstate.Container(live.Spec.Template.Spec.InitContainers, gitcontent.PullerContainerName); c != nil {
		content.AgentImage = c.Image
	} else if c := podstate.Container(live.Spec.Template.Spec.Containers, ssosite.ContainerName); c != nil {
		content.AgentImage = c.Image
	}
	return content, nil
}
