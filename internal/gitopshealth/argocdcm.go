package gitopshealth

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// ScriptsDir is where the Argo CD health checks live, from the repository's top: one Lua file per kind, shipped
// with the chart (whose README carries them as an argocd-cm block).
const ScriptsDir = "charts/hyperstatic/health"

// Kinds are the kinds with a health check, in the order the docs list them, and their scripts' file names.
var Kinds = []struct{ Kind, File string }{{"StaticSite", "staticsite.lua"}, {"Benchmark", "benchmark.lua"}}

// ArgoCDKey is the argocd-cm key of a kind's health check: resource.customizations.health.<group>_<kind>.
func ArgoCDKey(kind string) string {
	return "resource.customizations.health." + v1alpha1.GroupVersion.Group + "_" + kind
}

// Scripts reads every kind's health check from ScriptsDir under the repository's top, by kind.
func Scripts(repoRoot string) (map[string]string, error) {
	scripts := map[string]string{}
	for _, k := range Kinds {
		b, err := os.ReadFile(filepath.Join(repoRoot, ScriptsDir, k.File))
		if err != nil {
			return nil, err
		}
		scripts[k.Kind] = string(b)
	}
	return scripts, nil
}

// ArgoCDConfigMap renders the argocd-cm ConfigMap that installs the health checks of kinds, for the docs: each
// script, verbatim, as a YAML block scalar under its key.
func ArgoCDConfigMap(scripts map[string]string, kinds []string) (string, error) {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\n  namespace: argocd\n" +
		"  labels:\n    app.kubernetes.io/name: argocd-cm\n    app.kubernetes.io/part-of: argocd\ndata:\n")
	for _, kind := range kinds {
		script, ok := scripts[kind]
		if !ok {
			return "", fmt.Errorf("no health check for kind %q", kind)
		}
		fmt.Fprintf(&b, "  %s: |\n", ArgoCDKey(kind))
		for _, line := range strings.Split(strings.TrimRight(script, "\n"), "\n") {
			if line == "" {
				b.WriteString("\n")
			} else {
				b.WriteString("    " + line + "\n")
			}
		}
	}
	return b.String(), nil
}

// A docs block holding the argocd-cm ConfigMap opens with a marker naming its kinds and closes with docBlockEnd;
// RenderDocBlocks rewrites what lies between.
var docBlockStart = regexp.MustCompile(`<!-- argocd-health-checks: ([A-Za-z ]+) \(generated[^>]*-->\n`)

const docBlockEnd = "<!-- /argocd-health-checks -->"

// RenderDocBlocks returns doc with every argocd-cm block rewritten from scripts: a ```yaml fence holding
// ArgoCDConfigMap of the kinds its marker names. It fails on a doc without a block or with an unclosed one.
func RenderDocBlocks(doc string, scripts map[string]string) (string, error) {
	var out strings.Builder
	rest, blocks := doc, 0
	for {
		loc := docBlockStart.FindStringSubmatchIndex(rest)
		if loc == nil {
			break
		}
		end := strings.Index(rest[loc[1]:], docBlockEnd)
		if end < 0 {
			return "", fmt.Errorf("the block opened by %q is not closed by %q", rest[loc[0]:loc[1]-1], docBlockEnd)
		}
		cm, err := ArgoCDConfigMap(scripts, strings.Fields(rest[loc[2]:loc[3]]))
		if err != nil {
			return "", err
		}
		out.WriteString(rest[:loc[1]] + "```yaml\n" + cm + "```\n")
		rest = rest[loc[1]+end:]
		blocks++
	}
	if blocks == 0 {
		return "", fmt.Errorf("no %q block", "<!-- argocd-health-checks: ... -->")
	}
	out.WriteString(rest)
	return out.String(), nil
}
