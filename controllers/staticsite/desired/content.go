package desired

import (
	"crypto/sha256"
	"encoding/hex"
	"math/bits"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// Content is what the controller learned about a site's content source: everything the desired-state builders and
// the status need, so that the builders stay pure.
type Content struct {
	// Source is one of the v1alpha1.ContentSource* names.
	Source string
	// Revision identifies the content served (status.contentRevision).
	Revision string
	// RollHash changes when the content needs new pods (image sources); empty for sources the server reloads live.
	RollHash string
	// ConfigMapKeys lists, for each ConfigMap projected under a path prefix, its keys (sorted): a prefix needs the
	// projection to name every key.
	ConfigMapKeys map[string][]string
	// Size is the content's total size in bytes, or -1 when the operator cannot know it.
	Size int64
	// SingleAttach: the content is a claim whose volume one node (or one pod) can mount at a time, so the pods
	// must not surge during a rollout (see rolloutStrategy).
	SingleAttach bool
	// AgentImage is, for a Git site, the content-agent image of the pods' puller sidecar (the operator's
	// --content-agent-image).
	AgentImage string
}

// SourceOf names the content source a site uses ("" when none is set, which the CRD schema forbids).
func SourceOf(site *v1alpha1.StaticSite) string {
	c := site.Spec.Content
	switch {
	case c.Image != "":
		return v1alpha1.ContentSourceImage
	case len(c.ConfigMaps) > 0:
		return v1alpha1.ContentSourceConfigMaps
	case c.ImageVolume != nil:
		return v1alpha1.ContentSourceImageVolume
	case c.PersistentVolumeClaim != nil:
		return v1alpha1.ContentSourcePersistentVolumeClaim
	case c.Git != nil:
		return v1alpha1.ContentSourceGit
	}
	return ""
}

// shortHash is the first 16 hex digits of the SHA-256 of the parts joined by newlines.
func shortHash(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\n")))
	return hex.EncodeToString(sum[:])[:16]
}

// ImageContent describes a baked-image or image-volume source. Its RollHash covers the reference and pull
// policy, so any change rolls the pods.
func ImageContent(source, reference string, pullPolicy corev1.PullPolicy) Content {
	return Content{Source: source, Revision: reference, RollHash: shortHash(source, reference, string(pullPolicy)), Size: -1}
}

// ConfigMapsContent describes a configMaps source from the ConfigMaps found (in spec order). The revision hashes
// the ConfigMaps' names and resourceVersions, so any edit shows in status; RollHash stays empty because the server
// picks up projected changes live. It needs the data, not just the metadata: the size sets the pods' memory and a
// prefixed ConfigMap's keys are listed in the projection. The controller reads the named ConfigMaps directly (the
// manager caches no one else's ConfigMaps: see internal/managercache).
func ConfigMapsContent(site *v1alpha1.StaticSite, cms []corev1.ConfigMap) Content {
	c := Content{Source: v1alpha1.ContentSourceConfigMaps, ConfigMapKeys: map[string][]string{}}
	parts := make([]string, 0, len(cms))
	prefixed := map[string]bool{}
	for _, ref := range site.Spec.Content.ConfigMaps {
		if ref.PathPrefix != "" {
			prefixed[ref.Name] = true
		}
	}
	for i := range cms {
		cm := &cms[i]
		parts = append(parts, cm.Name+"="+cm.ResourceVersion)
		for _, v := range cm.Data {
			c.Size += int64(len(v))
		}
		for _, v := range cm.BinaryData {
			c.Size += int64(len(v))
		}
		if prefixed[cm.Name] {
			keys := make([]string, 0, len(cm.Data)+len(cm.BinaryData))
			for k := range cm.Data {
				keys = append(keys, k)
			}
			for k := range cm.BinaryData {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			c.ConfigMapKeys[cm.Name] = keys
		}
	}
	c.Revision = "sha256:" + shortHash(parts...)
	return c
}

// ClaimContent describes a persistentVolumeClaim source: the revision names the claim and the volume bound to it.
func ClaimContent(claim *corev1.PersistentVolumeClaim) Content {
	rev := "pvc/" + claim.Name
	if claim.Spec.VolumeName != "" {
		rev += "@" + claim.Spec.VolumeName
	}
	return Content{Source: v1alpha1.ContentSourcePersistentVolumeClaim, Revision: rev, Size: -1, SingleAttach: SingleAttach(claim)}
}

// MemoryFor is the memory request and limit of the server container: spec.memory when set; else, when the content
// size is known (ConfigMaps; Git: the published bundle), 48Mi plus twice the content (the server keeps files in memory and a reload holds two copies)
// rounded up to a power of two mebibytes, at least 64Mi, so that small edits never change it and roll pods;
// else 256Mi.
func MemoryFor(site *v1alpha1.StaticSite, c Content) resource.Quantity {
	if site.Spec.Memory != nil {
		return *site.Spec.Memory
	}
	if c.Size < 0 {
		return resource.MustParse(defaultMemory)
	}
	const mi = 1 << 20
	need := uint64(48*mi) + 2*uint64(c.Size)
	mib := (need + mi - 1) / mi
	pow := uint64(1) << bits.Len64(mib-1)
	if pow < 64 {
		pow = 64
	}
	return *resource.NewQuantity(int64(pow*mi), resource.BinarySI)
}
