package contentagent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
)

// maxConfigMapBytes bounds the read of one ConfigMap: the API holds 1 MiB of data, base64 makes binaryData 4/3
// of it, and the object's metadata comes on top.
const maxConfigMapBytes = 4 << 20

// ConfigMapReader reads ConfigMaps from the API with the rest config's credentials and TLS. It is a plain GET
// rather than client-go's typed clientset, whose scheme would link (and initialise, in every process of this
// binary, the pool pods' pullers included) every API group's types for the one kind read here.
type ConfigMapReader struct {
	host   string
	client *http.Client
}

// NewConfigMapReader is a reader for the API server of cfg (rest.InClusterConfig in a pod).
func NewConfigMapReader(cfg *rest.Config) (*ConfigMapReader, error) {
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	host := cfg.Host
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	return &ConfigMapReader{host: strings.TrimSuffix(host, "/") + cfg.APIPath, client: client}, nil
}

// Get returns ConfigMap namespace/name; a missing one is an error that says so.
func (r *ConfigMapReader) Get(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	u := r.host + "/api/v1/namespaces/" + url.PathEscape(namespace) + "/configmaps/" + url.PathEscape(name)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading the mirror ConfigMap %s/%s: %w", namespace, name, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxConfigMapBytes+1))
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("the mirror ConfigMap %s/%s does not exist (yet)", namespace, name)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("reading the mirror ConfigMap %s/%s: %w %s", namespace, name, errStatus, resp.Status)
	case err != nil:
		return nil, fmt.Errorf("reading the mirror ConfigMap %s/%s: %w", namespace, name, err)
	case len(data) > maxConfigMapBytes:
		return nil, fmt.Errorf("the mirror ConfigMap %s/%s is over %d bytes", namespace, name, maxConfigMapBytes)
	}
	var cm corev1.ConfigMap
	if err := json.Unmarshal(data, &cm); err != nil {
		return nil, fmt.Errorf("the mirror ConfigMap %s/%s: %w", namespace, name, err)
	}
	return &cm, nil
}
