package sitechild

import (
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

const (
	// FieldOwner is the server-side apply field manager of every object the controller writes.
	FieldOwner = "hyperstatic-operator"
	// AnnotationContentHash on the pod template changes when content that needs new pods changes (image sources).
	AnnotationContentHash = "hyperstatic.dev/content-hash"
	// ContainerName is the server container's name.
	ContainerName = "server"
	// SiteVolumeName is the name of the volume holding the site, when the content is not baked into the image.
	SiteVolumeName = "site"
	// ServerUID is the non-root user and group the site's pods run as (the conventional "nonroot" id).
	ServerUID = 65532

	// LabelName and LabelInstance are the app.kubernetes.io labels of a site's objects.
	LabelName     = "app.kubernetes.io/name"
	LabelInstance = "app.kubernetes.io/instance"
	// ServerAppName is the app.kubernetes.io/name of a site's server pods and objects (never a fetcher's nor a
	// measurement's).
	ServerAppName = "hyperstatic-server"
)

// SelectorLabels select a site's pods. They never change for a site (a Deployment's selector is immutable).
func SelectorLabels(site *v1alpha1.StaticSite) map[string]string {
	return map[string]string{
		v1alpha1.LabelSite: site.Name,
		LabelName:          ServerAppName,
	}
}

// ObjectLabels are on every object the controller creates for a site, pods included.
func ObjectLabels(site *v1alpha1.StaticSite) map[string]string {
	l := SelectorLabels(site)
	l[LabelInstance] = site.Name
	l[v1alpha1.LabelManagedBy] = v1alpha1.ManagedByValue
	return l
}

// Selector is the label selector of a site's pods, in the string form status.selector (the scale subresource) uses.
func Selector(site *v1alpha1.StaticSite) string {
	return labels.SelectorFromSet(SelectorLabels(site)).String()
}

// OwnerReference makes the site the controlling owner of a child, so deleting the site deletes the child
// (foreground deletion waits for it: blockOwnerDeletion). A new value each call: an apply configuration is not
// shared between objects.
func OwnerReference(site *v1alpha1.StaticSite) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(v1alpha1.GroupVersion.String()).
		WithKind("StaticSite").
		WithName(site.Name).
		WithUID(site.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}

// FormatDuration writes a duration the way the server's and the content-agent's flags read it: whole seconds as
// "5s", else "1500ms".
func FormatDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}
