package pool

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// A ConfigMap site's ConfigMaps are mirrored into the pool namespace (data and binaryData), owned by the pool and
// labelled with the site; a change to the source reaches the mirror; a ConfigMap the site drops, and every mirror
// of a site that leaves the pool, is deleted.
func TestMirrors(t *testing.T) {
	ctx := context.Background()
	poolNS, tenant := namespace(t, uniqueName("pool")), namespace(t, uniqueName("tenant"))
	pool := createPool(t, poolNS, []string{"*"}, 1)
	createConfigMap(t, tenant, "pages", map[string]string{"index.html": "v1"}, nil)
	createConfigMap(t, tenant, "assets", nil, map[string][]byte{"logo.png": {0x89, 'P', 'N', 'G', 0}})
	site := configMapSite(t, tenant, "docs", pool.Name, "pages", "assets")
	id := poolindex.ID(tenant, "docs")
	mirror := func(cm string) client.ObjectKey {
		return client.ObjectKey{Namespace: poolNS, Name: poolindex.MirrorName(pool.Name, id, cm)}
	}
	m := &corev1.ConfigMap{}
	testenv.Eventually(t, "the mirrors", func() error {
		if err := k8s.Get(ctx, mirror("assets"), m); err != nil {
			return err
		}
		return k8s.Get(ctx, mirror("pages"), m)
	})
	if m.Data["index.html"] != "v1" || m.Labels[v1alpha1.LabelSite] != "docs" || m.Labels[labelSiteNamespace] != tenant ||
		m.Annotations[annotationSite] != id || m.Labels[poolplacement.LabelPool] != pool.Name {
		t.Errorf("mirror of pages: labels %v annotations %v data %v", m.Labels, m.Annotations, m.Data)
	}
	if _, ok := m.Labels[v1alpha1.LabelManagedBy]; ok {
		t.Error("a mirror carries the managed-by label: the manager's cache would hold every site's files")
	}
	if ref := metav1.GetControllerOf(m); ref == nil || ref.Kind != "StaticSitePool" || ref.Name != pool.Name {
		t.Errorf("mirror controller %+v, want the pool", ref)
	}
	a := &corev1.ConfigMap{}
	testenv.Must(t, k8s.Get(ctx, mirror("assets"), a))
	if string(a.BinaryData["logo.png"]) != "\x89PNG\x00" {
		t.Errorf("binaryData not mirrored: %v", a.BinaryData)
	}

	// The tenant changes its content: the mirror follows.
	src := &corev1.ConfigMap{}
	testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: tenant, Name: "pages"}, src))
	src.Data["index.html"] = "v2"
	testenv.Must(t, k8s.Update(ctx, src))
	testenv.Eventually(t, "the mirror updated", func() error {
		if err := k8s.Get(ctx, mirror("pages"), m); err != nil {
			return err
		}
		if m.Data["index.html"] != "v2" || m.Annotations[annotationSourceVersion] != src.ResourceVersion {
			return fmt.Errorf("mirror data %v, source version %s (want %s)", m.Data, m.Annotations[annotationSourceVersion], src.ResourceVersion)
		}
		return nil
	})

	// The site drops assets: its mirror goes, pages' stays.
	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.Content.ConfigMaps = s.Spec.Content.ConfigMaps[:1] })
	testenv.Eventually(t, "the assets mirror deleted", func() error { return testenv.Gone(k8s.Get(ctx, mirror("assets"), &corev1.ConfigMap{})) })
	testenv.Must(t, k8s.Get(ctx, mirror("pages"), m))

	// The site leaves the pool: its mirrors and its entry go.
	updateSite(t, site, func(s *v1alpha1.StaticSite) {
		s.Spec.Placement = &v1alpha1.PlacementSpec{Mode: v1alpha1.PlacementDedicated}
	})
	testenv.Eventually(t, "the pages mirror deleted", func() error { return testenv.Gone(k8s.Get(ctx, mirror("pages"), &corev1.ConfigMap{})) })
	waitPool(t, pool.Name, "no site left", func(p *v1alpha1.StaticSitePool) error {
		if p.Status.Sites != 0 {
			return fmt.Errorf("sites %d", p.Status.Sites)
		}
		return nil
	})
	index, err := indexIDs(t, pool)
	testenv.Must(t, err)
	if len(index) != 0 {
		t.Errorf("index holds %v after the site left", keys(index))
	}
}

// A ConfigMap the pool does not control, under the name a mirror would take, is neither overwritten nor adopted: the
// pool says NotOwned and the object keeps its data. The operator decides from its metadata cache (step_mirrors.go),
// so the test waits until that cache holds the object before the site asks for the pool.
func TestMirrorNameTakenIsNotOverwritten(t *testing.T) {
	ctx := context.Background()
	poolNS, tenant := namespace(t, uniqueName("pool")), namespace(t, uniqueName("tenant"))
	pool := createPool(t, poolNS, []string{"*"}, 1)
	createConfigMap(t, tenant, "pages", map[string]string{"index.html": "tenant"}, nil)
	taken := poolindex.MirrorName(pool.Name, poolindex.ID(tenant, "docs"), "pages")
	createConfigMap(t, poolNS, taken, map[string]string{"owner": "someone else"}, nil)
	testenv.Eventually(t, "the operator's cache holds the foreign ConfigMap", func() error {
		return suiteReferenced.Get(ctx, client.ObjectKey{Namespace: poolNS, Name: taken}, configMapMeta())
	})

	configMapSite(t, tenant, "docs", pool.Name, "pages")
	waitPool(t, pool.Name, "NotOwned", func(p *v1alpha1.StaticSitePool) error {
		if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionStalled); c == nil || c.Reason != ReasonNotOwned ||
			!strings.Contains(c.Message, taken) {
			return fmt.Errorf("stalled %+v", c)
		}
		return nil
	})
	live := &corev1.ConfigMap{}
	testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: poolNS, Name: taken}, live))
	if live.Data["owner"] != "someone else" || len(live.Data) != 1 || metav1.GetControllerOf(live) != nil {
		t.Errorf("the foreign ConfigMap was written: data %v controller %v", live.Data, metav1.GetControllerOf(live))
	}
}
