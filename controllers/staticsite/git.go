package staticsite

// Content from Git lives in package gitcontent (its contract at its top). This file is the bridge: what
// gitcontent takes from this package's conventions, and the names the rest of this package builds the server pods
// with.

import (
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/gitcontent"
)

// gitShared is what the Git objects share with the site's server pods: decided here, followed by gitcontent.
func gitShared(site *v1alpha1.StaticSite) gitcontent.Shared {
	return gitcontent.Shared{
		Owner:          ownerReference(site),
		ServerPods:     selectorLabels(site),
		Tolerations:    tolerationsOf(site),
		RunAsUser:      serverUID,
		SiteVolume:     siteVolumeName,
		FormatDuration: formatDuration,
	}
}

// FetchArgs are the fetcher container's arguments as this operator writes them: the operator's half of the
// command-line contract with cmd/content-agent, which internal/contract runs through the real binary.
func FetchArgs(site *v1alpha1.StaticSite) []string {
	return gitcontent.FetchArgs(site, gitShared(site))
}

// PullArgs are the puller sidecar's arguments (the other half of that contract).
func PullArgs(site *v1alpha1.StaticSite) []string { return gitcontent.PullArgs(site) }

// gitSiteVolume, pullerContainer and gitTreeLimitArgs are the Git parts of a server pod (deployment.go,
// serverargs.go).
func gitSiteVolume(site *v1alpha1.StaticSite) *corev1ac.VolumeApplyConfiguration {
	return gitcontent.SiteVolume(site, gitShared(site))
}

func pullerContainer(site *v1alpha1.StaticSite, agentImage string) *corev1ac.ContainerApplyConfiguration {
	return gitcontent.PullerContainer(site, gitShared(site), agentImage)
}

func gitTreeLimitArgs(g *v1alpha1.GitContent) []string { return gitcontent.TreeLimitArgs(g) }
