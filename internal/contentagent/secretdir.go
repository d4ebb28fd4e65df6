package contentagent

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"hyperstatic.dev/hyperstatic/internal/gitsource"
)

// kubeletDataLink is the link kubelet flips, with one rename, to a new timestamped directory when it updates a
// mounted Secret; each key is a link through it (KEY -> ..data/KEY).
const kubeletDataLink = "..data"

// maxWebhookSecretBytes bounds the read of the webhook secret file: a token is tens of bytes.
const maxWebhookSecretBytes = 64 << 10

// ReadSecretDir reads the credentials Secret mounted at dir (one file per key, Flux's key names) into the map
// gitsource.Source.WithSecret takes. Only the known keys are read: kubelet's ..data and timestamped directories,
// and any other key, are ignored. An empty dir means no credentials (an anonymous fetch).
//
// Kubelet updates a mounted Secret in place (the ..data flip). A read that straddles an update could pair the
// old username with the new password, so the keys are read again (three tries) until ..data names the same
// directory before and after.
func ReadSecretDir(dir string) (map[string][]byte, error) {
	if dir == "" {
		return nil, nil
	}
	for range 3 {
		before, _ := os.Readlink(filepath.Join(dir, kubeletDataLink)) // "" when not a kubelet volume
		data, err := readSecretKeys(dir)
		after, _ := os.Readlink(filepath.Join(dir, kubeletDataLink))
		if before == after {
			return data, err
		}
	}
	return nil, fmt.Errorf("the Secret at %s changed during each of three reads", dir)
}

func readSecretKeys(dir string) (map[string][]byte, error) {
	data := map[string][]byte{}
	for _, k := range []string{gitsource.SecretUsername, gitsource.SecretPassword, gitsource.SecretBearerToken,
		gitsource.SecretIdentity, gitsource.SecretKnownHosts, gitsource.SecretCACert} {
		v, err := os.ReadFile(filepath.Join(dir, k))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		data[k] = v
	}
	return data, nil
}

// source is the Source of one fetch attempt: with SecretDir set, its credentials and CA bundle are the Secret's
// as mounted now, so a rotated Secret is used as soon as kubelet has updated the volume, with no restart.
func (f *Fetcher) source() (gitsource.Source, error) {
	if f.SecretDir == "" {
		return f.Source, nil
	}
	data, err := ReadSecretDir(f.SecretDir)
	if err != nil {
		return f.Source, fmt.Errorf("reading the credentials Secret: %w", err)
	}
	return f.Source.WithSecret(data)
}

// webhookSecret is the secret a delivery is checked with: WebhookSecretFile as it is now (read at each delivery,
// so a rotated Secret applies at once; surrounding whitespace trimmed: a Secret written from a file often ends
// in a newline), else WebhookSecret. An unreadable file means no secret: the delivery is refused.
func (f *Fetcher) webhookSecret() []byte {
	if f.WebhookSecretFile == "" {
		return f.WebhookSecret
	}
	file, err := os.Open(f.WebhookSecretFile)
	if err != nil {
		f.Log.Warn("reading the webhook secret; the delivery is refused", "error", err)
		return nil
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, maxWebhookSecretBytes))
	if err != nil {
		f.Log.Warn("reading the webhook secret; the delivery is refused", "error", err)
		return nil
	}
	return []byte(strings.TrimSpace(string(data)))
}
