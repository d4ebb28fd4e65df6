// Package gitcontent is a StaticSite's content from Git (spec.content.git; docs/staticsite.md, "Content from
// Git"; docs/design/git-content.md): the fetcher's objects, what the operator reads from the fetcher and the
// pullers, and what the site's status says about them. Package staticsite runs it as two of its steps and owns
// nothing of it but the calls.
//
// The objects, pure functions of the site, the content-agent image and the server pods' tolerations (package
// desired decides them), after the conventions every site object follows (package sitechild):
//
//   - the fetcher: Deployment <site>-git (one pod, Recreate) running `content-agent fetch`, which follows the
//     repository, checks each new commit with the server's --check and publishes it as a digest-addressed bundle;
//   - Service <site>-git (port 8080: /revision and /bundles/ for the pullers), Service <site>-git-webhook (port 80
//     to the fetcher's webhook port, only with webhookSecretRef; the user routes to it) and NetworkPolicy
//     <site>-git (the fetcher port from the site's pods, its measurement pods and the operator only), applied
//     NetworkPolicy first so the fetcher never runs unprotected;
//   - in every server pod, the puller: a native sidecar (`content-agent pull`) that takes each new bundle and
//     flips /site/current, the server's root, to it; its startup probe holds the server back until a tree is
//     there, so a pod never starts empty.
//
// The fetcher objects carry LabelGitFetcherOf instead of LabelSite, like the capacity measurement pods: the site's
// Service, autoscaler and Benchmarks select the site's pods by LabelSite, and the fetcher is not one of them.
//
// What the operator reads (Step): only the existence of the Secrets the site names (never a credential), the
// fetcher pod's /revision (the pod running the current spec; it is ready only once it published, so a failing
// first fetch is read from a running, unready pod), and each ready server pod's puller /revision. Neither shows
// in an object the controller watches, so the step says when to read again: soon while the fetcher has not
// published or a pod lags, at the site's interval once every pod serves the fetcher's commit. With a
// gitrevision.Watch the fetcher is also long-polled, and its answer wakes the site.
//
// What the status says (State.Verdict, pure): a fetch failure never takes a served commit away, the pods keep
// the last good one. So once a commit is published (or a pod serves one), a failure makes ContentAvailable False
// with its reason and leaves Ready alone; before any commit is there no pod can start, and a failure stalls the
// site, except GitUnreachable and GitFetcherUnavailable, which may pass by themselves (wait). While the first
// fetch runs, ContentAvailable is Unknown (GitFetchPending). status.contentRevision is the published commit in
// Flux's form, status.content.revision the commit and how many ready pods serve it.
package gitcontent
