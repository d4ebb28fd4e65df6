package staticsite

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// pinTokenFile plays the kubelet for the fetcher's pin token volume: the Secret's key that the volume mounted at
// the flag's directory names, written into dir, as the pod would see it at start (the operator makes the Secret
// before the Deployment). It returns the file the fetcher reads.
func pinTokenFile(t *testing.T, d *appsv1.Deployment, c corev1.Container, flagFile, dir string) string {
	t.Helper()
	volume := ""
	for _, m := range c.VolumeMounts {
		if m.MountPath == filepath.Dir(flagFile) {
			volume = m.Name
		}
	}
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name != volume || v.Secret == nil {
			continue
		}
		s := &corev1.Secret{}
		testenv.Must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: d.Namespace, Name: v.Secret.SecretName}, s))
		testenv.Must(t, os.MkdirAll(dir, 0o755))
		for _, item := range v.Secret.Items {
			if item.Path == filepath.Base(flagFile) {
				testenv.Must(t, os.WriteFile(filepath.Join(dir, item.Path), s.Data[item.Key], 0o600))
			}
		}
	}
	return filepath.Join(dir, filepath.Base(flagFile))
}
