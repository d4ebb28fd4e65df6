package contentagent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"hyperstatic.dev/hyperstatic/internal/gitsource"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
	"hyperstatic.dev/hyperstatic/internal/previews"
)

// A site with previews runs its server in the pool server's many-sites mode (`--sites DIR`, docs/design/pools.md)
// and its puller lays out what that mode reads (docs/design/deploys.md, decision 4, "As built"):
//
//	DIR/index/0-production.json   one shard: production, with the hosts the operator gave (--host)
//	DIR/index/1-previews.json     one shard: a preview per entry, with the one host <name>--<site>.<domain>
//	DIR/content/production.site/  production's trees, current and deploys.json (the puller's Store; skew protection)
//	DIR/content/preview.<name>/   each preview's trees and current
//	DIR/content/.ready/<id>       created after each flip or removal: the server reloads that site
//
// The index is rendered here, not by the operator, so that a preview is served as soon as its bundle is
// installed (the 10 s goal from push to served: a ConfigMap the operator writes reaches a pod at the kubelet's
// next sync, up to about a minute). What the operator still decides, the pod cannot change: production's hosts,
// the site's name and the previews' domain are this process's flags, and a preview's host is built here from a
// name that must be previews.ValidName (a DNS label without `--`), so every preview host is one label under the
// domain, never one of production's. The server merges the shards in file-name order and refuses a host already
// taken, so production's shard, read first, keeps its hosts even against a hand-made preview entry (tested with
// the real binary). The site value (the operator's --site file, mounted) is the same for every entry: a preview
// is served with the site's rules; it is read again at every pass, so a changed value reaches the index.
//
// Order, so that the server never has an entry without its tree: a new or moved preview is installed and
// signalled, then the index names it; a preview that went leaves the index first, then its trees go.

// ProductionID and the preview ids are the index ids of a site's own pods: they name directories and the
// server's /sites entries, and need not name the site (the pod serves one site).
const ProductionID = "production.site"

// PreviewID is the index id of preview name.
func PreviewID(name string) string { return "preview." + name }

// Shard file names: production's sorts first.
const (
	productionShard = "0-production.json"
	previewsShard   = "1-previews.json"
)

// SitesLayout is what the operator tells a puller of a site with previews.
type SitesLayout struct {
	// Dir is the server's --sites DIR.
	Dir string
	// Hosts are production's hosts (spec.hostnames and the Service's names), in the operator's order.
	Hosts []string
	// Site and Domain make a preview's host: <name>--<site>.<domain>.
	Site, Domain string
	// ValueFile is the site value (the file the server's --site would read), embedded in every entry.
	ValueFile string
	// Limits are each entry's (production's and every preview's).
	Limits poolindex.Limits
}

// PreviewHost is a preview's hostname.
func PreviewHost(name, site, domain string) string { return name + "--" + site + "." + domain }

// ContentDir is DIR/content; the production Store's Dir is ContentDir/ProductionID.
func (l *SitesLayout) ContentDir() string { return filepath.Join(l.Dir, "content") }

// servedPreview is one preview a pod has installed.
type servedPreview struct {
	Preview
	store *gitsource.Store
}

