package staticsite

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// What a site offers, and the arguments and Service that make it so: h2 over TLS by default, off with
// spec.tls.http2 false; h2c on the plain port with spec.server.h2c.
func TestProtocolsArgsAndService(t *testing.T) {
	for _, tc := range []struct {
		name      string
		tls       *v1alpha1.TLSSpec
		h2c       bool
		protocols string
		arg       string // the one protocol argument expected, "" for none
		appProto  string // the Service http port's appProtocol
	}{
		{"plain", nil, false, "http/1.1", "", "http"},
		{"plain with h2c", nil, true, "http/1.1,h2c", "--h2c=true", desired.AppProtocolH2C},
		{"tls: h2 by default", &v1alpha1.TLSSpec{SecretName: "s"}, false, "h2,http/1.1", "", "http"},
		{"tls: http2 true as written", &v1alpha1.TLSSpec{SecretName: "s", HTTP2: ptr.To(true)}, false, "h2,http/1.1", "", "http"},
		{"tls: http2 off", &v1alpha1.TLSSpec{SecretName: "s", HTTP2: ptr.To(false)}, false, "http/1.1", "--http2=false", "http"},
		{"tls and h2c", &v1alpha1.TLSSpec{SecretName: "s"}, true, "h2,http/1.1,h2c", "--h2c=true", desired.AppProtocolH2C},
	} {
		t.Run(tc.name, func(t *testing.T) {
			site := newSite(v1alpha1.ContentSource{Image: "x"})
			site.Spec.TLS, site.Spec.Server.H2C = tc.tls, tc.h2c
			if got := desired.Protocols(site); got != tc.protocols {
				t.Errorf("Protocols = %q, want %q", got, tc.protocols)
			}
			var protoArgs []string
			for _, a := range desired.ServerArgs(site) {
				if strings.HasPrefix(a, "--http2") || strings.HasPrefix(a, "--h2c") {
					protoArgs = append(protoArgs, a)
				}
			}
			if want := []string{tc.arg}; tc.arg == "" && len(protoArgs) != 0 || tc.arg != "" && !reflect.DeepEqual(protoArgs, want) {
				// Defaults add no argument: an operator upgrade must not roll existing sites, and older pinned
				// server images reject flags they do not know.
				t.Errorf("protocol args %q, want %q", protoArgs, tc.arg)
			}
			svc := typed[corev1.Service](t, desired.Service(site))
			if p := svc.Spec.Ports[0]; p.Name != "http" || ptr.Deref(p.AppProtocol, "") != tc.appProto {
				t.Errorf("http port %s: appProtocol %q, want %q", p.Name, ptr.Deref(p.AppProtocol, ""), tc.appProto)
			}
			if tc.tls != nil {
				// The https port keeps saying https: clients negotiate h2 there by ALPN.
				if p := svc.Spec.Ports[1]; p.Name != "https" || ptr.Deref(p.AppProtocol, "") != "https" {
					t.Errorf("https port %s: appProtocol %q, want https", p.Name, ptr.Deref(p.AppProtocol, ""))
				}
			}
			if _, ok := svc.Annotations[desired.TraefikServersSchemeAnnotation]; ok {
				t.Errorf("Traefik annotation without an Ingress route: %v", svc.Annotations)
			}
		})
	}
}

// Behind an Ingress, Traefik reads the scheme from a Service annotation, not from appProtocol: h2c adds it, an
// HTTPRoute does not need it, and the user's own value of it wins.
func TestH2CAnnotationFollowsTheIngress(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{Image: "x"})
	site.Spec.Hostnames = []v1alpha1.Hostname{"www.example.com"}
	site.Spec.Route = &v1alpha1.RouteSpec{IngressClassName: ptr.To("traefik")}
	site.Spec.Service.Annotations = map[string]string{"a": "b"}
	annotations := func() map[string]string { return typed[corev1.Service](t, desired.Service(site)).Annotations }
	if got := annotations(); !reflect.DeepEqual(got, map[string]string{"a": "b"}) {
		t.Errorf("without h2c: %v", got)
	}
	site.Spec.Server.H2C = true
	if got, want := annotations(), map[string]string{"a": "b", desired.TraefikServersSchemeAnnotation: "h2c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("h2c behind an Ingress: %v, want %v", got, want)
	}
	site.Spec.Service.Annotations = map[string]string{desired.TraefikServersSchemeAnnotation: "http"}
	if got := annotations()[desired.TraefikServersSchemeAnnotation]; got != "http" {
		t.Errorf("the user's value must win, got %q", got)
	}
	site.Spec.Service.Annotations = nil
	site.Spec.Route = &v1alpha1.RouteSpec{ParentRefs: []v1alpha1.ParentReference{{Name: "gw"}}}
	if got := annotations(); got != nil {
		t.Errorf("HTTPRoute (appProtocol is enough): annotations %v", got)
	}
}

// Against the API server: h2c on a running site with an Ingress route changes the Service (appProtocol, the
// Traefik annotation), the pods' arguments and status.protocols; turning it off takes all of them back, the
// annotation included (the operator owns it through server-side apply).
func TestH2CReachesTheServiceAndStatus(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	site := createSite(t, ns, "fast", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/fast:v1"},
		Hostnames: []v1alpha1.Hostname{v1alpha1.Hostname("fast." + ns + ".example.com")}, TLS: &v1alpha1.TLSSpec{SecretName: "fast-tls"},
		Route: &v1alpha1.RouteSpec{IngressClassName: ptr.To("traefik")}})
	waitSite(t, ns, "fast", "protocols h2,http/1.1", protocolsAre("h2,http/1.1"))
	service := func() *corev1.Service {
		svc := &corev1.Service{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fast"}, svc); err != nil {
			t.Fatal(err)
		}
		return svc
	}
	serviceSays := func(appProtocol, scheme string) {
		t.Helper()
		testenv.Eventually(t, "Service "+appProtocol+" "+scheme, func() error {
			svc := service()
			if p := svc.Spec.Ports[0]; ptr.Deref(p.AppProtocol, "") != appProtocol || p.TargetPort != intstr.FromString("http") {
				return fmt.Errorf("http port %+v", p)
			}
			if got := svc.Annotations[desired.TraefikServersSchemeAnnotation]; got != scheme {
				return fmt.Errorf("annotation %q", got)
			}
			return nil
		})
	}
	serviceSays("http", "")

	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.Server.H2C = true; s.Spec.TLS.HTTP2 = ptr.To(false) })
	serviceSays(desired.AppProtocolH2C, "h2c")
	waitSite(t, ns, "fast", "protocols http/1.1,h2c", protocolsAre("http/1.1,h2c"))
	testenv.Eventually(t, "pod arguments", func() error {
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fast"}, d); err != nil {
			return err
		}
		args := d.Spec.Template.Spec.Containers[0].Args
		if !slices.Contains(args, "--h2c=true") || !slices.Contains(args, "--http2=false") {
			return fmt.Errorf("args %q", args)
		}
		return nil
	})

	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.Server.H2C = false; s.Spec.TLS.HTTP2 = nil })
	serviceSays("http", "")
	waitSite(t, ns, "fast", "protocols h2,http/1.1 again", protocolsAre("h2,http/1.1"))
}

func protocolsAre(want string) func(*v1alpha1.StaticSite) error {
	return func(s *v1alpha1.StaticSite) error {
		if s.Status.Protocols != want {
			return fmt.Errorf("status.protocols %q, want %q", s.Status.Protocols, want)
		}
		return nil
	}
}
