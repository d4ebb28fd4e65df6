package desired

import (
	"fmt"
	"strconv"
	"time"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// Defaults the CRD schema also applies. The builders apply them again so they stay correct for objects that never
// went through the API server (unit tests, old objects stored before a default existed).
const (
	// DefaultReplicas is spec.replicas when unset.
	DefaultReplicas   = 1
	defaultMemory     = "256Mi"
	defaultDrainDelay = 5 * time.Second
	defaultPort       = 80
	// shutdownTimeout is the server's --shutdown-timeout: after the drain delay, the longest it waits for open
	// connections to finish their responses.
	shutdownTimeout = 10 * time.Second
	// terminationMargin is added to the drain delay for terminationGracePeriodSeconds: the shutdown timeout plus
	// time to exit, so the kubelet never kills a server that is still finishing responses.
	terminationMargin = shutdownTimeout + 5*time.Second
)

// Replicas is spec.replicas, DefaultReplicas when unset.
func Replicas(site *v1alpha1.StaticSite) int32 {
	if site.Spec.Replicas == nil {
		return DefaultReplicas
	}
	return *site.Spec.Replicas
}

func drainDelayOf(site *v1alpha1.StaticSite) time.Duration {
	if d := site.Spec.Server.DrainDelay; d != nil && d.Duration >= 0 {
		return d.Duration
	}
	return defaultDrainDelay
}

// ServicePort is the Service's http port: spec.service.port, 80 when unset.
func ServicePort(site *v1alpha1.StaticSite) int32 {
	if site.Spec.Service.Port == 0 {
		return defaultPort
	}
	return site.Spec.Service.Port
}

// URL is the site's in-cluster address; the port is omitted when it is 80.
func URL(site *v1alpha1.StaticSite) string {
	host := fmt.Sprintf("http://%s.%s.svc.cluster.local", site.Name, site.Namespace)
	if p := ServicePort(site); p != 80 {
		return host + ":" + strconv.Itoa(int(p))
	}
	return host
}

// HTTPSURL is the site's in-cluster HTTPS address with spec.tls ("" without); the port is omitted when it is 443.
func HTTPSURL(site *v1alpha1.StaticSite) string {
	if site.Spec.TLS == nil {
		return ""
	}
	host := fmt.Sprintf("https://%s.%s.svc.cluster.local", site.Name, site.Namespace)
	if p := HTTPSServicePort(site); p != v1alpha1.DefaultHTTPSServicePort {
		return host + ":" + strconv.Itoa(int(p))
	}
	return host
}
