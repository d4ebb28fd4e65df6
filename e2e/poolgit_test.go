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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/internal/gittestserver"
	"hyperstatic.dev/hyperstatic/internal/podstate"
)

// The pool scenario's Git server: the same e2e/cmd/gitserver image as gitserver_test.go's, but a public forge
// (plain HTTP, no credentials), because a pool takes only public repositories (docs/design/pools.md,
// "Credentials"). Its own namespace, so it runs beside the content-from-Git scenario's private server; the chart's
// tenancy policy allows its URLs (gitURLPrefixes).
const (
	poolGitNamespace = "e2e-poolgit"
	poolGitHost      = gitName + "." + poolGitNamespace + ".svc.cluster.local"
	poolGitListen    = 8080
	poolSitesRepo    = "pool-sites.git"
	poolDocsRepo     = "pool-pydocs.git"
)

func poolGitURL(repo string) string { return "http://" + poolGitHost + "/" + repo }

type publicGitServer struct {
	pf *portForward
}

// deployPublicGitServer starts the public Git server and forwards a loopback port to it for the test's pushes.
func deployPublicGitServer(t *testing.T) *publicGitServer {
	t.Helper()
	ctx := ctxFor(t, 3*time.Minute)
	deleteNamespace(t, poolGitNamespace)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: poolGitNamespace, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "restricted"}}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatalf("create namespace %s: %v", poolGitNamespace, err)
	}
	t.Cleanup(func() { deleteNamespace(t, poolGitNamespace) })
	labels := map[string]string{"app": gitName}
	c := restrictedContainer(gitName, gitServerImage(), "-listen", fmt.Sprintf(":%d", poolGitListen), "-repos", "/repos",
		"-init", poolSitesRepo+","+poolDocsRepo)
	c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: poolGitListen}}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "repos", MountPath: "/repos"}}
	c.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
	}
	c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}}, PeriodSeconds: 1}
	objs := []client.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: poolGitNamespace, Name: gitName}, Spec: corev1.ServiceSpec{
			Selector: labels, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}}},
		&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: poolGitNamespace, Name: gitName},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						AutomountServiceAccountToken: ptr.To(false),
						Containers:                   []corev1.Container{c},
						Volumes: []corev1.Volume{{Name: "repos", VolumeSource: corev1.VolumeSource{
							EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("1Gi"))}}}},
					},
				},
			},
		},
	}
	for _, o := range objs {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	eventually(t, 2*time.Minute, "public Git server ready", func(ctx context.Context) (bool, string, error) {
		pods, err := cs.CoreV1().Pods(poolGitNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + gitName})
		if err != nil {
			return false, err.Error(), nil
		}
		for i := range pods.Items {
			if podstate.Ready(&pods.Items[i]) {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d pods, none ready", len(pods.Items)), nil
	})
	return &publicGitServer{pf: startPortForward(t, poolGitNamespace, "svc/"+gitName, 80)}
}

// pushSites pushes each Git site's files: the small sites as branches of poolSitesRepo, the docs to poolDocsRepo.
func (g *publicGitServer) pushSites(t *testing.T, sites []poolSite) {
	t.Helper()
	repos := map[string]*gittestserver.Repo{}
	for _, s := range sites {
		if s.gitRepo == "" {
			continue
		}
		r := repos[s.gitRepo]
		if r == nil {
			r = gittestserver.NewRemoteRepo(t, fmt.Sprintf("http://localhost:%d/%s", g.pf.localPort, s.gitRepo), nil, nil)
			repos[s.gitRepo] = r
		}
		tree := map[string]gittestserver.File{}
		for _, f := range s.files {
			tree[strings.TrimPrefix(f.path, "/")] = gittestserver.Regular(string(f.data))
		}
		start := time.Now()
		r.Push("refs/heads/"+s.branch, r.Commit(s.name, tree), false)
		t.Logf("pushed %s (%d files) to %s %s in %s", s.key(), len(tree), s.gitRepo, s.branch, time.Since(start).Round(time.Millisecond))
	}
}
