package gitcontent

import (
	"slices"
	"testing"

	"hyperstatic.dev/hyperstatic/internal/gitsource"
)

// The keys the fetcher pod gets from the credentials Secret are the ones the fetcher reads (gitsource's names).
func TestGitCredentialKeysAreTheFetchers(t *testing.T) {
	want := []string{gitsource.SecretUsername, gitsource.SecretPassword, gitsource.SecretBearerToken,
		gitsource.SecretIdentity, gitsource.SecretKnownHosts, gitsource.SecretCACert}
	if !slices.Equal(credentialKeys, want) {
		t.Errorf("keys %q, want gitsource's %q", credentialKeys, want)
	}
}
