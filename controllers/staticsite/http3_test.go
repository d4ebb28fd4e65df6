package staticsite

import (
	"context"
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// spec.http3 (desired/http3.go): what each desired object gets from it, on and off, with and without an advertised
// port, and nothing at all while it is off, unset or without spec.tls (a site the API server would refuse, built
// in code).
func TestDesiredHTTP3(t *testing.T) {
	tls := &v1alpha1.TLSSpec{SecretName: "s"}
	for _, tc := range []struct {
		name      string
		tls       *v1alpha1.TLSSpec
		h3        *v1alpha1.HTTP3Spec
		httpsPort int32
		args      []string // the HTTP/3 arguments, nil for none
		protocols string
	}{
		{"tls only", tls, nil, 0, nil, "h2,http/1.1"},
		{"unset enabled is off", tls, &v1alpha1.HTTP3Spec{AdvertisedPort: ptr.To[int32](443)}, 0, nil, "h2,http/1.1"},
		{"off", tls, &v1alpha1.HTTP3Spec{Enabled: ptr.To(false)}, 0, nil, "h2,http/1.1"},
		{"without tls", nil, &v1alpha1.HTTP3Spec{Enabled: ptr.To(true)}, 0, nil, "http/1.1"},
		{"on: the Service's https port advertised", tls, &v1alpha1.HTTP3Spec{Enabled: ptr.To(true)}, 0,
			[]string{"--http3", "--alt-svc-port", "443"}, "h3,h2,http/1.1"},
		{"on: another https port", tls, &v1alpha1.HTTP3Spec{Enabled: ptr.To(true)}, 9443,
			[]string{"--http3", "--alt-svc-port", "9443"}, "h3,h2,http/1.1"},
		{"on: the load balancer's port", tls, &v1alpha1.HTTP3Spec{Enabled: ptr.To(true), AdvertisedPort: ptr.To[int32](30443)}, 9443,
			[]string{"--http3", "--alt-svc-port", "30443"}, "h3,h2,http/1.1"},
		{"on with 0-RTT", tls, &v1alpha1.HTTP3Spec{Enabled: ptr.To(true), EarlyData: ptr.To(true)}, 0,
			[]string{"--http3", "--alt-svc-port", "443", "--http3-early-data"}, "h3,h2,http/1.1"},
		{"on, 0-RTT off as written", tls, &v1alpha1.HTTP3Spec{Enabled: ptr.To(true), EarlyData: ptr.To(false)}, 0,
			[]string{"--http3", "--alt-svc-port", "443"}, "h3,h2,http/1.1"},
		{"off: 0-RTT with it", tls, &v1alpha1.HTTP3Spec{Enabled: ptr.To(false), EarlyData: ptr.To(true)}, 0, nil, "h2,http/1.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			site := newSite(v1alpha1.ContentSource{Image: "x"})
			site.Spec.TLS, site.Spec.HTTP3, site.Spec.Service.HTTPSPort = tc.tls, tc.h3, tc.httpsPort
			site.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{}
			on := tc.args != nil
			if got := desired.Protocols(site); got != tc.protocols {
				t.Errorf("Protocols = %q, want %q", got, tc.protocols)
			}
			if got := h3Args(desired.ServerArgs(site)); !slices.Equal(got, tc.args) {
				t.Errorf("HTTP/3 args %q, want %q", got, tc.args)
			}
			svc := typed[corev1.Service](t, desired.Service(site))
			udp := udpServicePorts(svc)
			wantPort := int32(443) // the https port's number, 443 by default
			if tc.httpsPort != 0 {
				wantPort = tc.httpsPort
			}
			want := []corev1.ServicePort{{Name: "h3", Protocol: corev1.ProtocolUDP, Port: wantPort, TargetPort: intstr.FromString("h3")}}
			if on && !slices.Equal(udp, want) || !on && len(udp) != 0 {
				t.Errorf("Service UDP ports %+v, want on=%v: %+v", udp, on, want)
			}
			pod := deploymentFor(t, site, desired.ImageContent(v1alpha1.ContentSourceImage, "x", "")).Spec.Template.Spec
			var cudp []corev1.ContainerPort
			for _, p := range pod.Containers[0].Ports {
				if p.Protocol == corev1.ProtocolUDP {
					cudp = append(cudp, p)
				}
			}
			wantC := []corev1.ContainerPort{{Name: "h3", ContainerPort: v1alpha1.HTTPSPort, Protocol: corev1.ProtocolUDP}}
			if on && !slices.Equal(cudp, wantC) || !on && len(cudp) != 0 {
				t.Errorf("container UDP ports %+v, want on=%v: %+v", cudp, on, wantC)
			}
			np := typed[networkingv1.NetworkPolicy](t, desired.NetworkPolicy(site, "ops"))
			var npUDP []string
			for _, p := range np.Spec.Ingress[0].Ports {
				if ptr.Deref(p.Protocol, corev1.ProtocolTCP) == corev1.ProtocolUDP {
					npUDP = append(npUDP, p.Port.String())
				}
			}
			if on && !slices.Equal(npUDP, []string{"h3"}) || !on && len(npUDP) != 0 {
				t.Errorf("NetworkPolicy serving UDP ports %q, want on=%v", npUDP, on)
			}
		})
	}
}

