package gitwebhook

import (
	"net/url"
	"strings"
)

// SameRepo is true when one of the push's repository URLs names the same repository as repoURL (a site's
// spec.content.git.url): host (case-insensitive, without port or user) and path (without a trailing ".git" or
// "/") must match. https://host/org/site.git, ssh://git@host/org/site, git@host:org/site.git and the web URL
// https://host/org/site are one repository.
func (p Push) SameRepo(repoURL string) bool { return sameRepo(p.RepoURLs, repoURL) }

func sameRepo(urls []string, repoURL string) bool {
	want, ok := repoKey(repoURL)
	if !ok {
		return false
	}
	for _, u := range urls {
		if k, ok := repoKey(u); ok && k == want {
			return true
		}
	}
	return false
}

// repoKey reduces a Git URL to "host/path".
func repoKey(raw string) (string, bool) {
	var host, path string
	if u, err := url.Parse(raw); err == nil && u.Scheme != "" && u.Host != "" {
		host, path = u.Hostname(), u.Path
	} else if at, rest, found := strings.Cut(raw, "@"); found && !strings.Contains(at, "/") {
		// scp-like: user@host:path
		h, p, ok := strings.Cut(rest, ":")
		if !ok {
			return "", false
		}
		host, path = h, p
	} else {
		return "", false
	}
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	if host == "" || path == "" {
		return "", false
	}
	return strings.ToLower(host) + "/" + path, true
}
