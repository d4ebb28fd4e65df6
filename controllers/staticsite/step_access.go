package staticsite

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/htpasswd"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
	"hyperstatic.dev/hyperstatic/internal/ssokeys"
	"hyperstatic.dev/hyperstatic/internal/ssosite"
)

// reconcileAccess reads the Secrets of spec.server.access and judges them (AccessApplied): the htpasswd Secret of
// basic authentication and the sso Secret of single sign-on. The pods mount those Secrets themselves beside the
// site value (desired/sitevalue.go) and into the login agent (desired/sso.go), so the hashes and keys never sit in a
// ConfigMap and the operator needs no right to write Secrets; the server reads the files with the value and
// refuses a bad one, keeping the last good users and keys serving. What the operator adds: saying why before a pod
// does, and leaving the Deployment alone while a Secret is missing or bad, so no new pod starts on it (a pod that
// starts without good users or keys serves nothing under its rules). Like the TLS Secret, they are read by name
// every pass, not watched (least privilege: get only), and read again every TLSRecheck.
func (r *Reconciler) reconcileAccess(ctx context.Context, st *observation) error {
	site := st.site
	if !sitevalue.UsesHtpasswd(site) && !sitevalue.UsesSSO(site) {
		return nil
	}
	st.requeue(st.tun.tlsRecheck)
	var verdicts []metav1.Condition
	if sitevalue.UsesHtpasswd(site) {
		c, err := r.judgeHtpasswd(ctx, site)
		if err != nil {
			return err
		}
		verdicts = append(verdicts, c)
	}
	if sitevalue.UsesSSO(site) {
		c, err := r.judgeSSOSecret(ctx, site)
		if err != nil {
			return err
		}
		verdicts = append(verdicts, c)
	}
	c := mergeAccessVerdicts(verdicts)
	if c.Status == metav1.ConditionFalse {
		st.skipDeployment = true
	}
	st.access = &c
	return nil
}

// mergeAccessVerdicts is one AccessApplied from the Secrets' verdicts: the first False one, else True with the
// last one's reason and every message.
func mergeAccessVerdicts(verdicts []metav1.Condition) metav1.Condition {
	msgs := make([]string, 0, len(verdicts))
	for _, v := range verdicts {
		if v.Status == metav1.ConditionFalse {
			return v
		}
		msgs = append(msgs, v.Message)
	}
	c := verdicts[len(verdicts)-1]
	c.Message = strings.Join(msgs, "; ")
	return c
}

// judgeHtpasswd is the htpasswd Secret's verdict.
func (r *Reconciler) judgeHtpasswd(ctx context.Context, site *v1alpha1.StaticSite) (metav1.Condition, error) {
	ref := site.Spec.Server.Access.HtpasswdSecret
	key := ref.Key
	if key == "" {
		key = v1alpha1.DefaultHtpasswdKey
	}
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
	case err != nil:
		return c, fmt.Errorf("read htpasswd Secret %s: %w", ref.Name, err)
	default:
		n, bad := htpasswd.Check(data)
		if bad != nil {
			c.Reason = v1alpha1.ReasonHtpasswdInvalid
			c.Message = fmt.Sprintf("spec.server.access.htpasswdSecret: Secret %q key %q: %v; the servers keep the last good users",
				ref.Name, key, bad)
		} else {
			c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonHtpasswdAccepted
			c.Message = fmt.Sprintf("Secret %q key %q: %d users, bcrypt", ref.Name, key, n)
		}
	}
	return c, nil
}

// judgeSSOSecret is the sso Secret's verdict: a client secret, and session keys the server and the agent accept
// (internal/ssokeys). The message counts the keys and says their lengths, never their content.
func (r *Reconciler) judgeSSOSecret(ctx context.Context, site *v1alpha1.StaticSite) (metav1.Condition, error) {
	name := site.Spec.Server.Access.SSO.SecretName
	secret := &corev1.Secret{}
	err := r.directReader().Get(ctx, types.NamespacedName{Namespace: site.Namespace, Name: name}, secret)
	c := metav1.Condition{Type: v1alpha1.ConditionAccessApplied, Status: metav1.ConditionFalse}
	switch {
	case apierrors.IsNotFound(err):
		c.Reason = v1alpha1.ReasonSSOSecretNotFound
		c.Message = fmt.Sprintf("spec.server.access.sso.secretName: Secret %q not found in namespace %s: new pods wait for it; "+
			"running pods keep the keys they have", name, site.Namespace)
		return c, nil
	case err != nil:
		return c, fmt.Errorf("read sso Secret %s: %w", name, err)
	}
	for _, key := range []string{v1alpha1.SSOClientSecretKey, v1alpha1.SSOSessionKeysKey} {
		if len(secret.Data[key]) == 0 {
			c.Reason = v1alpha1.ReasonSSOSecretNotFound
			c.Message = fmt.Sprintf("spec.server.access.sso.secretName: Secret %q has no key %q (it needs %s and %s): new pods wait for it; "+
				"running pods keep the keys they have", name, key, v1alpha1.SSOClientSecretKey, v1alpha1.SSOSessionKeysKey)
			return c, nil
		}
	}
	keys, bad := ssokeys.Parse(string(secret.Data[v1alpha1.SSOSessionKeysKey]))
	if bad != nil {
		c.Reason = v1alpha1.ReasonSSOSecretInvalid
		c.Message = fmt.Sprintf("spec.server.access.sso.secretName: Secret %q key %q: %v; the servers keep the last good keys",
			name, v1alpha1.SSOSessionKeysKey, bad)
		return c, nil
	}
	lengths := make([]string, len(keys))
	for i, k := range keys {
		lengths[i] = strconv.Itoa(len(k))
	}
	c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonSSOAccepted
	c.Message = fmt.Sprintf("Secret %q: a client secret and %d session key(s) of %s bytes; users sign in at %s",
		name, len(keys), strings.Join(lengths, ", "), ssosite.LoginURL(site))
	return c, nil
}
