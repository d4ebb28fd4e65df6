package contentagent

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"path"
	"path/filepath"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"hyperstatic.dev/hyperstatic/internal/gitsource"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
)

// A ConfigMap site's tree is built from its mirrors (poolindex.MirrorName) in the pool's namespace: each key of a
// mirror's data and binaryData is a file under the entry's pathPrefix. Its "commit" is the SHA-256 of what the
// tree is made of (each mirror's name, prefix, keys and values, in order), so an unchanged set of mirrors is not
// built or bundled again.

var configMapsResource = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// watchMirrors watches the metadata of the namespace's ConfigMaps (names and resource versions only: the data is
// read by the build, so memory does not grow with the mirrors' size) and queues the sites of a mirror that changes.
func (p *PoolFetcher) watchMirrors(ctx context.Context) {
	// A plain informer over the metadata client (metadatainformer would link every API group's types into the
	// binary, which the pool pods' puller shares).
	client := p.Metadata.Resource(configMapsResource).Namespace(p.Namespace)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return client.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return client.Watch(ctx, opts)
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &metav1.PartialObjectMetadata{}, 0, cache.Indexers{})
	// Only the name and the resource version are read: the rest of the metadata (managed fields, annotations,
	// labels) is dropped before it is cached.
	err := inf.SetTransform(func(obj any) (any, error) {
		if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
			m.ManagedFields, m.Annotations, m.Labels, m.OwnerReferences = nil, nil, nil, nil
		}
		return obj, nil
	})
	if err != nil {
		p.Log.Error("watching the mirrors", "error", err)
		return
	}
	changed := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if m, err := meta.Accessor(obj); err == nil {
			p.mirrorChanged(m.GetName())
		}
	}
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: changed,
		UpdateFunc: func(old, obj any) {
			a, errA := meta.Accessor(old)
			b, errB := meta.Accessor(obj)
			if errA != nil || errB != nil || a.GetResourceVersion() != b.GetResourceVersion() {
				changed(obj)
			}
		},
		DeleteFunc: changed,
	})
	if err != nil {
		p.Log.Error("watching the mirrors", "error", err)
		return
	}
	inf.Run(ctx.Done())
}

// buildConfigMaps reads a ConfigMap site's mirrors and bundles their tree when it changed.
func (p *PoolFetcher) buildConfigMaps(ctx context.Context, j job) outcome {
	if p.Kube == nil {
		return outcome{err: errors.New("no Kubernetes API to read the site's ConfigMaps from")}
	}
	var maps []*corev1.ConfigMap
	for _, c := range j.def.Content.ConfigMaps {
		cm, err := p.Kube.Get(ctx, p.Namespace, c.Name)
		if err != nil {
			return outcome{err: err}
		}
		maps = append(maps, cm)
	}
	files, commit, err := configMapTree(j.def.Content.ConfigMaps, maps)
	if err != nil {
		return outcome{err: err}
	}
	if commit == j.cur.Commit && j.cur.Bundle != "" {
		return outcome{commit: j.cur.Commit, bundle: j.cur.Bundle, size: j.cur.Size}
	}
	st, err := p.store(j)
	if err != nil {
		return outcome{err: err}
	}
	lim := limits(j.def)
	if err := st.Install(commit, func(dir string) error { return gitsource.WriteFiles(dir, files, lim) }); err != nil {
		return outcome{err: err}
	}
	return p.publish(j, filepath.Join(st.Dir, commit), commit)
}

// configMapTree is the files of a ConfigMap site (path → content) and the SHA-256 naming them. Two keys that
// give one path (data and binaryData, or two mirrors) are refused.
func configMapTree(entries []poolindex.ConfigMapContent, maps []*corev1.ConfigMap) (map[string][]byte, string, error) {
	files := map[string][]byte{}
	h := sha256.New()
	for i, cm := range maps {
		prefix := entries[i].PathPrefix
		all := map[string][]byte{}
		for k, v := range cm.Data {
			all[k] = []byte(v)
		}
		for k, v := range cm.BinaryData {
			if _, dup := all[k]; dup {
				return nil, "", gitsource.ReasonError(gitsource.InvalidContent, "ConfigMap %s has the key %q in data and binaryData", cm.Name, k)
			}
			all[k] = v
		}
		keys := make([]string, 0, len(all))
		for k := range all {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		field(h, "configMap", cm.Name, prefix, strconv.Itoa(len(keys)))
		for _, k := range keys {
			name := path.Join(prefix, k)
			if _, dup := files[name]; dup {
				return nil, "", gitsource.ReasonError(gitsource.InvalidContent, "two ConfigMaps of the site give the file %s", name)
			}
			files[name] = all[k]
			field(h, k, string(all[k]))
		}
	}
	return files, hex.EncodeToString(h.Sum(nil)), nil
}

// field hashes each string with its length first, so no two sequences hash alike.
func field(h hash.Hash, parts ...string) {
	var n [8]byte
	for _, s := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
}
