//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/dextest"
	"hyperstatic.dev/hyperstatic/internal/ssosite"
)

// Dex, the identity provider of the signIn site: the e2e-dex image (make e2e-dex-image) in a namespace of its own,
// configured by internal/dextest as the host test against Dex is (make go-test-sso). Its issuer is a fixed name
// because the chart's tenancy policy must list it (tenancy.sso.issuers, helmInstallArgs): a site may use only the
// identity providers the platform names.
const (
	dexNamespace = "e2e-dex"
	dexName      = "dex"
	dexPort      = 5556
	dexHost      = "dex.e2e-dex.svc.cluster.local:5556"
	dexIssuer    = "http://" + dexHost + "/dex"
	// dexCPU is Dex's CPU request: scenario 19's requests count it.
	dexCPU = "50m"
)

// The signIn site as its users reach it: spec.hostnames[0] on the Service's http port (80), and the login agent on
// the sso port of the same hostname (no route: internal/ssosite).
const (
	signInHost = "private.e2e.example"
	signInSite = "http://" + signInHost
	signInPage = signInSite + "/page.html"
)

var signInAgent = fmt.Sprintf("http://%s:%d%s", signInHost, v1alpha1.SSOPort, ssosite.Prefix)

// checkSignInSite: a site with a signIn rule (spec.server.access.sso) in a real cluster, signing users in through a
// real identity provider. Dex runs in its own namespace (e2e-dex) with the site's client (the Secret's client-secret, the
// agent's callback on the sso port of the site's hostname as its redirect URI) and two users, jane (group eng)
// and joe (group ops); the issuer is Dex's Service name, which the login agent in the site's pod (discovery, keys,
// the code exchange) and the test's browser reach alike: the browser is a client in the test process whose
// connections to the site's hostname (ports 80 and 8444) and to Dex's go through port-forwards to their Services.
// Once the Secret exists the pod runs the login agent beside the server (restricted, as the kubelet starts it).
// Jane's navigation to the protected page goes to the agent's login, on to Dex's login form, and back through the
// agent's callback to the page, served 200 from the session cookie with Cache-Control private; joe signs in and
// gets 403 (no redirect loop); jane's logout ends the session (a fetch gets 401, a navigation is sent to log in).
func checkSignInSite(ctx context.Context, t *testing.T, ns string) {
	t.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "private-sso"}, Data: map[string][]byte{
		v1alpha1.SSOClientSecretKey: []byte("client-secret"),
		v1alpha1.SSOSessionKeysKey:  []byte(base64.StdEncoding.EncodeToString(key) + "\n"),
	}}
	if err := k8s.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	issuer := dexIssuer
	// The callback is written out, not taken from internal/ssosite: Dex refuses any other redirect URI, so a
	// wrong one in the agent's flags fails the login.
	deployDex(ctx, t, dexNamespace, dextest.Config(t, issuer, fmt.Sprintf("0.0.0.0:%d", dexPort),
		dextest.Client{ID: "private", Secret: "client-secret", RedirectURI: signInAgent + "/callback"}))

	site := newSite(ns, "private", v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "pages"}}}, "100m")
	site.Spec.Hostnames = []v1alpha1.Hostname{signInHost}
	site.Spec.Server.Access = &v1alpha1.AccessSpec{
		SSO:   &v1alpha1.SSOSpec{IssuerURL: issuer, ClientID: "private", SecretName: "private-sso"},
		Rules: []v1alpha1.AccessRule{{PathPrefix: "/page.html", SignIn: &v1alpha1.SignIn{Groups: []string{"eng"}}}},
	}
	if err := k8s.Create(ctx, site); err != nil {
		t.Fatalf("create StaticSite: %v", err)
	}
	site = waitSiteReady(t, ns, "private", 3*time.Minute)
	for _, c := range site.Status.Conditions {
		if c.Type == v1alpha1.ConditionAccessApplied && (c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonSSOAccepted) {
			t.Errorf("AccessApplied %s %s: %s", c.Status, c.Reason, c.Message)
		}
	}
	pods := sitePods(ctx, t, ns, "private")
	if len(pods) != 1 {
		t.Fatalf("want 1 pod, got %d", len(pods))
	}
	var agentReady bool
	for _, s := range pods[0].Status.ContainerStatuses {
		if s.Name == ssosite.ContainerName {
			agentReady = s.Started != nil && *s.Started && s.State.Running != nil
		}
	}
	if !agentReady {
		t.Fatalf("the login agent is not running: %+v", pods[0].Status.ContainerStatuses)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logContainer(t, ns, pods[0].Name, ssosite.ContainerName)
		}
	})
	waitDexReady(t, dexNamespace)

	// The browser's connections: each host:port it dials goes to a loopback port-forward to its Service.
	forwards := map[string]*portForward{
		signInHost + ":80": startPortForward(t, ns, "svc/private", 80), // spec.service.port's default
		fmt.Sprintf("%s:%d", signInHost, v1alpha1.SSOPort): startPortForward(t, ns, "svc/private", v1alpha1.SSOPort),
		dexHost: startPortForward(t, dexNamespace, "svc/"+dexName, dexPort),
	}
	transport := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		pf, ok := forwards[addr]
		if !ok {
			return nil, fmt.Errorf("the browser has no port-forward to %s", addr)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, pf.addr())
	}}
	t.Cleanup(transport.CloseIdleConnections)

	// Without a session a page load is sent to the agent's login on the sso port of the site's hostname, and
	// a fetch gets 401; a public page is served.
	jane := dextest.NewBrowser(t, transport)
	if res := jane.Get(signInPage, true); res.Status != http.StatusFound || !strings.HasPrefix(res.Header.Get("Location"), signInAgent+"/login?rd=") {
		t.Errorf("a page load without a session: %d to %q, want 302 to %s/login?rd=...", res.Status, res.Header.Get("Location"), signInAgent)
	}
	if got := jane.Status(signInPage, false); got != http.StatusUnauthorized {
		t.Errorf("a fetch without a session: %d, want 401", got)
	}
	if got := jane.Status(signInSite+"/index.html", false); got != http.StatusOK {
		t.Errorf("a public page: %d, want 200", got)
	}
	// The agent asks Dex for its discovery document at the first login; right after Dex is Ready its Service may
	// lead nowhere for a moment (the endpoints reach the node's proxy after readiness), so the agent's login is
	// asked until it sends the browser on to Dex.
	eventually(t, time.Minute, "the login agent sends a login on to Dex", func(context.Context) (bool, string, error) {
		res := dextest.NewBrowser(t, transport).Get(signInAgent+"/login?rd=/page.html", false)
		loc := res.Header.Get("Location")
		return res.Status == http.StatusFound && strings.HasPrefix(loc, issuer+"/auth?"), fmt.Sprintf("%d to %q", res.Status, loc), nil
	})

	// Jane (group eng) signs in on Dex's form and is back on the page, served from the cookie, privately.
	start := time.Now()
	res := jane.SignIn(signInPage, dextest.Jane)
	if res.Status != http.StatusOK || !strings.Contains(res.Body, "<p>page</p>") || res.URL.String() != signInPage {
		t.Fatalf("jane after signing in: %d at %s: %q", res.Status, res.URL, res.Body)
	}
	if cc := res.Header.Get("Cache-Control"); !strings.HasPrefix(cc, "private") {
		t.Errorf("the protected page's Cache-Control: %q, want private", cc)
	}
	t.Logf("MEASURED sso: jane signed in through Dex and served the page in %s (every redirect and Dex's form)",
		time.Since(start).Round(time.Millisecond))
	if got := jane.Status(signInPage, false); got != http.StatusOK {
		t.Errorf("jane's fetch with the cookie: %d, want 200", got)
	}
	// Joe (group ops) signs in and gets 403 on the page: no redirect, so no loop.
	res = dextest.NewBrowser(t, transport).SignIn(signInPage, dextest.Joe)
	if res.Status != http.StatusForbidden || res.URL.String() != signInPage {
		t.Errorf("joe after signing in: %d at %s, want 403 at %s: %q", res.Status, res.URL, signInPage, res.Body)
	}
	// Jane's logout clears the cookie: a fetch gets 401 again, a page load is sent to log in.
	res = jane.Get(signInAgent+"/logout?rd=/", false)
	if res.Status != http.StatusFound || res.Header.Get("Location") != signInSite+"/" {
		t.Errorf("logout: %d to %q, want 302 to %s/", res.Status, res.Header.Get("Location"), signInSite)
	}
	if got := jane.Status(signInPage, false); got != http.StatusUnauthorized {
		t.Errorf("after logout, a fetch: %d, want 401", got)
	}
	if res := jane.Get(signInPage, true); res.Status != http.StatusFound || !strings.HasPrefix(res.Header.Get("Location"), signInAgent+"/login?rd=") {
		t.Errorf("after logout, a page load: %d to %q, want 302 to the login", res.Status, res.Header.Get("Location"))
	}
	t.Logf("signIn site: jane signed in through Dex (200 private), joe 403, jane logged out (401, 302 to the login)")
}

