package gitopshealth

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"hyperstatic.dev/hyperstatic/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the argocd-cm blocks of the docs from the Lua files")

// docsWithChecks are the docs that show the argocd-cm block, from the repository's top.
var docsWithChecks = []string{"charts/hyperstatic/README.md", "docs/staticsite.md"}

// The docs show the health checks as they are: each argocd-cm block is what ArgoCDConfigMap renders from the Lua
// files (go test ./internal/gitopshealth -run TestDocs -update rewrites them).
func TestDocsCarryTheScripts(t *testing.T) {
	for _, doc := range docsWithChecks {
		path := filepath.Join(testenv.RepoRoot(), doc)
		b, err := os.ReadFile(path)
		testenv.Must(t, err)
		want, err := RenderDocBlocks(string(b), scripts)
		testenv.Must(t, err)
		if *update {
			testenv.Must(t, os.WriteFile(path, []byte(want), 0o644))
			continue
		}
		if want != string(b) {
			t.Errorf("%s: an argocd-cm block differs from charts/hyperstatic/health; run go test ./internal/gitopshealth -run TestDocs -update", doc)
		}
	}
}

// The block is a ConfigMap whose keys hold the scripts byte for byte once YAML has read it: what Argo CD gets from
// a copy of it is what the tests ran.
func TestArgoCDConfigMapHoldsTheScripts(t *testing.T) {
	var kinds []string
	for _, k := range Kinds {
		kinds = append(kinds, k.Kind)
	}
	block, err := ArgoCDConfigMap(scripts, kinds)
	testenv.Must(t, err)
	cm := &corev1.ConfigMap{}
	testenv.Must(t, yaml.UnmarshalStrict([]byte(block), cm))
	if cm.Name != "argocd-cm" || cm.Namespace != "argocd" || len(cm.Data) != len(Kinds) {
		t.Fatalf("ConfigMap %s/%s with %d keys", cm.Namespace, cm.Name, len(cm.Data))
	}
	for _, k := range Kinds {
		key := ArgoCDKey(k.Kind)
		if !strings.HasPrefix(key, "resource.customizations.health.hyperstatic.dev_") {
			t.Errorf("key %q", key)
		}
		if got := cm.Data[key]; got != scripts[k.Kind] {
			t.Errorf("%s: the YAML reads back as\n%s\nwant the file\n%s", key, got, scripts[k.Kind])
		}
	}
}
