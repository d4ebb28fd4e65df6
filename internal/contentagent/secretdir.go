package contentagent

import (
	"errors"
	"os"
	"path/filepath"

	"hyperstatic.dev/hyperstatic/internal/gitsource"
)

// ReadSecretDir reads the credentials Secret mounted at dir (one file per key, Flux's key names) into the map
// gitsource.Source.WithSecret takes. Only the known keys are read: kubelet's ..data and timestamped directories,
// and any other key, are ignored. An empty dir means no credentials (an anonymous fetch).
func ReadSecretDir(dir string) (map[string][]byte, error) {
	if dir == "" {
		return nil, nil
	}
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
