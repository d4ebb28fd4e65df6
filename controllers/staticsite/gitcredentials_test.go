package staticsite

import (
	"context"
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// The confused deputy of issue 38 (item 5): a Secret of the namespace that is not labelled as Git credentials (a
// deploy key the platform keeps there) named in spec.content.git.secretRef is never mounted into the fetcher: the
// site says GitSecretNotLabelled naming the field, and the fetcher Deployment has neither the volume nor
// --secret-dir. Once the Secret's owner labels it, the fetcher mounts it and the refusal goes.
func TestGitCredentialsNeedTheirLabel(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	key := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "platform-deploy-key"},
		Data: map[string][]byte{"identity": []byte("not a real key"), "known_hosts": []byte("example.com ssh-ed25519 AAAA")}}
	testenv.Must(t, k8s.Create(ctx, key))
	spec := gitSiteSpec("http://127.0.0.1:1/docs.git")
	spec.Content.Git.SecretRef = &v1alpha1.LocalObjectReference{Name: key.Name}
	spec.Memory = ptr.To(resource.MustParse("64Mi"))
	createGitSite(t, ns, "docs", spec)

	waitGit(t, ns, "docs", "GitSecretNotLabelled", all(
		conditionWith(v1alpha1.ConditionContentAvailable, metav1.ConditionFalse, v1alpha1.ReasonGitSecretNotLabelled,
			`Secret "platform-deploy-key" (spec.content.git.secretRef) is not labelled hyperstatic.dev/git-credentials`),
		condition2(v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonGitSecretNotLabelled)))
	requireFetcherMounts(t, ns, key.Name, false)

	// The owner says it is meant for this: the next pass mounts it (an edit of the site starts one at once; the
	// operator does not watch Secrets).
	key.Labels = map[string]string{v1alpha1.LabelGitCredentials: "true"}
	testenv.Must(t, k8s.Update(ctx, key))
	site := &v1alpha1.StaticSite{}
	testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "docs"}, site))
	site.Annotations = map[string]string{"test/poke": "1"}
	testenv.Must(t, k8s.Update(ctx, site))
	waitGit(t, ns, "docs", "no longer refused", func(s *v1alpha1.StaticSite) error {
		if c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionContentAvailable); c == nil || c.Reason == v1alpha1.ReasonGitSecretNotLabelled {
			return fmt.Errorf("ContentAvailable %+v", c)
		}
		return nil
	})
	requireFetcherMounts(t, ns, key.Name, true)
}

// requireFetcherMounts waits until the fetcher Deployment of docs mounts the Secret name (with --secret-dir) or
// does not name it anywhere.
func requireFetcherMounts(t *testing.T, ns, name string, want bool) {
	t.Helper()
	testenv.Eventually(t, fmt.Sprintf("fetcher mounts Secret %s: %v", name, want), func() error {
		d := &appsv1.Deployment{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "docs-git"}, d); err != nil {
			return err
		}
		spec := d.Spec.Template.Spec
		mounted := slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == name })
		dirArg := slices.Contains(spec.Containers[0].Args, "--secret-dir")
		if mounted != want || dirArg != want {
			return fmt.Errorf("volume of the Secret %v, --secret-dir %v; want %v (volumes %+v)", mounted, dirArg, want, spec.Volumes)
		}
		return nil
	})
}
