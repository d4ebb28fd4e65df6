package contract

import (
	"io"
	"net/http"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
)

// The security-headers contract: spec.server.securityHeaders defaults to on, yet ServerArgs writes an argument
// only to turn them off (so that an unset field changes no pod template and older pinned server images, which reject
// unknown flags, keep starting). That holds only while the server sends them without being asked: a server whose
// default flipped would silently drop the headers from every site. Here the real server runs with the arguments of
// a site that leaves the field unset, of one that sets it to true, and of one that sets it to false.
func TestContractSecurityHeadersAreTheServersDefault(t *testing.T) {
	bin := serverbin.Require(t)
	for _, tc := range []struct {
		name  string
		field *bool
		want  string
	}{
		{"unset", nil, "nosniff"},
		{"true", ptr.To(true), "nosniff"},
		{"false", ptr.To(false), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := site(v1alpha1.ServerSpec{SecurityHeaders: tc.field})
			args := operatorArgs(t, bin, s, writeSite(t))
			srv := serverbin.Start(t, bin, args)
			client := &http.Client{Timeout: 5 * time.Second}
			resp, err := client.Get("http://" + srv.HTTPAddr + "/index.html")
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET /index.html: %s", resp.Status)
			}
			if got := resp.Header.Get("X-Content-Type-Options"); got != tc.want {
				t.Errorf("securityHeaders %s: X-Content-Type-Options %q, want %q (args %q)", tc.name, got, tc.want, args)
			}
		})
	}
}
