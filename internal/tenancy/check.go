package tenancy

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/k6script"
)

// CheckSite lists the fields of a StaticSite the policy refuses (none: it may run).
func (p Policy) CheckSite(site *v1alpha1.StaticSite) Violations {
	var vs Violations
	s := &site.Spec
	if s.Content.Image != "" {
		p.checkImage(&vs, "spec.content.image", s.Content.Image)
	}
	if iv := s.Content.ImageVolume; iv != nil {
		p.checkImage(&vs, "spec.content.imageVolume.reference", iv.Reference)
	}
	if s.Server.Image != "" {
		p.checkImage(&vs, "spec.server.image", s.Server.Image)
	}
	p.checkExtraArgs(&vs, s.Server.ExtraArgs)
	p.checkIdentity(&vs, "spec.podTemplate.", s.PodTemplate.PodIdentity)
	if pc := s.PodTemplate.PriorityClassName; pc != "" && !listed(p.PriorityClasses, pc) {
		vs.add("spec.podTemplate.priorityClassName", "priority class %q is not allowed (allowed: %s)", pc, shown(p.PriorityClasses))
	}
	p.checkTolerations(&vs, "spec.podTemplate.tolerations", s.PodTemplate.Tolerations)
	p.checkAnnotations(&vs, "spec.podTemplate.annotations", s.PodTemplate.Annotations)
	if t := serviceType(s.Service.Type); t != string(corev1.ServiceTypeClusterIP) && !listed(p.ServiceTypes, t) {
		vs.add("spec.service.type", "Service type %s is not allowed (allowed: %s)", t, shown(p.ServiceTypes))
	}
	p.checkAnnotations(&vs, "spec.service.annotations", s.Service.Annotations)
	if s.Route != nil {
		p.checkAnnotations(&vs, "spec.route.annotations", s.Route.Annotations)
	}
	if g := s.Content.Git; g != nil {
		p.checkGit(&vs, g)
	}
	hosts := make([]string, len(s.Hostnames))
	for i, h := range s.Hostnames {
		hosts[i] = string(h)
	}
	p.checkHostnames(&vs, site.Namespace, hosts)
	if s.Previews != nil {
		p.checkPreviews(&vs, site.Namespace, s.Previews) // previews.go
	}
	if s.TLS != nil && s.TLS.IssuerRef != nil {
		p.checkIssuer(&vs, s.TLS.IssuerRef)
	}
	if a := s.Server.Access; a != nil && a.SSO != nil {
		p.checkSSO(&vs, a.SSO) // sso.go
	}
	return vs
}

// checkGit: the URL starts with an allowed prefix; maxSize (its default when unset) is within the cap.
func (p Policy) checkGit(vs *Violations, g *v1alpha1.GitContent) {
	if !p.Git.gitURLAllowed(g.URL) {
		vs.add("spec.content.git.url", "repository %q is not under an allowed URL prefix (allowed: %s)", g.URL, shown(p.Git.URLs))
	}
	limit, err := p.Git.maxSize()
	if err != nil || limit == nil {
		return // Parse refused a bad cap; a policy built in code without one has none
	}
	size := resource.MustParse(v1alpha1.DefaultGitMaxSize)
	if g.MaxSize != nil {
		size = *g.MaxSize
	}
	if size.Cmp(*limit) > 0 {
		field := "spec.content.git.maxSize"
		if g.MaxSize == nil {
			vs.add(field, "the default of %s is over the limit of %s: set it to at most %s", size.String(), limit.String(), limit.String())
			return
		}
		vs.add(field, "%s is over the limit of %s", size.String(), limit.String())
	}
}

