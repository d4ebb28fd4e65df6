package desired

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1ac "sigs.k8s.io/gateway-api/applyconfiguration/apis/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
	"hyperstatic.dev/hyperstatic/internal/ssosite"
)

// Single sign-on (spec.server.access.sso; the wiring is internal/ssosite's contract, the login docs/design/sso.md):
// a login agent container beside the server in every pod, the Secret mounted into it, its port on the Service and,
// with spec.route, a path of the route to it. The server needs only the session keys beside its site value
// (sitevalue.go). Nothing here for a site without a signIn rule (sitevalue.UsesSSO).

// ssoVolumeName is the pod volume holding the Secret's two keys for the agent.
const ssoVolumeName = "sso"

// The agent's resources: it answers logins only (a redirect, a token exchange, a signature), never a page.
var (
	ssoAgentCPU    = resource.MustParse("50m")
	ssoAgentMemory = resource.MustParse("48Mi")
)

// ssoContainer is the login agent (the content-agent image's `sso` command), or nil without sso. Its probes ask
// /healthz on its own port, over TLS when it serves TLS (AgentTLS): startup and liveness, no readiness, so a
// stuck agent is restarted while the pod keeps serving pages (and the cookies it already issued).
func ssoContainer(site *v1alpha1.StaticSite, agentImage string) *corev1ac.ContainerApplyConfiguration {
	if !sitevalue.UsesSSO(site) {
		return nil
	}
	res := corev1.ResourceList{corev1.ResourceCPU: ssoAgentCPU, corev1.ResourceMemory: ssoAgentMemory}
	probe := func(period, failures int32) *corev1ac.ProbeApplyConfiguration {
		get := corev1ac.HTTPGetAction().WithPath("/healthz").WithPort(intstr.FromString(v1alpha1.SSOPortName))
		if ssosite.AgentTLS(site) {
			get.WithScheme(corev1.URISchemeHTTPS)
		}
		return corev1ac.Probe().WithHTTPGet(get).WithPeriodSeconds(period).WithTimeoutSeconds(2).WithFailureThreshold(failures)
	}
	c := corev1ac.Container().
		WithName(ssosite.ContainerName).
		WithImage(agentImage).
		WithArgs(SSOArgs(site)...).
		WithPorts(corev1ac.ContainerPort().WithName(v1alpha1.SSOPortName).WithContainerPort(v1alpha1.SSOPort).WithProtocol(corev1.ProtocolTCP)).
		WithResources(corev1ac.ResourceRequirements().WithRequests(res).WithLimits(res)).
		WithStartupProbe(probe(1, 60)).
		WithLivenessProbe(probe(10, 3)).
		WithSecurityContext(sitechild.RestrictedContainer()).
		WithVolumeMounts(corev1ac.VolumeMount().WithName(ssoVolumeName).WithMountPath(ssosite.AgentSecretDir).WithReadOnly(true))
	if ssosite.AgentTLS(site) {
		c.WithVolumeMounts(corev1ac.VolumeMount().WithName(tlsVolumeName).WithMountPath(v1alpha1.TLSMountPath).WithReadOnly(true))
	}
	return c
}

// SSOArgs are the agent's flags (cmd/content-agent/sso.go), from the site alone.
func SSOArgs(site *v1alpha1.StaticSite) []string {
	s := site.Spec.Server.Access.SSO
	args := []string{"sso",
		"--issuer=" + s.IssuerURL,
		"--client-id=" + s.ClientID,
		"--client-secret-file=" + ssosite.AgentSecretDir + "/" + v1alpha1.SSOClientSecretKey,
		"--keys-file=" + ssosite.AgentSecretDir + "/" + v1alpha1.SSOSessionKeysKey,
		"--site-url=" + ssosite.SiteURL(site),
		"--callback-url=" + ssosite.CallbackURL(site),
		"--prefix=" + ssosite.Prefix,
		"--listen=:" + strconv.Itoa(v1alpha1.SSOPort),
	}
	if s.GroupsClaim != "" {
		args = append(args, "--groups-claim="+s.GroupsClaim)
	}
	if s.SessionTTL != nil {
		args = append(args, "--session-ttl="+s.SessionTTL.Duration.String())
	}
	if g := ssosite.KeepGroups(site); len(g) > 0 {
		args = append(args, "--keep-groups="+strings.Join(g, ","))
	}
	if ssosite.AgentTLS(site) {
		args = append(args, "--tls-cert-file="+v1alpha1.TLSMountPath+"/"+corev1.TLSCertKey,
			"--tls-key-file="+v1alpha1.TLSMountPath+"/"+corev1.TLSPrivateKeyKey)
	}
	return args
}

