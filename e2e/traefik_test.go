//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// Traefik, a real ingress controller (Ingress and Gateway API), deployed by the route scenario into its own
// namespace and watching only that namespace. Its image is built on the host (make/traefik.mk).

const (
	traefikName              = "traefik"
	traefikWebPort           = 8000 // the "web" entry point; a Gateway listener must use this port to bind to it
	traefikPingPort          = 8080
	traefikIngressController = "traefik.io/ingress-controller"
	traefikGatewayController = "traefik.io/gateway-controller"
)

// traefikRoutes is a running Traefik: the class names StaticSites route through, and its Service's URL.
type traefikRoutes struct {
	ingressClass, gatewayClass string
	base                       string // http://traefik.<ns>.svc: the web entry point
}

// installGatewayAPICRDs installs the standard-channel CRDs of go.mod's Gateway API version (the one Traefik 3.6
// implements) and waits until they are served. They stay: a cluster keeps its Gateway API once installed, and the
// operator's watch of HTTPRoutes would only log errors if they went.
func installGatewayAPICRDs(t *testing.T) {
	t.Helper()
	dir, err := testenv.GatewayAPIStandardCRDs()
	if err != nil {
		t.Fatalf("Gateway API CRDs: %v", err)
	}
	crds, err := envtest.InstallCRDs(rcfg, envtest.CRDInstallOptions{Paths: []string{dir}, ErrorIfPathMissing: true})
	if err != nil {
		t.Fatalf("install the Gateway API CRDs from %s: %v", dir, err)
	}
	t.Logf("Gateway API CRDs installed from %s: %d", dir, len(crds))
}

// deployTraefik runs Traefik in ns with the least RBAC its two providers need, an IngressClass and a
// GatewayClass of its own (cluster-scoped, deleted at the end), and waits until it is Ready.
func deployTraefik(t *testing.T, ns string) traefikRoutes {
	t.Helper()
	ctx := ctxFor(t, 3*time.Minute)
	tr := traefikRoutes{
		ingressClass: "e2e-traefik-" + ns,
		gatewayClass: "e2e-traefik-" + ns,
		base:         fmt.Sprintf("http://%s.%s.svc", traefikName, ns),
	}
	clusterName := "e2e-traefik-" + ns
	objects := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: traefikName}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: clusterName}, Rules: traefikClusterRules()},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: clusterName},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: traefikName}},
		},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: traefikName}, Rules: traefikNamespaceRules()},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: traefikName},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: traefikName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: traefikName}},
		},
		&networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: tr.ingressClass},
			Spec: networkingv1.IngressClassSpec{Controller: traefikIngressController}},
		&gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: tr.gatewayClass},
			Spec: gatewayv1.GatewayClassSpec{ControllerName: traefikGatewayController}},
		traefikDeployment(ns, tr.ingressClass),
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: traefikName},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{"app": traefikName},
				Ports:    []corev1.ServicePort{{Name: "web", Port: 80, TargetPort: intstr.FromInt32(traefikWebPort)}},
			},
		},
	}
	for _, o := range objects {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
		if o.GetNamespace() == "" { // the namespace's deletion takes the others
			t.Cleanup(func() {
				if err := k8s.Delete(context.Background(), o); err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("delete %T %s: %v", o, o.GetName(), err)
				}
			})
		}
	}
	eventually(t, 2*time.Minute, "Traefik Ready", func(ctx context.Context) (bool, string, error) {
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: traefikName}, d); err != nil {
			return false, err.Error(), nil
		}
		return d.Status.ReadyReplicas == 1, fmt.Sprintf("ready replicas %d", d.Status.ReadyReplicas), nil
	})
	return tr
}

// traefikDeployment: one Traefik pod under the restricted Pod Security Standard (non-root, read-only root
// filesystem, no capability: it listens on unprivileged ports), both Kubernetes providers limited to ns, the
// Ingress provider to our IngressClass. Ready once /ping answers; routes come later (the providers' caches sync
// in the background), so the scenario polls for each one.
func traefikDeployment(ns, ingressClass string) *appsv1.Deployment {
	c := restrictedContainer(traefikName, cfg.traefikImage,
		// Nothing may leave the machine: no version check, no usage report.
		"--global.checkNewVersion=false",
		"--global.sendAnonymousUsage=false",
		fmt.Sprintf("--entryPoints.web.address=:%d", traefikWebPort),
		fmt.Sprintf("--entryPoints.traefik.address=:%d", traefikPingPort),
		"--ping=true",
		"--providers.kubernetesIngress.namespaces="+ns,
		"--providers.kubernetesIngress.ingressClass="+ingressClass,
		"--providers.kubernetesGateway.namespaces="+ns,
	)
	c.Ports = []corev1.ContainerPort{{Name: "web", ContainerPort: traefikWebPort}, {Name: "ping", ContainerPort: traefikPingPort}}
	c.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ping", Port: intstr.FromString("ping")}},
		PeriodSeconds: 1,
	}
	c.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
	}
	labels := map[string]string{"app": traefikName}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: traefikName},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{ServiceAccountName: traefikName, Containers: []corev1.Container{c}},
			},
		},
	}
}

// traefikClusterRules are the cluster-scoped reads Traefik 3.6 cannot do without, read from its providers' code
// (pkg/provider/kubernetes/{ingress,gateway}/client.go): IngressClasses (to match ingressClassName; the same
// informer factory also lists Nodes, which only disableClusterScopeResources turns off, and that option turns
// off the IngressClass lookup too), Namespaces (a Gateway's allowedRoutes selector), GatewayClasses and their
// status.
func traefikClusterRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{networkingv1.GroupName}, Resources: []string{"ingressclasses"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"nodes", "namespaces"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{gatewayv1.GroupName}, Resources: []string{"gatewayclasses"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{gatewayv1.GroupName}, Resources: []string{"gatewayclasses/status"}, Verbs: []string{"update"}},
	}
}

// traefikNamespaceRules are the reads of the namespace Traefik watches (its informers list and watch; status is
// written with update), and the status of the Gateways and HTTPRoutes it accepts.
func traefikNamespaceRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"services", "secrets", "configmaps"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{networkingv1.GroupName}, Resources: []string{"ingresses"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{gatewayv1.GroupName},
			Resources: []string{"gateways", "httproutes", "grpcroutes", "referencegrants", "backendtlspolicies"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{gatewayv1.GroupName}, Resources: []string{"gateways/status", "httproutes/status"}, Verbs: []string{"update"}},
	}
}

// traefikForbidden returns the lines of Traefik's log where the API server refused it something: with the least
// RBAC, a missing rule shows there first (an informer that cannot list never syncs, a status that cannot be
// written stays empty).
func traefikForbidden(t *testing.T, ns string) []string {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + traefikName})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("Traefik pod: %v (%d pods)", err, len(pods.Items))
	}
	raw, err := cs.CoreV1().Pods(ns).GetLogs(pods.Items[0].Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("Traefik log: %v", err)
	}
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(line, "forbidden") {
			out = append(out, line)
		}
	}
	return out
}
