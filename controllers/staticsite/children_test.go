package staticsite

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// Services written by operator versions that published the admin port lose it on upgrade: the new operator applies
// the Service without it as the same field manager, so server-side apply removes the entry it no longer applies.
func TestUpgradeRemovesTheAdminPortFromTheService(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	site := createSite(t, ns, "legacy", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/site:v1"}})
	svc := &corev1.Service{}
	testenv.Eventually(t, "Service", func() error { return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "legacy"}, svc) })

	// What the previous operator version applied: the site's port and the admin port.
	old := desired.Service(site)
	old.Spec.WithPorts(corev1ac.ServicePort().WithName(v1alpha1.AdminPortName).WithProtocol(corev1.ProtocolTCP).
		WithAppProtocol("http").WithPort(v1alpha1.AdminPort).WithTargetPort(intstr.FromString(v1alpha1.AdminPortName)))
	testenv.Must(t, k8s.Apply(ctx, old, client.FieldOwner(sitechild.FieldOwner), client.ForceOwnership))

	testenv.Eventually(t, "admin port removed from the Service", func() error {
		fresh := &corev1.Service{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "legacy"}, fresh); err != nil {
			return err
		}
		for _, p := range fresh.Spec.Ports {
			if p.Port == v1alpha1.AdminPort || p.Name == v1alpha1.AdminPortName {
				return fmt.Errorf("Service still publishes %s/%d", p.Name, p.Port)
			}
		}
		if len(fresh.Spec.Ports) != 1 {
			return fmt.Errorf("ports %+v, want only the site's", fresh.Spec.Ports)
		}
		return nil
	})
}

// An object with a child's name that the site does not own is never taken over (it would be deleted with the
// site): the site is Stalled with reason NotOwned, the object is left as it was, and once it is gone the periodic
// retry of stalled sites creates the site's own. The foreign objects carry no operator label, so the manager's
// cache (production settings) cannot see them: only the direct read before the first apply finds them.
func TestForeignObjectsAreNeverAdopted(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	foreignSvc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken", Labels: map[string]string{"app": "theirs"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "theirs", Port: 7000}}, Selector: map[string]string{"app": "theirs"}}}
	testenv.Must(t, k8s.Create(ctx, foreignSvc))
	foreignPDB := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(3)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "theirs"}}}}
	testenv.Must(t, k8s.Create(ctx, foreignPDB))

	createSite(t, ns, "taken", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/site:v1"}, Replicas: ptr.To[int32](2)})
	waitSite(t, ns, "taken", "Stalled NotOwned naming the Service", func(s *v1alpha1.StaticSite) error {
		if err := condition(s, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonNotOwned); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionStalled); !strings.Contains(c.Message, "Service "+ns+"/taken") {
			return fmt.Errorf("message %q does not name the Service", c.Message)
		}
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonNotOwned)
	})
	waitEvent(t, ns, "taken", "Stalled: Service "+ns+"/taken exists and is not owned by this StaticSite")

	for _, obj := range []client.Object{&corev1.Service{}, &policyv1.PodDisruptionBudget{}} {
		testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "taken"}, obj))
		if len(obj.GetOwnerReferences()) != 0 || obj.GetLabels()[v1alpha1.LabelManagedBy] != "" {
			t.Errorf("%T was taken over: owners %v labels %v", obj, obj.GetOwnerReferences(), obj.GetLabels())
		}
	}
	svc := &corev1.Service{}
	testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "taken"}, svc))
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 7000 || svc.Spec.Selector["app"] != "theirs" {
		t.Errorf("foreign Service changed: %+v", svc.Spec)
	}

	// The owner removes them; nothing the controller watches changes, the periodic retry heals the site.
	testenv.Must(t, k8s.Delete(ctx, foreignSvc))
	testenv.Must(t, k8s.Delete(ctx, foreignPDB))
	waitSite(t, ns, "taken", "no longer Stalled", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionStalled, "", "")
	})
	for _, obj := range []client.Object{&corev1.Service{}, &policyv1.PodDisruptionBudget{}} {
		testenv.Eventually(t, fmt.Sprintf("the site's own %T", obj), func() error {
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "taken"}, obj); err != nil {
				return err
			}
			if len(obj.GetOwnerReferences()) != 1 || obj.GetOwnerReferences()[0].Kind != "StaticSite" {
				return fmt.Errorf("owners %v", obj.GetOwnerReferences())
			}
			return nil
		})
	}
}

