package staticsite

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// A real hyperstatic-server process playing a server pod's container: started with the arguments and environment
// of the server container the operator wrote into the Deployment, with the container's paths swapped for
// temporary directories, loopback ports, and --memory-limit set to the pod's memory, as the container's cgroup
// would set it. envtest runs no kubelet; this is the part of
// a pod the status under test is read from.

// startRealServer runs the server as the container would run it, serving root under the container's memory limit,
// and returns once its /readyz answers 200 (serverbin.Start: loopback ports, retried, killed when the test ends).
//
// Its site value is the ConfigMap the operator applied for the Deployment's site, as the pod would mount it.
func startRealServer(t *testing.T, d *appsv1.Deployment, root string) *serverbin.Process {
	t.Helper()
	bin := serverbin.Require(t)
	serverbin.RequireSiteValue(t, bin)
	container := d.Spec.Template.Spec.Containers[0]
	cm := &corev1.ConfigMap{}
	testenv.Eventually(t, "the site value ConfigMap", func() error {
		return k8s.Get(context.Background(), client.ObjectKey{Namespace: d.Namespace, Name: sitevalue.ConfigMapName(d.Name)}, cm)
	})
	// The container's variables, with its cache directory (an emptyDir) swapped for a temporary one.
	var env []string
	for _, e := range container.Env {
		if e.Value == desired.CompressCacheDir {
			e.Value = t.TempDir()
		}
		env = append(env, e.Name+"="+e.Value)
	}
	args := serverbin.SetFlag(t, container.Args, "--root", root)
	args = serverbin.WithSiteValue(t, args, []byte(cm.Data[sitevalue.Key]))
	args = append(args, "--memory-limit", container.Resources.Limits.Memory().String(), "--workers", "1")
	return serverbin.Start(t, bin, args, env...)
}
