package pool

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// The pool's objects as the API server stores them: the server pods (Guaranteed, restricted, no token, the index
// projected, the content emptyDir shared with the puller sidecar, the contract's command lines), their budget, and
// the fetcher (its own ServiceAccount with a token, a Role on ConfigMaps only, a Service, a NetworkPolicy that
// admits only the pool's pods and the operator). Pods made from both templates pass the restricted Pod Security
// Standard the pool namespace enforces.
func TestDesiredObjects(t *testing.T) {
	ctx := context.Background()
	poolNS := namespace(t, uniqueName("pool"))
	pool := createPool(t, poolNS, nil, 3)
	d := getDeployment(t, poolNS, poolplacement.ServerName(pool.Name))
	pod := d.Spec.Template.Spec

	if *d.Spec.Replicas != 2 || d.Spec.Selector.MatchLabels[poolplacement.LabelComponent] != poolplacement.ComponentServer {
		t.Errorf("replicas %d selector %v", *d.Spec.Replicas, d.Spec.Selector.MatchLabels)
	}
	for k, v := range poolplacement.PodSelector(pool.Name) {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("pod label %s=%q, want %q", k, d.Spec.Template.Labels[k], v)
		}
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("pool server pods must not mount an API token")
	}
	if sc := pod.SecurityContext; sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || *sc.RunAsUser != sitechild.ServerUID {
		t.Errorf("pod security context %+v", sc)
	}
	if len(pod.Containers) != 1 || len(pod.InitContainers) != 1 {
		t.Fatalf("containers %d, init containers %d", len(pod.Containers), len(pod.InitContainers))
	}
	server, puller := pod.Containers[0], pod.InitContainers[0]
	if server.Image != testServerImage || strings.Join(server.Args, " ") !=
		"--sites /pool --listen [::]:8080 --admin-listen [::]:9090 --drain-delay 5s --drain-hold 300s --shutdown-timeout 10s" {
		t.Errorf("server %s %q", server.Image, server.Args)
	}
	wantPull := "pool-pull --index /pool/index --dir /pool/content --fetcher http://" + pool.Name + "-fetcher." + poolNS + ".svc:8080 --listen :8082"
	if puller.Image != testAgentImage || strings.Join(puller.Args, " ") != wantPull {
		t.Errorf("puller %s %q, want %q", puller.Image, puller.Args, wantPull)
	}
	if puller.RestartPolicy == nil || *puller.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Error("the puller is not a native sidecar (restartPolicy Always)")
	}
	for _, c := range []corev1.Container{server, puller} {
		if !resourcesEqual(c.Resources.Requests, c.Resources.Limits) {
			t.Errorf("%s: requests %v != limits %v: not Guaranteed", c.Name, c.Resources.Requests, c.Resources.Limits)
		}
		sc := c.SecurityContext
		if sc == nil || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			t.Errorf("%s security context %+v", c.Name, sc)
		}
	}
	if cpu := server.Resources.Limits[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("1")) != 0 {
		t.Errorf("server CPU %s, want the pool's default 1", cpu.String())
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range server.VolumeMounts {
		mounts[m.Name] = m
	}
	if mounts[indexVolumeName].MountPath != "/pool/index" || !mounts[indexVolumeName].ReadOnly ||
		mounts[contentVolumeName].MountPath != "/pool/content" {
		t.Errorf("server mounts %+v", server.VolumeMounts)
	}
	for _, v := range pod.Volumes {
		switch v.Name {
		case indexVolumeName:
			var names []string
			for _, s := range v.Projected.Sources {
				names = append(names, s.ConfigMap.Name)
			}
			want := []string{poolplacement.IndexName(pool.Name, 0), poolplacement.IndexName(pool.Name, 1), poolplacement.IndexName(pool.Name, 2)}
			if !slices.Equal(names, want) {
				t.Errorf("index volume projects %v, want every shard %v", names, want)
			}
		case contentVolumeName:
			if v.EmptyDir == nil || v.EmptyDir.SizeLimit.Cmp(resource.MustParse("4Gi")) != 0 {
				t.Errorf("content volume %+v, want an emptyDir of the pool's disk (4Gi)", v.VolumeSource)
			}
		}
	}

	pdb := &policyv1.PodDisruptionBudget{}
	getObject(t, client.ObjectKey{Namespace: poolNS, Name: poolplacement.ServerName(pool.Name)}, pdb)
	if pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("budget %+v", pdb.Spec)
	}

	fetcher := getDeployment(t, poolNS, poolplacement.FetcherName(pool.Name))
	fp := fetcher.Spec.Template.Spec
	wantFetch := "pool-fetch --index /pool/index --namespace " + poolNS + " --check-server /hyperstatic-server --dir /var/lib/content --listen :8080"
	if *fetcher.Spec.Replicas != 1 || fetcher.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType ||
		strings.Join(fp.Containers[0].Args, " ") != wantFetch || fp.Containers[0].Image != testAgentImage {
		t.Errorf("fetcher: replicas %d strategy %s args %q, want %q", *fetcher.Spec.Replicas, fetcher.Spec.Strategy.Type, fp.Containers[0].Args, wantFetch)
	}
	if fp.ServiceAccountName != poolplacement.FetcherName(pool.Name) || fp.AutomountServiceAccountToken == nil || !*fp.AutomountServiceAccountToken {
		t.Errorf("fetcher account %q automount %v", fp.ServiceAccountName, fp.AutomountServiceAccountToken)
	}
	role := &rbacv1.Role{}
	getObject(t, client.ObjectKey{Namespace: poolNS, Name: poolplacement.FetcherName(pool.Name)}, role)
	if len(role.Rules) != 1 || !slices.Equal(role.Rules[0].Resources, []string{"configmaps"}) ||
		!slices.Equal(role.Rules[0].Verbs, []string{"get", "list", "watch"}) || !slices.Equal(role.Rules[0].APIGroups, []string{""}) {
		t.Errorf("fetcher Role %+v, want configmaps get/list/watch only", role.Rules)
	}
	rb := &rbacv1.RoleBinding{}
	getObject(t, client.ObjectKey{Namespace: poolNS, Name: poolplacement.FetcherName(pool.Name)}, rb)
	if rb.RoleRef.Name != role.Name || len(rb.Subjects) != 1 || rb.Subjects[0].Name != fp.ServiceAccountName || rb.Subjects[0].Namespace != poolNS {
		t.Errorf("RoleBinding %+v %+v", rb.RoleRef, rb.Subjects)
	}
	svc := &corev1.Service{}
	getObject(t, client.ObjectKey{Namespace: poolNS, Name: poolplacement.FetcherName(pool.Name)}, svc)
	if svc.Spec.Type != corev1.ServiceTypeClusterIP || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8080 ||
		svc.Spec.Selector[poolplacement.LabelComponent] != poolplacement.ComponentFetcher {
		t.Errorf("fetcher Service %+v", svc.Spec)
	}
	np := &networkingv1.NetworkPolicy{}
	getObject(t, client.ObjectKey{Namespace: poolNS, Name: poolplacement.FetcherName(pool.Name)}, np)
	if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].From) != 2 {
		t.Fatalf("NetworkPolicy ingress %+v", np.Spec.Ingress)
	}
	from := np.Spec.Ingress[0].From
	if from[0].PodSelector == nil || from[0].PodSelector.MatchLabels[poolplacement.LabelComponent] != poolplacement.ComponentServer || from[0].NamespaceSelector != nil ||
		from[1].NamespaceSelector == nil || from[1].NamespaceSelector.MatchLabels[corev1.LabelMetadataName] != testOperatorNamespace {
		t.Errorf("NetworkPolicy peers %+v, want the pool's server pods and the operator's namespace", from)
	}

	// Every object is the pool's, and labelled for the manager's cache.
	for _, o := range []client.Object{d, pdb, fetcher, role, rb, svc, np} {
		if ref := o.GetOwnerReferences(); len(ref) != 1 || ref[0].Name != pool.Name || ref[0].Kind != "StaticSitePool" {
			t.Errorf("%T %s owners %+v", o, o.GetName(), ref)
		}
		if o.GetLabels()[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByValue {
			t.Errorf("%T %s has no managed-by label", o, o.GetName())
		}
	}

	// Passes keep running (the served refresh, every second here) and write none of them.
	versions := func() string {
		var v []string
		for _, o := range []client.Object{&appsv1.Deployment{}, &policyv1.PodDisruptionBudget{}} {
			testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: poolNS, Name: poolplacement.ServerName(pool.Name)}, o))
			v = append(v, o.GetResourceVersion())
		}
		for _, o := range []client.Object{&appsv1.Deployment{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}, &corev1.Service{},
			&networkingv1.NetworkPolicy{}, &corev1.ServiceAccount{}} {
			testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: poolNS, Name: poolplacement.FetcherName(pool.Name)}, o))
			v = append(v, o.GetResourceVersion())
		}
		return strings.Join(v, ",")
	}
	v0 := versions()
	time.Sleep(2500 * time.Millisecond)
	if v1 := versions(); v1 != v0 {
		t.Errorf("objects rewritten without a change: resourceVersions %s, then %s", v0, v1)
	}

	// Pods of both templates pass the restricted Pod Security Standard (admission refuses them otherwise), and
	// the server pod is Guaranteed.
	p := runPod(t, d, pool.Name+"-a")
	if p.Status.QOSClass != corev1.PodQOSGuaranteed {
		t.Errorf("server pod QoS %q, want Guaranteed", p.Status.QOSClass)
	}
	runPod(t, fetcher, pool.Name+"-fetcher-a")
}

func resourcesEqual(a, b corev1.ResourceList) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

// getObject reads an object of the pool, waiting for the controller to create it.
func getObject(t *testing.T, key client.ObjectKey, o client.Object) {
	t.Helper()
	testenv.Eventually(t, fmt.Sprintf("%T %s", o, key), func() error { return k8s.Get(context.Background(), key, o) })
}