func TestDriftIsCorrected(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	createSite(t, ns, "blog", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/blog:v1"}, Replicas: ptr.To[int32](2)})
	d := getDeployment(t, ns, "blog")

	// Someone edits fields the operator owns (a plain update, as `kubectl edit` does).
	testenv.Eventually(t, "edit Deployment", func() error {
		testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(d), d))
		d.Spec.Replicas = ptr.To[int32](5)
		d.Spec.Template.Spec.Containers[0].Image = "evil/image:latest"
		d.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("3")
		return k8s.Update(ctx, d)
	})
	testenv.Eventually(t, "Deployment restored", func() error {
		testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(d), d))
		c := d.Spec.Template.Spec.Containers[0]
		if *d.Spec.Replicas != 2 || c.Image != "example/blog:v1" || c.Resources.Limits.Cpu().String() != "1" {
			return fmt.Errorf("replicas %d image %s cpu %s", *d.Spec.Replicas, c.Image, c.Resources.Limits.Cpu())
		}
		return nil
	})
	waitEvent(t, ns, "blog", "Updated Deployment blog")

	// A deleted Service comes back; a changed selector is put back.
	svc := &corev1.Service{}
	testenv.Eventually(t, "Service", func() error { return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "blog"}, svc) })
	testenv.Must(t, k8s.Delete(ctx, svc))
	testenv.Eventually(t, "Service recreated", func() error {
		fresh := &corev1.Service{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "blog"}, fresh); err != nil {
			return err
		}
		if fresh.UID == svc.UID {
			return fmt.Errorf("still the old Service")
		}
		return nil
	})
	pdb := &policyv1.PodDisruptionBudget{}
	testenv.Eventually(t, "PDB", func() error { return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "blog"}, pdb) })
	testenv.Eventually(t, "edit PDB", func() error {
		testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(pdb), pdb))
		pdb.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(0))
		return k8s.Update(ctx, pdb)
	})
	testenv.Eventually(t, "PDB restored", func() error {
		testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(pdb), pdb))
		if pdb.Spec.MaxUnavailable.IntValue() != 1 {
			return fmt.Errorf("maxUnavailable %s", pdb.Spec.MaxUnavailable.String())
		}
		return nil
	})
}

func TestOwnerReferences(t *testing.T) {
	// envtest runs no garbage collector, so deletion of the children cannot be observed here. What makes the
	// collector delete them is their owner reference: controller, blockOwnerDeletion, the site's UID. Check that.
	ctx := context.Background()
	ns := namespace(t)
	site := createSite(t, ns, "owned", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/o:v1"}, Replicas: ptr.To[int32](3)})
	testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(site), site))
	for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &policyv1.PodDisruptionBudget{}} {
		testenv.Eventually(t, fmt.Sprintf("%T", obj), func() error { return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "owned"}, obj) })
		want := []metav1.OwnerReference{{APIVersion: "hyperstatic.dev/v1alpha1", Kind: "StaticSite", Name: "owned", UID: site.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
		if got := obj.GetOwnerReferences(); !reflect.DeepEqual(got, want) {
			t.Errorf("%T owner references %+v, want %+v", obj, got, want)
		}
		if obj.GetLabels()[v1alpha1.LabelSite] != "owned" || obj.GetLabels()[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByValue {
			t.Errorf("%T labels %v", obj, obj.GetLabels())
		}
	}
}

func TestApplyIsSkippedWhenUnchanged(t *testing.T) {
	// The extracted fields the operator owns, read back from a real API server, equal the desired objects: a
	// second apply of the same objects sends nothing.
	ns := namespace(t)
	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "noop", UID: "0000-noop"},
		Spec: v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "a", PathPrefix: "p"}}},
			Replicas: ptr.To[int32](3), CPU: ptr.To(resource.MustParse("1500m")), Memory: ptr.To(resource.MustParse("1Gi")),
			PodTemplate: v1alpha1.PodTemplateOverrides{Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}},
				PodIdentity: v1alpha1.PodIdentity{ImagePullSecrets: []v1alpha1.LocalObjectReference{{Name: "b"}, {Name: "a"}}, ServiceAccountName: "sa"},
				Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
					Weight: 10, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: corev1.LabelHostname}}}}}},
			Server: v1alpha1.ServerSpec{DrainDelay: &metav1.Duration{Duration: 7 * 1e9}}}}
	content := desired.ConfigMapsContent(site, []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "1"}, Data: map[string]string{"x.html": "x"}}})
	key := client.ObjectKey{Namespace: ns, Name: "noop"}
	applyTwice(t, site, key, []applyCase{
		{"Deployment", func() client.Object { return &appsv1.Deployment{} }, func() any {
			return desired.Deployment(site, testServerImage, content, desired.MemoryFor(site, content))
		}, extractDeployment},
		{"Service", func() client.Object { return &corev1.Service{} }, func() any { return desired.Service(site) }, extractService},
		{"PodDisruptionBudget", func() client.Object { return &policyv1.PodDisruptionBudget{} }, func() any { return desired.PodDisruptionBudget(site) }, extractPodDisruptionBudget},
	})
}

// applyCase is one kind of child for applyTwice.
type applyCase struct {
	kind    string
	obj     func() client.Object
	desired func() any
	extract func(client.Object) (any, error)
}

// applyTwice applies each desired child twice through applyChild and expects Created, then Unchanged: the fields
// the operator owns, read back from the API server, equal the desired object.
func applyTwice(t *testing.T, site *v1alpha1.StaticSite, key client.ObjectKey, cases []applyCase) {
	t.Helper()
	ctx := context.Background()
	for _, tc := range cases {
		var results []applyResult
		for range 2 {
			res, err := applyChild(ctx, k8s, k8s, site, tc.kind, tc.obj(), tc.desired().(runtime.ApplyConfiguration), key, tc.extract)
			if err != nil {
				t.Fatalf("%s: %v", tc.kind, err)
			}
			results = append(results, res)
		}
		if results[0] != applyCreated || results[1] != applyUnchanged {
			live := tc.obj()
			testenv.Must(t, k8s.Get(ctx, key, live))
			owned, _ := tc.extract(live)
			t.Errorf("%s: results %v, want [Created Unchanged]\nowned:   %s\ndesired: %s", tc.kind, results, jsonOf(owned), jsonOf(tc.desired()))
		}
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
