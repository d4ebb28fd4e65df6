package gitcontent

// Deploys and the pin (docs/design/deploys.md, steps 1 and 2): the fetcher's flags and the token Secret's volume,
// the work volumes sized for the history, the token Secret the operator creates per site, and the delivery of the
// wanted pin to the fetcher (POST /pin), re-sent on every pass while the fetcher publishes otherwise.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/gitrevision"
)

// +kubebuilder:rbac:groups="",resources=secrets,verbs=create

const (
	// PinSecretSuffix names the Secret <site>-git-pin holding the token of the fetcher's POST /pin. The operator
	// creates it (owned by the site) and mounts it into the fetcher only: never into the server pods, which the
	// fetcher's NetworkPolicy admits and which face the internet.
	PinSecretSuffix = "-git-pin"
	pinTokenKey     = "token"
	gitPinDir       = "/etc/git-pin"
	gitPinVolume    = "git-pin"
)

// PinSecretName is the name of a Git site's pin token Secret.
func PinSecretName(site *v1alpha1.StaticSite) string { return site.Name + PinSecretSuffix }

// HistoryOf is spec.content.git.history, default 5.
func HistoryOf(g *v1alpha1.GitContent) int {
	if g.History != nil && *g.History > 0 {
		return int(min(*g.History, v1alpha1.MaxGitHistory))
	}
	return v1alpha1.DefaultGitHistory
}

// fetcherWorkFactor × maxSize is the fetcher's emptyDir: history+1 bundles (the kept ones and the one being
// written), the tree served and the previous one, the tree being written and the fetched pack.
func fetcherWorkFactor(g *v1alpha1.GitContent) int64 { return int64(HistoryOf(g)) + 1 + 4 }

// siteFactor × maxSize is a server pod's site emptyDir: the history's trees and the one being extracted; at
// least gitSiteFactor (the served, the replaced one the server may read until its reload, the one extracted).
func siteFactor(g *v1alpha1.GitContent) int64 { return max(gitSiteFactor, int64(HistoryOf(g))+1) }

// deployArgs are the fetcher's history and pin token flags.
func deployArgs(g *v1alpha1.GitContent) []string {
	return []string{"--history", strconv.Itoa(HistoryOf(g)), "--pin-token-file", gitPinDir + "/" + pinTokenKey}
}

// withPinToken mounts the pin token Secret into the fetcher container c (optional: the fetcher refuses every
// pin until it exists, and the operator creates it before the fetcher).
func withPinToken(site *v1alpha1.StaticSite, spec *corev1ac.PodSpecApplyConfiguration, c *corev1ac.ContainerApplyConfiguration) {
	spec.WithVolumes(corev1ac.Volume().WithName(gitPinVolume).WithSecret(corev1ac.SecretVolumeSource().
		WithSecretName(PinSecretName(site)).WithOptional(true).
		WithItems(corev1ac.KeyToPath().WithKey(pinTokenKey).WithPath(pinTokenKey))))
	c.WithVolumeMounts(corev1ac.VolumeMount().WithName(gitPinVolume).WithMountPath(gitPinDir).WithReadOnly(true))
}

// WantedPin is the commit the site asks to pin: spec.content.git.pin, else the annotation hyperstatic.dev/pin;
// "" for none. invalid is the annotation's value when it is not a full commit hash (the field is validated by
// the API server, the annotation is not).
func WantedPin(site *v1alpha1.StaticSite) (commit, invalid string) {
	if p := site.Spec.Content.Git.Pin; p != "" {
		return p, ""
	}
	a, ok := site.Annotations[v1alpha1.AnnotationPin]
	if !ok || a == "" {
		return "", ""
	}
	if !isCommit(a) {
		return "", a
	}
	return a, ""
}

// isCommit is true for 40 lower-case hex digits (the field's CEL rule).
func isCommit(s string) bool {
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return len(s) == 40
}