// ssoVolume is the Secret's two keys for the agent, readable by all (0444) since the pod sets no fsGroup: the files
// stay root's, and the agent runs as the non-root user, alone in its container. Not optional: a pod must not start an agent without them (the
// operator holds the Deployment back while the Secret is missing or bad: step_access.go).
func ssoVolume(site *v1alpha1.StaticSite) *corev1ac.VolumeApplyConfiguration {
	return corev1ac.Volume().WithName(ssoVolumeName).WithSecret(corev1ac.SecretVolumeSource().
		WithSecretName(site.Spec.Server.Access.SSO.SecretName).WithDefaultMode(0o444).
		WithItems(corev1ac.KeyToPath().WithKey(v1alpha1.SSOClientSecretKey).WithPath(v1alpha1.SSOClientSecretKey),
			corev1ac.KeyToPath().WithKey(v1alpha1.SSOSessionKeysKey).WithPath(v1alpha1.SSOSessionKeysKey)))
}

// ssoServicePort is the Service's port to the agent, or nil without sso.
func ssoServicePort(site *v1alpha1.StaticSite) *corev1ac.ServicePortApplyConfiguration {
	if !sitevalue.UsesSSO(site) {
		return nil
	}
	scheme := "http"
	if ssosite.AgentTLS(site) {
		scheme = "https"
	}
	return corev1ac.ServicePort().WithName(v1alpha1.SSOPortName).WithProtocol(corev1.ProtocolTCP).WithAppProtocol(scheme).
		WithPort(v1alpha1.SSOPort).WithTargetPort(intstr.FromString(v1alpha1.SSOPortName))
}

// ssoHTTPRouteRule is the HTTPRoute's rule sending the agent's prefix to its port, or nil. A prefix matches whole
// path segments and the longest match wins (Gateway API and Ingress alike), so the catch-all "/" keeps everything
// else, /.hyperstatic/ssox included.
func ssoHTTPRouteRule(site *v1alpha1.StaticSite) *gatewayv1ac.HTTPRouteRuleApplyConfiguration {
	if !sitevalue.UsesSSO(site) {
		return nil
	}
	return gatewayv1ac.HTTPRouteRule().
		WithMatches(gatewayv1ac.HTTPRouteMatch().WithPath(gatewayv1ac.HTTPPathMatch().WithType(gatewayv1.PathMatchPathPrefix).WithValue(ssosite.Prefix))).
		WithBackendRefs(gatewayv1ac.HTTPBackendRef().WithGroup("").WithKind("Service").WithName(gatewayv1.ObjectName(site.Name)).
			WithPort(v1alpha1.SSOPort).WithWeight(1))
}

// ssoIngressPath is the Ingress's path sending the agent's prefix to its port, or nil.
func ssoIngressPath(site *v1alpha1.StaticSite) *networkingv1ac.HTTPIngressPathApplyConfiguration {
	if !sitevalue.UsesSSO(site) {
		return nil
	}
	return networkingv1ac.HTTPIngressPath().WithPath(ssosite.Prefix).WithPathType(networkingv1.PathTypePrefix).WithBackend(
		networkingv1ac.IngressBackend().WithService(networkingv1ac.IngressServiceBackend().WithName(site.Name).
			WithPort(networkingv1ac.ServiceBackendPort().WithName(v1alpha1.SSOPortName))))
}
