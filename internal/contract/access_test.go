package contract

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/internal/htpasswd"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
)

// The operator's htpasswd check (internal/htpasswd) and the server's (images/server/src/guard/basic.rs) agree:
// the rendered value with basic authentication and an htpasswd file beside it, as the pod's projected volume
// lays them out, loads with `--check` when the operator accepts the file, and is refused, by line number, when
// the operator refuses it.
func TestContractHtpasswdBesideTheSiteValue(t *testing.T) {
	bin := serverbin.Require(t)
	serverbin.RequireSiteValue(t, bin)
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	s := site(v1alpha1.ServerSpec{Access: &v1alpha1.AccessSpec{
		HtpasswdSecret: &v1alpha1.SecretKeyRef{Name: "users"},
		Rules:          []v1alpha1.AccessRule{{PathPrefix: "/team/", BasicAuth: &v1alpha1.BasicAuth{Realm: "Team"}}},
	}})
	root := writeSite(t)
	for _, c := range []struct {
		name, file string
		ok         bool
	}{
		{"bcrypt", "# team\nalice:" + string(hash) + "\n", true},
		{"2y prefix", "alice:" + strings.Replace(string(hash), "$2a$", "$2y$", 1) + "\n", true},
		{"md5", "alice:$apr1$x$y\n", false},
		{"no colon", "\nalice\n", false},
		{"twice", "a:" + string(hash) + "\na:" + string(hash) + "\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, opErr := htpasswd.Check([]byte(c.file))
			if (opErr == nil) != c.ok {
				t.Fatalf("operator: %v, want ok=%v", opErr, c.ok)
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, sitevalue.Key), sitevalue.Render(s).Bytes, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, sitevalue.HtpasswdFile), []byte(c.file), 0o644); err != nil {
				t.Fatal(err)
			}
			args := serverbin.SetFlag(t, serverbin.SetFlag(t, desired.ServerArgs(s), "--root", root), "--site", filepath.Join(dir, sitevalue.Key))
			res, err := runCheck(bin, args)
			if err != nil {
				t.Fatal(err)
			}
			if (res.exitCode == 0) != c.ok {
				t.Fatalf("server: exit %d, want ok=%v\nstderr: %s", res.exitCode, c.ok, res.stderr)
			}
			// The same line named by both.
			if !c.ok {
				line, _, _ := strings.Cut(opErr.Error(), ":")
				if !strings.Contains(res.stderr+res.stdout, "access.htpasswdFile") || !strings.Contains(res.stderr+res.stdout, line+":") {
					t.Errorf("server's refusal does not name %q of access.htpasswdFile: %s%s", line, res.stderr, res.stdout)
				}
			}
		})
	}
}
