package staticsite

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/reconcile"
)

// Event reasons of the site's Certificate (spec.tls.issuerRef) besides CertificateReady's own reasons.
const (
	// eventCertificateRenewed (Normal): status.certificate.notAfter moved: cert-manager issued a new certificate
	// into the Secret, which the running servers load without a restart.
	eventCertificateRenewed = "CertificateRenewed"
)

// recordCertificate: a Normal event when the certificate is issued (CertificateReady turns True) and when it is
// renewed (notAfter moves), a Warning when it turns False for a reason that needs attention; waiting for the
// first issuance (Pending, Issuing) is no news. Called once the status write is in, like every event.
func (r *Reconciler) recordCertificate(before, after *v1alpha1.StaticSite) {
	tr := reconcile.TransitionOf(before.Status.Conditions, after.Status.Conditions, v1alpha1.ConditionCertificateReady)
	switch {
	case tr.Became(metav1.ConditionTrue):
		r.Recorder.Event(after, corev1.EventTypeNormal, tr.After.Reason, "CertificateReady: "+tr.After.Message)
	case tr.Changed() && tr.After.Status == metav1.ConditionFalse && !waitingForIssuance(tr.After.Reason):
		r.Recorder.Event(after, corev1.EventTypeWarning, tr.After.Reason, "CertificateReady False: "+tr.After.Message)
	}
	was, now := before.Status.Certificate, after.Status.Certificate
	if was != nil && now != nil && was.NotAfter != nil && now.NotAfter != nil && !was.NotAfter.Equal(now.NotAfter) {
		r.Recorder.Eventf(after, corev1.EventTypeNormal, eventCertificateRenewed, "Certificate %s renewed: valid until %s (was %s)",
			now.Name, now.NotAfter.UTC().Format(time.RFC3339), was.NotAfter.UTC().Format(time.RFC3339))
	}
}

// waitingForIssuance: CertificateReady is False only because the certificate is on its way.
func waitingForIssuance(reason string) bool {
	return reason == v1alpha1.ReasonCertificatePending || reason == v1alpha1.ReasonCertificateIssuing
}
