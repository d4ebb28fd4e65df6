package staticsite

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
)

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// reconcileTLS reads the Secret of spec.tls (desired.TLSSecretName) and judges its certificate. Least privilege:
// the operator may only get Secrets by name. A watch, even of metadata only, needs list and watch, which RBAC
// cannot tell from reading every Secret of the cluster; so the Secret is read directly every pass and the pass
// runs again every TLSRecheck (and when the certificate expires) while spec.tls is set.
func (r *Reconciler) reconcileTLS(ctx context.Context, st *observation) error {
	site := st.site
	if site.Spec.TLS == nil {
		return nil
	}
	now := st.now
	secret := &corev1.Secret{}
	name, field, filler := desired.TLSSecretName(site), "spec.tls.secretName", ""
	if desired.WantsCertificate(site) {
		field, filler = "spec.tls.issuerRef", " (cert-manager fills it: see CertificateReady)"
	}
	err := r.directReader().Get(ctx, types.NamespacedName{Namespace: site.Namespace, Name: name}, secret)
	var v certVerdict
	switch {
	case apierrors.IsNotFound(err):
		v = certVerdict{reason: v1alpha1.ReasonSecretNotFound,
			message: fmt.Sprintf("Secret %q not found in namespace %s%s: new pods wait for it; running pods keep serving", name, site.Namespace, filler)}
	case err != nil:
		return fmt.Errorf("read TLS Secret %s: %w", name, err)
	case secret.Type != corev1.SecretTypeTLS:
		// Only a Secret made to be a certificate is mounted: another (a token, a registry credential) that merely
		// has the two keys is not the site's to serve with. The Deployment is left as it is (Stalled).
		v = certVerdict{reason: v1alpha1.ReasonSecretInvalid, message: fmt.Sprintf("%s: Secret %q is of type %q, not %s: "+
			"the pods do not mount it", field, name, secret.Type, corev1.SecretTypeTLS)}
		st.reject(&problem{Reason: v.reason, Message: v.message})
		st.skipDeployment = true
	default:
		v = checkCertificate(secret, now)
	}
	c := metav1.Condition{Type: v1alpha1.ConditionTLSReady, Status: metav1.ConditionFalse, Reason: v.reason, Message: v.message}
	if v.ok {
		c.Status = metav1.ConditionTrue
	}
	st.tls = &c
	st.requeue(st.tun.tlsRecheck)
	if v.ok && v.notAfter.After(now) {
		st.requeue(v.notAfter.Sub(now) + time.Second) // say "expired" on time
	}
	return nil
}
