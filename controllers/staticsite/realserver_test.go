package staticsite

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"hyperstatic.dev/hyperstatic/internal/serverbin"
)

// A real hyperstatic-server process playing a server pod's container: started with the arguments and environment
// of the server container the operator wrote into the Deployment, with the container's paths swapped for
// temporary directories, loopback ports, and --memory-limit set to the pod's memory, as the container's cgroup
// would set it. envtest runs no kubelet; this is the part of
// a pod the status under test is read from.

// startRealServer runs the server as the container would run it, serving root under the container's memory limit,
// and returns once its /readyz answers 200 (serverbin.Start: loopback ports, retried, killed when the test ends).
func startRealServer(t *testing.T, container corev1.Container, root string) *serverbin.Process {
	t.Helper()
	bin := serverbin.Require(t)
	// The container's variables, with its cache directory (an emptyDir) swapped for a temporary one.
	var env []string
	for _, e := range container.Env {
		if e.Value == compressCacheDir {
			e.Value = t.TempDir()
		}
		env = append(env, e.Name+"="+e.Value)
	}
	args := serverbin.SetFlag(t, container.Args, "--root", root)
	args = append(args, "--memory-limit", container.Resources.Limits.Memory().String(), "--workers", "1")
	return serverbin.Start(t, bin, args, env...)
}