// initLayout makes the directories and renders production's shard.
func (p *Puller) initLayout() error {
	l := p.Sites
	for _, d := range []string{filepath.Join(l.Dir, "index"), filepath.Join(l.ContentDir(), ReadyDir), l.AccessDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	p.served = map[string]*servedPreview{}
	// Trees left by an earlier run of this container are kept only through the fetcher's next answer.
	entries, _ := os.ReadDir(l.ContentDir())
	for _, e := range entries {
		if name, ok := cutPreviewID(e.Name()); ok && previews.ValidName(name) {
			store := &gitsource.Store{Dir: filepath.Join(l.ContentDir(), e.Name())}
			if cur, err := store.Current(); err == nil && cur != "" {
				p.served[name] = &servedPreview{Preview: Preview{Name: name, Commit: cur}, store: store}
			}
		}
	}
	return p.renderIndex()
}

func cutPreviewID(id string) (string, bool) {
	const prefix = "preview."
	if len(id) > len(prefix) && id[:len(prefix)] == prefix {
		return id[len(prefix):], true
	}
	return "", false
}

// syncPreviews installs the previews the fetcher lists (checked: valid names and digests, at most
// previews.MaxMax) and removes the others, then renders the index. The first error stops the pass (the caller
// backs off and asks again); what was installed stays.
func (p *Puller) syncPreviews(ctx context.Context, listed []Preview) error {
	want := map[string]Preview{}
	for _, pv := range listed {
		if len(want) == previews.MaxMax {
			break
		}
		if !previews.ValidName(pv.Name) || pv.Bundle == "" || !validDigest(pv.Bundle) || !gitsource.TreeName(pv.Commit) {
			continue // nothing published, or not something this pod takes
		}
		want[pv.Name] = pv
	}
	// Leaving first: out of the index, then the trees.
	var gone []string
	for name := range p.served {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		kept := p.served
		p.served = map[string]*servedPreview{}
		for name, s := range kept {
			if !slices.Contains(gone, name) {
				p.served[name] = s
			}
		}
		if err := p.renderIndex(); err != nil {
			p.served = kept
			return err
		}
		for _, name := range gone {
			_ = os.RemoveAll(filepath.Join(p.Sites.ContentDir(), PreviewID(name)))
			_ = signalReady(p.Sites.ContentDir(), PreviewID(name))
			p.Log.Info("preview removed", "name", name)
		}
	}
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	slices.Sort(names)
	var firstErr error
	for _, name := range names {
		pv := want[name]
		s := p.served[name]
		if s != nil && s.Commit == pv.Commit {
			s.Preview = pv
			continue
		}
		if s == nil {
			s = &servedPreview{store: &gitsource.Store{Dir: filepath.Join(p.Sites.ContentDir(), PreviewID(name))}}
		}
		// A preview's tree is mostly production's, or its own before the push: those files are linked.
		err := p.installTree(ctx, s.store, pv.Commit, pv.Bundle, pv.Files, pv.Size, []*gitsource.Store{s.store, p.Store}, nil)
		if err == nil {
			err = signalReady(p.Sites.ContentDir(), PreviewID(name))
		}
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("preview %s: %w", name, err)
			}
			continue
		}
		s.Preview = pv
		p.served[name] = s
		p.Log.Info("preview installed", "name", name, "commit", pv.Commit, "digest", pv.Bundle)
	}
	if err := p.renderIndex(); err != nil {
		return err
	}
	return firstErr
}

// renderIndex writes both shards from the flags, the value file and the previews installed (each write a
// rename: the server never reads half a shard; a shard whose bytes did not change is not rewritten).
func (p *Puller) renderIndex() error {
	l := p.Sites
	value, err := os.ReadFile(l.ValueFile)
	if err != nil {
		return fmt.Errorf("reading the site value: %w", err)
	}
	if !json.Valid(value) {
		return fmt.Errorf("the site value %s is not JSON", l.ValueFile)
	}
	// The files the value names (htpasswd, session keys) go where the server's --sites-access-dir reads them.
	value, accessFiles, err := withAccessFiles(value, filepath.Dir(l.ValueFile), l.AccessDir())
	if err != nil {
		return err
	}
	prod := []poolindex.Site{{ID: ProductionID, Hosts: l.Hosts, Value: value, Limits: l.Limits}}
	var pvs []poolindex.Site
	for name := range p.served {
		pvs = append(pvs, poolindex.Site{ID: PreviewID(name), Hosts: []string{PreviewHost(name, l.Site, l.Domain)},
			Value: value, Limits: l.Limits})
	}
	for i, shard := range []struct {
		file  string
		sites []poolindex.Site
	}{{productionShard, prod}, {previewsShard, pvs}} {
		data, err := poolindex.Render(i, shard.sites)
		if err != nil {
			return err
		}
		path := filepath.Join(l.Dir, "index", shard.file)
		if old, err := os.ReadFile(path); err == nil && string(old) == string(data) {
			continue
		}
		if err := writeFileAtomic(path, data); err != nil {
			return err
		}
	}
	pruneAccessFiles(l.AccessDir(), append(accessFiles, p.accessNamed...))
	p.accessNamed = accessFiles
	return nil
}

// followPreviews brings the pod's previews to the fetcher's list when it changed, and the index to the site
// value as it is now (read at every answer, a long poll's timeout included).
func (p *Puller) followPreviews(ctx context.Context, rev Revision) error {
	tag := previewsTag(rev.Previews) // computed, not rev.PreviewsTag: the fetcher's long poll compares this
	if tag == p.previewsHave {
		return p.renderIndex()
	}
	if err := p.syncPreviews(ctx, rev.Previews); err != nil {
		return err
	}
	p.previewsHave = tag
	p.board.update(func(r *Revision) { r.Previews = p.servedPreviewsOrNil() })
	return nil
}

func (p *Puller) servedPreviewsOrNil() []Preview {
	if len(p.served) == 0 {
		return nil
	}
	return p.servedPreviews()
}

// servedPreviews is what this pod serves of the previews, for its /revision.
func (p *Puller) servedPreviews() []Preview {
	out := make([]Preview, 0, len(p.served))
	for _, s := range p.served {
		out = append(out, Preview{Name: s.Name, Ref: s.Ref, Commit: s.Commit, Bundle: s.Bundle})
	}
	slices.SortFunc(out, func(a, b Preview) int { return strings.Compare(a.Name, b.Name) })
	return out
}
