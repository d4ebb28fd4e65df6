package staticsite

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/htpasswd"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
)

// reconcileAccess reads the htpasswd Secret of spec.server.access and judges it (AccessApplied). The pods mount
// that Secret itself beside the site value (desired/sitevalue.go), so the hashes never sit in a ConfigMap and the
// operator needs no right to write Secrets; the server reads the file with the value and refuses a bad one,
// keeping the last good users serving. What the operator adds: saying why before a pod does, and leaving the
// Deployment alone while the Secret is missing or bad, so no new pod starts on it (a pod that starts without good
// users serves nothing). Like the TLS Secret, it is read by name every pass, not watched (least privilege: get
// only), and read again every TLSRecheck.
func (r *Reconciler) reconcileAccess(ctx context.Context, st *observation) error {
	site := st.site
	if !sitevalue.UsesHtpasswd(site) {
		return nil
	}
	ref := site.Spec.Server.Access.HtpasswdSecret
	key := ref.Key
	if key == "" {
		key = v1alpha1.DefaultHtpasswdKey
	}
	st.requeue(st.tun.tlsRecheck)
	secret := &corev1.Secret{}
	err := r.directReader().Get(ctx, types.NamespacedName{Namespace: site.Namespace, Name: ref.Name}, secret)
	c := metav1.Condition{Type: v1alpha1.ConditionAccessApplied, Status: metav1.ConditionFalse}
	data, hasKey := secret.Data[key]
	switch {
	case apierrors.IsNotFound(err) || (err == nil && !hasKey):
		c.Reason = v1alpha1.ReasonHtpasswdSecretNotFound
		c.Message = fmt.Sprintf("spec.server.access.htpasswdSecret: Secret %q has no key %q in namespace %s: new pods wait for it; "+
			"running pods keep the users they have", ref.Name, key, site.Namespace)
		if apierrors.IsNotFound(err) {
			c.Message = fmt.Sprintf("spec.server.access.htpasswdSecret: Secret %q not found in namespace %s: new pods wait for it; "+
				"running pods keep the users they have", ref.Name, site.Namespace)
		}
		st.skipDeployment = true
	case err != nil:
		return fmt.Errorf("read htpasswd Secret %s: %w", ref.Name, err)
	default:
		n, bad := htpasswd.Check(data)
		if bad != nil {
			c.Reason = v1alpha1.ReasonHtpasswdInvalid
			c.Message = fmt.Sprintf("spec.server.access.htpasswdSecret: Secret %q key %q: %v; the servers keep the last good users",
				ref.Name, key, bad)
			st.skipDeployment = true
		} else {
			c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonHtpasswdAccepted
			c.Message = fmt.Sprintf("Secret %q key %q: %d users, bcrypt", ref.Name, key, n)
		}
	}
	st.access = &c
	return nil
}
