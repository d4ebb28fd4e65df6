package certmanager

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

func certificate(status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cert-manager.io/v1", "kind": "Certificate"}}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

func cond(typ, status, reason, msg string) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": msg}
}

// Every row of the package comment's table, from statuses in the shape cert-manager writes them, and a status
// cert-manager did not write (wrong types) read as none.
func TestVerdict(t *testing.T) {
	const notAfter, renewal = "2027-02-20T01:02:03Z", "2027-01-21T01:02:03Z"
	ready := cond("Ready", "True", "Ready", "Certificate is up to date and has not expired")
	for _, tc := range []struct {
		name     string
		status   map[string]any
		want     metav1.ConditionStatus
		reason   string
		contains []string
	}{
		{"no status: cert-manager has not seen it", nil, metav1.ConditionFalse, v1alpha1.ReasonCertificatePending,
			[]string{"cert-manager has not reported on Certificate docs yet"}},
		{"first issuance", map[string]any{"conditions": []any{
			cond("Ready", "False", "DoesNotExist", "Issuing certificate as Secret does not exist"),
			cond("Issuing", "True", "DoesNotExist", "Issuing certificate as Secret does not exist")}},
			metav1.ConditionFalse, v1alpha1.ReasonCertificateIssuing,
			[]string{"cert-manager is issuing Certificate docs: Issuing=True DoesNotExist: Issuing certificate as Secret does not exist"}},
		{"issued", map[string]any{"conditions": []any{ready}, "notAfter": notAfter, "renewalTime": renewal, "revision": int64(1)},
			metav1.ConditionTrue, v1alpha1.ReasonCertificateIssued,
			[]string{"Certificate docs is issued, valid until " + notAfter + ", renews at " + renewal}},
		{"renewing", map[string]any{"conditions": []any{ready, cond("Issuing", "True", "Renewing", "Renewing certificate as renewal was scheduled")},
			"notAfter": notAfter, "revision": int64(1)}, metav1.ConditionTrue, v1alpha1.ReasonCertificateRenewing,
			[]string{"valid until " + notAfter, "issuing its successor: Issuing=True Renewing: Renewing certificate as renewal was scheduled"}},
		{"first issuance finishing: Ready before Issuing goes, no revision yet", map[string]any{"conditions": []any{ready,
			cond("Issuing", "True", "DoesNotExist", "Issuing certificate as Secret does not exist")}, "notAfter": notAfter},
			metav1.ConditionTrue, v1alpha1.ReasonCertificateIssued, []string{"Certificate docs is issued, valid until " + notAfter}},
		{"renewal failing while the current one is valid", map[string]any{"conditions": []any{ready,
			cond("Issuing", "False", "Failed", "The certificate request has failed to complete and will be retried: ACME order refused")},
			"notAfter": notAfter, "failedIssuanceAttempts": int64(3)}, metav1.ConditionFalse, v1alpha1.ReasonCertificateIssuanceFailed,
			[]string{"3 failed attempts", "Certificate docs is issued, valid until " + notAfter, "Issuing=False Failed: The certificate request has failed"}},
		{"first issuance failing", map[string]any{"conditions": []any{cond("Ready", "False", "DoesNotExist", "no Secret"),
			cond("Issuing", "False", "Failed", "issuer refused")}, "failedIssuanceAttempts": int64(1)},
			metav1.ConditionFalse, v1alpha1.ReasonCertificateIssuanceFailed, []string{"no valid certificate yet", "issuer refused"}},
		{"not ready, not issuing", map[string]any{"conditions": []any{cond("Ready", "False", "IssuerNotReady", "ClusterIssuer ca is not ready")}},
			metav1.ConditionFalse, v1alpha1.ReasonCertificateNotReady,
			[]string{"Certificate docs is not ready: Ready=False IssuerNotReady: ClusterIssuer ca is not ready"}},
		{"Issuing False for another reason is not a failure", map[string]any{"conditions": []any{ready, cond("Issuing", "False", "Done", "")}},
			metav1.ConditionTrue, v1alpha1.ReasonCertificateIssued, nil},
		{"fields of the wrong type", map[string]any{"conditions": "Ready", "notAfter": int64(5), "revision": "one"},
			metav1.ConditionFalse, v1alpha1.ReasonCertificatePending, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, reason, msg := Read(certificate(tc.status)).Verdict("docs")
			if status != tc.want || reason != tc.reason {
				t.Errorf("%s/%s (%s), want %s/%s", status, reason, msg, tc.want, tc.reason)
			}
			for _, s := range tc.contains {
				if !strings.Contains(msg, s) {
					t.Errorf("message %q does not contain %q", msg, s)
				}
			}
		})
	}
}

// Read takes the timestamps and revision as cert-manager writes them (RFC 3339, an integer).
func TestReadTimes(t *testing.T) {
	o := Read(certificate(map[string]any{"notAfter": "2027-02-20T01:02:03Z", "renewalTime": "2027-01-21T01:02:03Z", "revision": int64(4)}))
	if want := time.Date(2027, 2, 20, 1, 2, 3, 0, time.UTC); o.NotAfter == nil || !o.NotAfter.Time.Equal(want) {
		t.Errorf("notAfter %v, want %v", o.NotAfter, want)
	}
	if want := time.Date(2027, 1, 21, 1, 2, 3, 0, time.UTC); o.RenewalTime == nil || !o.RenewalTime.Time.Equal(want) {
		t.Errorf("renewalTime %v, want %v", o.RenewalTime, want)
	}
	if o.Revision == nil || *o.Revision != 4 {
		t.Errorf("revision %v", o.Revision)
	}
}