// CheckBenchmark lists the fields of a Benchmark the policy refuses (none: it may run).
func (p Policy) CheckBenchmark(b *v1alpha1.Benchmark) Violations {
	var vs Violations
	s := &b.Spec
	l := p.Benchmark
	if s.Target.URL != "" && !l.URLTargets {
		vs.add("spec.target.url", "a Benchmark may only load a StaticSite of its own namespace (spec.target.staticSite)")
	}
	if s.Image != "" {
		p.checkImage(&vs, "spec.image", s.Image)
	}
	p.checkIdentity(&vs, "spec.", s.PodIdentity)
	p.checkTolerations(&vs, "spec.tolerations", s.Tolerations)
	if l.MaxParallelism > 0 && s.Parallelism > l.MaxParallelism {
		vs.add("spec.parallelism", "%d k6 pods is over the limit of %d", s.Parallelism, l.MaxParallelism)
	}
	w := s.Workload
	if l.MaxVUs > 0 {
		switch {
		case w.Sweep != nil && w.Sweep.To > l.MaxVUs:
			vs.add("spec.workload.sweep.to", "%d VUs is over the limit of %d", w.Sweep.To, l.MaxVUs)
		case w.Constant != nil && w.Constant.VUs > l.MaxVUs:
			vs.add("spec.workload.constant.vus", "%d VUs is over the limit of %d", w.Constant.VUs, l.MaxVUs)
		}
	}
	if a := w.ArrivalRate; a != nil {
		if l.MaxRate > 0 && a.Rate > l.MaxRate {
			vs.add("spec.workload.arrivalRate.rate", "%d requests/s is over the limit of %d", a.Rate, l.MaxRate)
		}
		if plan, err := k6script.NewPlan(*s, ""); err == nil && l.MaxVUs > 0 && plan.MaxVUs > l.MaxVUs {
			vs.add("spec.workload.arrivalRate.maxVUs", "%d VUs (set or defaulted from the rate) is over the limit of %d", plan.MaxVUs, l.MaxVUs)
		}
	}
	if maxDur, _ := l.maxDuration(); maxDur > 0 {
		if plan, err := k6script.NewPlan(*s, ""); err == nil && plan.Duration() > maxDur {
			vs.add("spec.workload", "the planned run of %s (every step with its start-up gap) is over the limit of %s", plan.Duration(), maxDur)
		}
	}
	return vs
}

func (p Policy) checkImage(vs *Violations, field, ref string) {
	if !p.imageAllowed(ref) {
		vs.add(field, "image %q is not from an allowed registry or repository (allowed: %s)", ref, shown(p.Images))
	}
}

// checkExtraArgs: every "--name" or "--name=value" must name an allowed flag; a bare value belongs to the flag
// before it; a short flag ("-x") or "--" alone (the end of the flags) is refused unless every flag is allowed.
func (p Policy) checkExtraArgs(vs *Violations, args []string) {
	if listed(p.ExtraArgs, Any) {
		return
	}
	for i, a := range args {
		field := fmt.Sprintf("spec.server.extraArgs[%d]", i)
		switch {
		case strings.HasPrefix(a, "--") && len(a) > 2:
			name, _, _ := strings.Cut(a[2:], "=")
			if !slices.Contains(p.ExtraArgs, name) {
				vs.add(field, "server flag --%s is not allowed (allowed: %s)", name, shown(p.ExtraArgs))
			}
		case strings.HasPrefix(a, "-"):
			vs.add(field, "%q is not a --flag the policy allows (allowed: %s)", a, shown(p.ExtraArgs))
		case i == 0:
			vs.add(field, "%q is a value with no flag before it", a)
		}
	}
}

func (p Policy) checkIdentity(vs *Violations, prefix string, id v1alpha1.PodIdentity) {
	if id.ServiceAccountName != "" && !p.ServiceAccountName {
		vs.add(prefix+"serviceAccountName", "naming a ServiceAccount is not allowed: the pods run as the namespace's default account")
	}
	if id.AutomountServiceAccountToken != nil && *id.AutomountServiceAccountToken && !p.ServiceAccountToken {
		vs.add(prefix+"automountServiceAccountToken", "mounting a ServiceAccount token is not allowed")
	}
}

func (p Policy) checkTolerations(vs *Violations, field string, ts []corev1.Toleration) {
	for i, t := range ts {
		if t.Key == "" && !listed(p.TolerationKeys, Any) {
			vs.add(fmt.Sprintf("%s[%d].key", field, i), "a toleration without a key tolerates every taint; not allowed (allowed keys: %s)", shown(p.TolerationKeys))
		} else if t.Key != "" && !listed(p.TolerationKeys, t.Key) {
			vs.add(fmt.Sprintf("%s[%d].key", field, i), "toleration key %q is not allowed (allowed: %s)", t.Key, shown(p.TolerationKeys))
		}
	}
}

func (p Policy) checkAnnotations(vs *Violations, field string, m map[string]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !p.annotationAllowed(k) {
			vs.add(field, "annotation key %q is not allowed (allowed: %s)", k, shown(p.AnnotationKeys))
		}
	}
}

// serviceType is spec.service.type with the CRD's default (ClusterIP) for an object that predates it.
func serviceType(t corev1.ServiceType) string {
	if t == "" {
		return string(corev1.ServiceTypeClusterIP)
	}
	return string(t)
}

func shown(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}