// Against the API server: spec.http3 on a running TLS site adds the UDP port to the Service (beside the TCP ones)
// and the flags and UDP port to the pods, and status.protocols says h3; earlyData adds 0-RTT's flag and taking it
// away removes it; turning it off, then removing the field, takes every piece back through server-side apply.
func TestHTTP3ReachesTheServiceAndPods(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	site := createSite(t, ns, "quic", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/quic:v1"},
		TLS: &v1alpha1.TLSSpec{SecretName: "quic-tls"}, Service: v1alpha1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
		HTTP3: &v1alpha1.HTTP3Spec{Enabled: ptr.To(true)}})
	// served waits until the Service and the Deployment say on (or off) with HTTP/3, both at once; early: with
	// 0-RTT (spec.http3.earlyData).
	served := func(on bool, advertised string, early ...bool) {
		t.Helper()
		testenv.Eventually(t, fmt.Sprintf("HTTP/3 on=%v advertised %s", on, advertised), func() error {
			svc := &corev1.Service{}
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "quic"}, svc); err != nil {
				return err
			}
			var tcp []string
			for _, p := range svc.Spec.Ports {
				if p.Protocol == corev1.ProtocolTCP {
					tcp = append(tcp, fmt.Sprintf("%s/%d", p.Name, p.Port))
				}
			}
			if !slices.Equal(tcp, []string{"http/80", "https/443"}) {
				return fmt.Errorf("TCP ports %q", tcp)
			}
			udp := udpServicePorts(svc)
			if on && (len(udp) != 1 || udp[0].Name != "h3" || udp[0].Port != 443 || udp[0].TargetPort != intstr.FromString("h3")) ||
				!on && len(udp) != 0 {
				return fmt.Errorf("UDP ports %+v", udp)
			}
			d := &appsv1.Deployment{}
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "quic"}, d); err != nil {
				return err
			}
			c := d.Spec.Template.Spec.Containers[0]
			args := h3Args(c.Args)
			want := []string{"--http3", "--alt-svc-port", advertised}
			if len(early) == 1 && early[0] {
				want = append(want, "--http3-early-data")
			}
			if on && !slices.Equal(args, want) || !on && len(args) != 0 {
				return fmt.Errorf("args %q", c.Args)
			}
			hasUDP := slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool {
				return p.Name == "h3" && p.Protocol == corev1.ProtocolUDP && p.ContainerPort == v1alpha1.HTTPSPort
			})
			if hasUDP != on {
				return fmt.Errorf("container ports %+v", c.Ports)
			}
			// The pod's security context is the same with HTTP/3: UDP on an unprivileged port needs no capability.
			if sc := c.SecurityContext; sc == nil || !ptr.Deref(sc.RunAsNonRoot, false) || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) ||
				sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
				return fmt.Errorf("security context %+v", sc)
			}
			return nil
		})
	}
	served(true, "443")
	waitSite(t, ns, "quic", "protocols h3,h2,http/1.1", protocolsAre("h3,h2,http/1.1"))

	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.HTTP3.AdvertisedPort = ptr.To[int32](30443) })
	served(true, "30443")

	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.HTTP3.EarlyData = ptr.To(true) })
	served(true, "30443", true)
	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.HTTP3.EarlyData = nil })
	served(true, "30443")

	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.HTTP3.Enabled = ptr.To(false) })
	served(false, "")
	waitSite(t, ns, "quic", "protocols h2,http/1.1", protocolsAre("h2,http/1.1"))

	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.HTTP3.Enabled = ptr.To(true) })
	served(true, "30443")
	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.HTTP3 = nil })
	served(false, "")
}

// The API server refuses HTTP/3 without TLS and an advertised port out of range, naming the field.
func TestHTTP3NeedsTLS(t *testing.T) {
	ns := namespace(t)
	img := v1alpha1.ContentSource{Image: "example/site:v1"}
	on := &v1alpha1.HTTP3Spec{Enabled: ptr.To(true)}
	expectRefused(t, ns, v1alpha1.StaticSiteSpec{Content: img, HTTP3: on}, "spec.http3 needs spec.tls")
	expectRefused(t, ns, v1alpha1.StaticSiteSpec{Content: img, HTTP3: &v1alpha1.HTTP3Spec{}}, "spec.http3 needs spec.tls")
	tls := &v1alpha1.TLSSpec{SecretName: "s"}
	for _, port := range []int32{0, 65536} {
		expectRefused(t, ns, v1alpha1.StaticSiteSpec{Content: img, TLS: tls,
			HTTP3: &v1alpha1.HTTP3Spec{Enabled: ptr.To(true), AdvertisedPort: ptr.To(port)}}, "spec.http3.advertisedPort")
	}
	createSite(t, ns, "ok", v1alpha1.StaticSiteSpec{Content: img, TLS: tls, HTTP3: on})
}

// h3Args are the HTTP/3 flags in a server argument list, with their values.
func h3Args(args []string) []string {
	var out []string
	for i, a := range args {
		switch a {
		case "--http3", "--http3-early-data":
			out = append(out, a)
		case "--alt-svc-port":
			out = append(out, args[i:min(i+2, len(args))]...)
		}
	}
	return out
}

func udpServicePorts(svc *corev1.Service) []corev1.ServicePort {
	var out []corev1.ServicePort
	for _, p := range svc.Spec.Ports {
		if p.Protocol == corev1.ProtocolUDP {
			out = append(out, p)
		}
	}
	return out
}
