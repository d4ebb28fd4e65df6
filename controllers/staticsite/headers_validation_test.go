package staticsite

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// The CEL rules on spec.server.cors and headers[].glob refuse what the server cannot parse (TestInvalidSitesAreRefused);
// this is the other half: the values the docs show and users write are admitted, so the rules are not too strict.
func TestHeaderAndCORSFieldsAdmitRealValues(t *testing.T) {
	ns := namespace(t)
	site := &v1alpha1.StaticSite{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cors-ok"},
		Spec: v1alpha1.StaticSiteSpec{
			Content: v1alpha1.ContentSource{Image: "example/site:1"},
			Server: v1alpha1.ServerSpec{
				SecurityHeaders: ptr.To(false),
				Headers: []v1alpha1.Header{
					{Glob: "/fonts/**", Name: "X-Font", Value: "1"},
					{Glob: "*.html", Name: "Content-Security-Policy", Value: "default-src 'self'"},
				},
				CORS: []v1alpha1.CORSRule{
					{Glob: "/fonts/**", AllowOrigins: []string{"*"}, MaxAge: ptr.To[int32](86400)},
					{
						Glob:         "/api/**",
						AllowOrigins: []string{"https://app.example.com", "http://localhost:3000", "http://127.0.0.1:8080", "https://xn--bcher-kva.example"},
						AllowMethods: []string{"GET", "HEAD", "post"},
						AllowHeaders: []string{"X-Token", "Content-Type"},
						MaxAge:       ptr.To[int32](0),
					},
				},
			},
		},
	}
	if err := k8s.Create(context.Background(), site); err != nil {
		t.Fatalf("a valid site was refused: %v", err)
	}
	_ = k8s.Delete(context.Background(), site)
}
