package capacity

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// IDLength is the number of hex digits of a template id.
const IDLength = 12

// TemplateKeys names the parts of a pod template the identity reads that belong to the caller's conventions.
type TemplateKeys struct {
	// ServerContainer is the name of the container whose CPU and memory limits count.
	ServerContainer string
	// ContentHashAnnotation is the pod annotation that changes with content needing new pods.
	ContentHashAnnotation string
}

// Identify names a pod template as far as it decides how fast a pod serves: every container's image and
// arguments, the server container's CPU and memory limits, the content-hash annotation and the image volumes'
// references. It reads only fields the API server does not default, and quantities by value, so the template as
// applied and the template read back from a Deployment give the same id. contentRevision is the caller's (it is
// not in the template for sources the server reloads live).
func Identify(t *corev1.PodTemplateSpec, keys TemplateKeys, contentRevision string) v1alpha1.TemplateIdentity {
	var b strings.Builder
	id := v1alpha1.TemplateIdentity{ContentRevision: contentRevision}
	for _, c := range t.Spec.Containers {
		fmt.Fprintf(&b, "container %q image %q args %q\n", c.Name, c.Image, c.Args)
		if c.Name != keys.ServerContainer {
			continue
		}
		id.ServerImage = c.Image
		if q, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
			fmt.Fprintf(&b, "cpu %dm\n", q.MilliValue())
			id.CPU = &q
		}
		if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
			fmt.Fprintf(&b, "memory %d\n", q.Value())
			id.Memory = &q
		}
	}
	fmt.Fprintf(&b, "content %q\n", t.Annotations[keys.ContentHashAnnotation])
	for _, v := range t.Spec.Volumes {
		if v.Image != nil {
			fmt.Fprintf(&b, "image volume %q %q\n", v.Name, v.Image.Reference)
		}
	}
	sum := sha256.Sum256([]byte(b.String()))
	id.ID = hex.EncodeToString(sum[:])[:IDLength]
	return id
}
