// Package certmanager is what the operator knows of cert-manager (cert-manager.io/v1), and nothing more: the kind
// of the Certificate it owns for a StaticSite's spec.tls.issuerRef, and how cert-manager's status of it reads as
// the site's CertificateReady condition and status.certificate.
//
// cert-manager's Go module is not imported: it pins its own Kubernetes libraries and brings the clients of every
// DNS provider and issuer it supports, while the operator writes five fields of a Certificate and reads two
// conditions and three timestamps, all stable in cert-manager.io/v1. The objects are unstructured; the tests hold
// this package to the real CRD of a pinned cert-manager release (internal/testenv).
//
// The contract read from a Certificate's status:
//   - Ready (True/False/absent) says whether the Secret holds a valid certificate that matches the spec;
//     cert-manager writes it on every check, so an absent Ready means cert-manager has not seen the object yet.
//   - Issuing (True while a CertificateRequest is in flight; False with reason Failed after a failed issuance, and
//     cert-manager retries with a backoff; absent otherwise) says whether a new certificate is on its way.
//   - notAfter, renewalTime and revision describe the current certificate and when it will be renewed.
//
// Mapped onto CertificateReady (normal-true), first match wins:
//
//	Ready=True,  Issuing=True,
//	revision set                    → True  CertificateRenewing (the current certificate still serves)
//	Issuing=False, reason Failed    → False CertificateIssuanceFailed (also while the current certificate is
//	                                        valid: a renewal that keeps failing ends in an expired one)
//	Ready=True                      → True  CertificateIssued
//	Issuing=True                    → False CertificateIssuing
//	Ready=False/Unknown             → False CertificateNotReady
//	no Ready condition              → False CertificatePending
//
// A first issuance ends with Ready=True while Issuing=True is still set and no revision is recorded yet (seen with
// the real controllers: its readiness check sees the new Secret before the issuing controller records it): that is
// Issued, not a renewal.
//
// Each message carries cert-manager's own condition (type, status, reason, message), so the site's status says why
// without a look at the Certificate.
package certmanager

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// CertificateGVK is the kind the operator owns for spec.tls.issuerRef.
var CertificateGVK = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}

// cert-manager's condition types and the Issuing reason of a failed issuance.
const (
	conditionReady   = "Ready"
	conditionIssuing = "Issuing"
	reasonFailed     = "Failed"
)

// Observed is the part of a Certificate's status the operator reads.
type Observed struct {
	Ready, Issuing         *metav1.Condition // nil: absent
	NotAfter, RenewalTime  *metav1.Time
	Revision               *int64
	FailedIssuanceAttempts int64
}

// Read takes the status of a Certificate as the API server returned it. Fields of the wrong type are ignored (a
// status cert-manager did not write is as good as none).
func Read(u *unstructured.Unstructured) Observed {
	var o Observed
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		cond := &metav1.Condition{}
		cond.Type, _ = m["type"].(string)
		s, _ := m["status"].(string)
		cond.Status = metav1.ConditionStatus(s)
		cond.Reason, _ = m["reason"].(string)
		cond.Message, _ = m["message"].(string)
		switch cond.Type {
		case conditionReady:
			o.Ready = cond
		case conditionIssuing:
			o.Issuing = cond
		}
	}
	o.NotAfter = timeField(u, "notAfter")
	o.RenewalTime = timeField(u, "renewalTime")
	if r, ok, _ := unstructured.NestedInt64(u.Object, "status", "revision"); ok {
		o.Revision = &r
	}
	o.FailedIssuanceAttempts, _, _ = unstructured.NestedInt64(u.Object, "status", "failedIssuanceAttempts")
	return o
}

func timeField(u *unstructured.Unstructured, field string) *metav1.Time {
	s, ok, _ := unstructured.NestedString(u.Object, "status", field)
	if !ok {
		return nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return nil
	}
	mt := metav1.NewTime(t)
	return &mt
}

// Verdict is CertificateReady's status, reason and message for what cert-manager says of the Certificate name
// (the table in the package comment).
func (o Observed) Verdict(name string) (metav1.ConditionStatus, string, string) {
	ready := o.Ready != nil && o.Ready.Status == metav1.ConditionTrue
	issuing := o.Issuing != nil && o.Issuing.Status == metav1.ConditionTrue
	switch {
	case ready && issuing && o.Revision != nil:
		return metav1.ConditionTrue, v1alpha1.ReasonCertificateRenewing,
			fmt.Sprintf("%s; cert-manager is issuing its successor: %s", o.valid(name), said(o.Issuing))
	case o.Issuing != nil && o.Issuing.Status == metav1.ConditionFalse && o.Issuing.Reason == reasonFailed:
		current := "no valid certificate yet"
		if ready {
			current = o.valid(name)
		}
		return metav1.ConditionFalse, v1alpha1.ReasonCertificateIssuanceFailed,
			fmt.Sprintf("cert-manager failed to issue Certificate %s (%d failed attempts, retried with a backoff; %s): %s",
				name, o.FailedIssuanceAttempts, current, said(o.Issuing))
	case ready:
		return metav1.ConditionTrue, v1alpha1.ReasonCertificateIssued, o.valid(name)
	case issuing:
		return metav1.ConditionFalse, v1alpha1.ReasonCertificateIssuing,
			fmt.Sprintf("cert-manager is issuing Certificate %s: %s", name, said(o.Issuing))
	case o.Ready != nil:
		return metav1.ConditionFalse, v1alpha1.ReasonCertificateNotReady,
			fmt.Sprintf("cert-manager says Certificate %s is not ready: %s", name, said(o.Ready))
	}
	return metav1.ConditionFalse, v1alpha1.ReasonCertificatePending,
		fmt.Sprintf("cert-manager has not reported on Certificate %s yet (is its controller running?)", name)
}

// valid describes a ready certificate: its expiry and renewal, when cert-manager gave them.
func (o Observed) valid(name string) string {
	msg := "Certificate " + name + " is issued"
	if o.NotAfter != nil {
		msg += ", valid until " + o.NotAfter.UTC().Format(time.RFC3339)
	}
	if o.RenewalTime != nil {
		msg += ", renews at " + o.RenewalTime.UTC().Format(time.RFC3339)
	}
	return msg
}

// said is a cert-manager condition as "Type=Status Reason: message".
func said(c *metav1.Condition) string {
	return fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
}
