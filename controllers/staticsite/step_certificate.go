package staticsite

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/internal/certmanager"
)

// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;list;watch;create;patch;delete

// certificateState is what the Certificate step saw: CertificateReady and status.certificate.
type certificateState struct {
	condition metav1.Condition
	status    *v1alpha1.CertificateStatus
}

// conditionOf is CertificateReady, nil when the step did not run or the site asks for no certificate.
func (c *certificateState) conditionOf() *metav1.Condition {
	if c == nil {
		return nil
	}
	return &c.condition
}

// reconcileCertificate applies the cert-manager Certificate of spec.tls.issuerRef for the hostnames the site holds
// (the hostname step ran first: a certificate is a claim on a name, so one another site holds is left out), or
// deletes the one the site made when the field goes. cert-manager's view of it becomes CertificateReady and
// status.certificate (internal/certmanager). Like the PodMonitor's CRD, cert-manager's may be missing: then
// CertificateReady says so and nothing else of the site is affected (its pods wait for the Secret). Installing
// cert-manager later is picked up without an edit: the Certificate CRD's watch wakes the site when it appears
// (optionalcrds.go), and the pass also retries after StalledRetry. The Certificate is watched from the first
// pass that applies one, so cert-manager's status changes (issued, renewing, failing) wake the site.
func (r *Reconciler) reconcileCertificate(ctx context.Context, st *observation) error {
	site := st.site
	if !desired.WantsCertificate(site) {
		// Not in the manager's cache: look only when the last pass reported one.
		if meta.FindStatusCondition(site.Status.Conditions, v1alpha1.ConditionCertificateReady) == nil {
			return nil
		}
		return r.deleteCertificate(ctx, st, "spec.tls.issuerRef is unset")
	}
	var held []v1alpha1.Hostname
	conflicts := ""
	if h := st.hostnames; h != nil {
		held = h.routed
		if len(h.conflicts) > 0 {
			conflicts = conflictMessage(h.conflicts) + "; "
		}
	}
	cs := &certificateState{status: &v1alpha1.CertificateStatus{Name: site.Name, SecretName: desired.TLSSecretName(site)}}
	for _, h := range held {
		cs.status.DNSNames = append(cs.status.DNSNames, string(h))
	}
	st.certificate = cs
	cond := &cs.condition
	cond.Type, cond.Status = v1alpha1.ConditionCertificateReady, metav1.ConditionFalse
	want := desired.Certificate(site, held)
	if want == nil {
		cond.Reason = v1alpha1.ReasonCertificateNoHostname
		cond.Message = conflicts + "no Certificate: the site holds none of its hostnames"
		return r.deleteCertificate(ctx, st, "the site holds none of its hostnames")
	}
	res, live, err := r.applyUnstructured(ctx, site, want)
	var notOwned *notOwnedError
	switch {
	case err == nil:
		if err := r.optional.ensure(certmanager.CertificateGVK); err != nil {
			return err
		}
		r.recordApply(site, "Certificate", res)
		seen := certmanager.Read(live)
		cond.Status, cond.Reason, cond.Message = seen.Verdict(site.Name)
		cond.Message = conflicts + cond.Message
		cs.status.NotAfter, cs.status.RenewalTime, cs.status.Revision = seen.NotAfter, seen.RenewalTime, seen.Revision
	case kindNotServed(err):
		if err := r.optional.forget(ctx, certmanager.CertificateGVK); err != nil {
			return err
		}
		cond.Reason = v1alpha1.ReasonCertManagerNotInstalled
		cond.Message = fmt.Sprintf("the cluster does not serve cert-manager.io/v1 Certificates: install cert-manager, or fill a Secret yourself "+
			"and name it in spec.tls.secretName; new pods wait for the Secret %s", cs.status.SecretName)
		st.requeue(st.tun.stalledRetry)
	case errors.As(err, &notOwned) || apierrors.IsInvalid(err) || apierrors.IsForbidden(err):
		cond.Reason, cond.Message = v1alpha1.ReasonCertificateRejected, err.Error()
		st.requeue(st.tun.stalledRetry)
	default:
		return fmt.Errorf("apply Certificate: %w", err)
	}
	return nil
}

// deleteCertificate deletes the site's Certificate, read around the cache. cert-manager leaves the Secret it
// filled (unless it runs with --enable-certificate-owner-ref): the pods that mount it keep serving.
func (r *Reconciler) deleteCertificate(ctx context.Context, st *observation, why string) error {
	live := &metav1.PartialObjectMetadata{}
	live.SetGroupVersionKind(certmanager.CertificateGVK)
	return r.deleteOwned(ctx, r.directReader(), st.site, "Certificate", live, why)
}