// deployDex runs Dex in ns with config (a ConfigMap it reads at start) behind the Service dexName: one pod under the
// restricted Pod Security Standard (non-root, read-only root filesystem: in-memory storage, pages embedded in the
// binary), Ready once its discovery document answers.
func deployDex(ctx context.Context, t *testing.T, ns, config string) {
	t.Helper()
	deleteNamespace(t, ns) // one left by an earlier run
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "restricted"}}}
	if err := k8s.Create(ctx, namespace); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	t.Cleanup(func() { deleteNamespace(t, ns) })
	c := restrictedContainer(dexName, cfg.dexImage, "serve", "/etc/dex/config.yaml")
	c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: dexPort}}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: "/etc/dex", ReadOnly: true}}
	c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
		Path: "/dex/.well-known/openid-configuration", Port: intstr.FromString("http")}}, PeriodSeconds: 1}
	// No CPU limit: a login's bcrypt check would take seconds under a 50m quota.
	c.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(dexCPU), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
	}
	labels := map[string]string{"app": dexName}
	objects := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: dexName}, Data: map[string]string{"config.yaml": config}},
		&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: dexName},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
					AutomountServiceAccountToken: ptr.To(false),
					Containers:                   []corev1.Container{c},
					Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
						ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: dexName}}}}},
				}},
			},
		},
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: dexName},
			Spec: corev1.ServiceSpec{Selector: labels,
				Ports: []corev1.ServicePort{{Name: "http", Port: dexPort, TargetPort: intstr.FromString("http")}}},
		},
	}
	for _, o := range objects {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			if pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + dexName}); err == nil {
				for _, p := range pods.Items {
					logContainer(t, ns, p.Name, dexName)
				}
			}
		}
	})
}

// waitDexReady waits until Dex's pod is Ready (its discovery document answers).
func waitDexReady(t *testing.T, ns string) {
	t.Helper()
	eventually(t, 2*time.Minute, "Dex Ready", func(ctx context.Context) (bool, string, error) {
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: dexName}, d); err != nil {
			return false, err.Error(), nil
		}
		return d.Status.ReadyReplicas == 1, fmt.Sprintf("ready replicas %d", d.Status.ReadyReplicas), nil
	})
}

// logContainer logs the last lines of a container's log (for a failed test).
func logContainer(t *testing.T, ns, pod, container string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := cs.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container, TailLines: ptr.To[int64](50)}).DoRaw(ctx)
	if err != nil {
		t.Logf("%s: log of %s/%s %s: %v", postmortemMarker, ns, pod, container, err)
		return
	}
	t.Logf("%s: log of %s/%s %s:\n%s", postmortemMarker, ns, pod, container, raw)
}
