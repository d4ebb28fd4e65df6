package staticsite

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
)

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch

// reconcileContent finds out whether the content source exists, its revision and size. The ConfigMaps and the claim
// a site names are the user's: the manager's cache does not hold them (internal/managercache), so they are read
// directly, by name; their metadata-only watch (setup.go) triggers the pass.
func (r *Reconciler) reconcileContent(ctx context.Context, st *observation) error {
	site := st.site
	c := site.Spec.Content
	switch desired.SourceOf(site) {
	case v1alpha1.ContentSourceImage:
		st.content = desired.ImageContent(v1alpha1.ContentSourceImage, c.Image, site.Spec.Server.ImagePullPolicy)
		st.contentReason, st.contentMessage = v1alpha1.ReasonImageSpecified, "the pods run image "+c.Image
	case v1alpha1.ContentSourceConfigMaps:
		var found []corev1.ConfigMap
		var missing []string
		for _, ref := range c.ConfigMaps {
			cm := corev1.ConfigMap{}
			if err := r.directReader().Get(ctx, types.NamespacedName{Namespace: site.Namespace, Name: ref.Name}, &cm); err != nil {
				if !apierrors.IsNotFound(err) {
					return err
				}
				missing = append(missing, ref.Name)
				continue
			}
			found = append(found, cm)
		}
		st.content = desired.ConfigMapsContent(site, found)
		if len(missing) > 0 {
			st.contentProblem = &problem{Reason: v1alpha1.ReasonConfigMapNotFound, Message: fmt.Sprintf("ConfigMap %q not found in namespace %s", missing, site.Namespace)}
		} else {
			st.contentReason = v1alpha1.ReasonConfigMapsFound
			st.contentMessage = fmt.Sprintf("%d ConfigMap(s), %d bytes, projected into %s", len(found), st.content.Size, v1alpha1.SiteRoot)
		}
	case v1alpha1.ContentSourceImageVolume:
		st.content = desired.ImageContent(v1alpha1.ContentSourceImageVolume, c.ImageVolume.Reference, c.ImageVolume.PullPolicy)
		if ok, why := r.imageVolumeSupported(); !ok {
			st.contentProblem = &problem{Reason: v1alpha1.ReasonImageVolumeUnsupported, Message: why}
			st.skipDeployment = true
		} else {
			st.contentReason, st.contentMessage = v1alpha1.ReasonImageVolumeSpecified, "image "+c.ImageVolume.Reference+" is mounted at "+v1alpha1.SiteRoot
		}
	case v1alpha1.ContentSourcePersistentVolumeClaim:
		claim := corev1.PersistentVolumeClaim{}
		err := r.directReader().Get(ctx, types.NamespacedName{Namespace: site.Namespace, Name: c.PersistentVolumeClaim.ClaimName}, &claim)
		switch {
		case apierrors.IsNotFound(err):
			st.content = desired.Content{Source: v1alpha1.ContentSourcePersistentVolumeClaim, Size: -1}
			st.contentProblem = &problem{Reason: v1alpha1.ReasonClaimNotFound, Message: fmt.Sprintf("PersistentVolumeClaim %q not found in namespace %s", c.PersistentVolumeClaim.ClaimName, site.Namespace)}
		case err != nil:
			return err
		case claim.Status.Phase == corev1.ClaimLost:
			st.content = desired.ClaimContent(&claim)
			st.contentProblem = &problem{Reason: v1alpha1.ReasonClaimLost, Message: fmt.Sprintf("PersistentVolumeClaim %q lost its volume", claim.Name)}
		default:
			st.content = desired.ClaimContent(&claim)
			if p := claimAccessProblem(site, &claim); p != nil {
				st.contentProblem = p
				st.skipDeployment = true // the one pod that can mount the claim keeps serving
				break
			}
			st.contentReason = v1alpha1.ReasonClaimFound
			st.contentMessage = fmt.Sprintf("PersistentVolumeClaim %q (%s) is mounted read-only at %s", claim.Name, claim.Status.Phase, v1alpha1.SiteRoot)
		}
	case v1alpha1.ContentSourceGit:
		// The fetcher step (step_git.go) completes it: revision, size and memory come from what the fetcher
		// published, and ContentAvailable from what it and the pullers say (contentverdict.go).
		st.content = desired.Content{Source: v1alpha1.ContentSourceGit, Size: -1, AgentImage: r.ContentAgentImage}
	default:
		st.contentProblem = &problem{Reason: v1alpha1.ReasonNoContentSource, Message: "spec.content sets no source"}
		st.skipDeployment = true
	}
	if sitevalue.UsesSSO(site) {
		st.content.AgentImage = r.ContentAgentImage // the login agent beside the server (desired/sso.go)
	}
	st.memory = desired.MemoryFor(site, st.content)
	return nil
}

// imageVolumeSupported: the "image" volume source exists from Kubernetes 1.31 (behind the ImageVolume feature
// gate until it is on by default); older API servers drop the field.
func (r *Reconciler) imageVolumeSupported() (bool, string) {
	if r.ServerVersion == nil {
		return true, ""
	}
	v, err := r.ServerVersion()
	if err != nil {
		return false, "cannot read the API server version: " + err.Error()
	}
	major, minor := parseVersion(v)
	if major < 1 || (major == 1 && minor < 31) {
		return false, fmt.Sprintf("the cluster runs Kubernetes %s.%s; the image volume source needs 1.31 or later with the ImageVolume feature gate", v.Major, v.Minor)
	}
	return true, ""
}

func parseVersion(v *version.Info) (major, minor int) {
	_, _ = fmt.Sscanf(v.Major, "%d", &major)
	_, _ = fmt.Sscanf(v.Minor, "%d", &minor) // "31+" on some providers: Sscanf stops at '+'
	return major, minor
}