// ensurePinToken returns the site's pin token, creating its Secret (a random 256-bit token) when there is none.
// The token never leaves the operator and the fetcher pod.
func (s Step) ensurePinToken(ctx context.Context, site *v1alpha1.StaticSite) ([]byte, error) {
	secret := &corev1.Secret{}
	key := types.NamespacedName{Namespace: site.Namespace, Name: PinSecretName(site)}
	err := s.Direct.Get(ctx, key, secret)
	if err == nil {
		if !metav1.IsControlledBy(secret, site) {
			return nil, fmt.Errorf("the Secret %s exists and is not this site's: the pin cannot be delivered", key.Name)
		}
		if t := secret.Data[pinTokenKey]; len(t) > 0 {
			return t, nil
		}
		return nil, fmt.Errorf("the Secret %s has no %q", key.Name, pinTokenKey)
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("read Secret %s: %w", key.Name, err)
	}
	if s.Writer == nil {
		return nil, errors.New("no writer configured to create the pin token Secret")
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	token := []byte(hex.EncodeToString(raw))
	secret = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: site.Namespace, Name: key.Name, Labels: fetcherLabels(site),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(site, v1alpha1.GroupVersion.WithKind("StaticSite"))}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{pinTokenKey: token},
	}
	if err := s.Writer.Create(ctx, secret); err != nil {
		return nil, fmt.Errorf("create Secret %s: %w", key.Name, err)
	}
	return token, nil
}

// preparePinToken reads (or makes) the site's pin token into gs, before the fetcher is applied: a Secret made
// only at the first pin would reach the running fetcher at the kubelet's next volume sync, up to about a minute,
// and the first rollback would wait for it.
func (s Step) preparePinToken(ctx context.Context, site *v1alpha1.StaticSite, gs *State) {
	token, err := s.ensurePinToken(ctx, site)
	if err != nil {
		gs.pin.tokenErr = err.Error()
		return
	}
	gs.pin.token = token
}

// deliverPin makes the fetcher publish the wanted pin (or unpin) when what it reports differs: the spec is the
// truth, the fetcher's answer only what it reports. It updates gs.fetcher with the fetcher's answer and records a
// refusal (not in the history) or why it could not be delivered.
func (s Step) deliverPin(ctx context.Context, site *v1alpha1.StaticSite, p *corev1.Pod, gs *State) {
	s.Pins.remember(client.ObjectKeyFromObject(site), p, gs.pin.token) // the fast path's target (pinnow.go)
	want, invalid := WantedPin(site)
	gs.pin.want, gs.pin.invalid, gs.pin.asked = want, invalid, want != "" || invalid != ""
	if invalid != "" || gs.fetcher.Pin == want {
		return
	}
	if newer := s.newerWantedPin(ctx, site, want); newer {
		// The site changed its pin since this pass read it: the fast path sent the new one (or will), and the
		// pass the change queued reports it. Sending this pass's older wish would undo a rollback for a pass.
		return
	}
	if want != "" && !gs.fetcher.HasDeploy(want) {
		gs.pin.refused = true // it would answer 409: not sent, nothing changes
		return
	}
	pinner, ok := s.Revisions.(gitrevision.Pinner)
	if !ok {
		gs.pin.undelivered = "no pin client configured"
		return
	}
	if gs.pin.token == nil {
		gs.pin.undelivered = gs.pin.tokenErr
		return
	}
	rev, err := pinner.Pin(ctx, p, v1alpha1.GitFetcherPort, gs.pin.token, want)
	switch {
	case errors.Is(err, gitrevision.ErrNotInHistory):
		gs.pin.refused = true
	case err != nil:
		gs.pin.undelivered = err.Error()
	default:
		gs.fetcher = &rev
	}
}

// newerWantedPin says the newest site the cache holds wants another pin than want, this pass's.
func (s Step) newerWantedPin(ctx context.Context, site *v1alpha1.StaticSite, want string) bool {
	if s.Cache == nil {
		return false
	}
	now := &v1alpha1.StaticSite{}
	if err := s.Cache.Get(ctx, client.ObjectKeyFromObject(site), now); err != nil || now.Spec.Content.Git == nil {
		return false // gone or no longer Git: the next pass sees it; this one finishes as it began
	}
	w, _ := WantedPin(now)
	return w != want
}
