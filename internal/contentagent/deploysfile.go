package contentagent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"hyperstatic.dev/hyperstatic/internal/gitsource"
)

// Dir/deploys.json is the contract between a pod's puller and its server for skew protection
// (docs/design/deploys.md, decision 3; the server's side is images/server/src/skew/): the trees the pod keeps,
// each with its commit and when the site served it, so that for a window after a deploy the server can answer a
// request the new tree has no file for from the trees before it (a page loaded before the deploy asks for its
// old assets). The puller writes it before each flip of Dir/current, with a rename, so the server's reload that
// the flip causes reads the list that goes with the new tree. Times are the fetcher's (firstServed, lastServed):
// the same on every pod and across a puller's restart. The tree being replaced is listed even when the fetcher's
// history no longer names it (history 1), ending now. Only the dedicated puller writes it, for production: in the
// --sites layout of a site with previews (previewlayout.go) production's Store is DIR/content/production.site and
// the same install writes the list there, while a preview gets none (one commit, nothing before it to protect).
// A pool site serves without skew protection (the pool puller keeps one tree per site).

// DeploysFile is the file's name in the Store's Dir.
const DeploysFile = "deploys.json"

// DeploysList is the file's content.
type DeploysList struct {
	Deploys []TreeDeploy `json:"deploys"`
}

// TreeDeploy is one kept tree: its name in Dir, its commit, and when it was served (ServedUntil zero while it is
// served, or if it never was; ServedFrom zero if it never was).
type TreeDeploy struct {
	Tree        string    `json:"tree"`
	Commit      string    `json:"commit"`
	ServedFrom  time.Time `json:"servedFrom,omitzero"`
	ServedUntil time.Time `json:"servedUntil,omitzero"`
}

// deploysList is the list for Dir when next is about to replace replaced ("" when nothing was served): next, and
// the fetcher's deploys whose tree is on disk, newest first, then replaced if the history no longer names it.
func deploysList(dir string, deploys []Deploy, next, replaced string, now time.Time) DeploysList {
	out := DeploysList{Deploys: []TreeDeploy{}}
	listed := map[string]bool{}
	for _, d := range deploys {
		if len(out.Deploys) == MaxHistory || listed[d.Commit] || !gitsource.TreeName(d.Commit) {
			continue
		}
		if d.Commit != next && !isDir(filepath.Join(dir, d.Commit)) {
			continue
		}
		listed[d.Commit] = true
		out.Deploys = append(out.Deploys, TreeDeploy{Tree: d.Commit, Commit: d.Commit, ServedFrom: d.FirstServed.UTC(), ServedUntil: d.LastServed.UTC()})
	}
	if replaced != "" && replaced != next && !listed[replaced] && gitsource.TreeName(replaced) {
		out.Deploys = append(out.Deploys, TreeDeploy{Tree: replaced, Commit: replaced, ServedUntil: now.UTC()})
	}
	return out
}

func isDir(p string) bool {
	info, err := os.Lstat(p)
	return err == nil && info.IsDir()
}

// writeDeploys replaces Dir/deploys.json with list: a new file renamed over it, so the server reads the whole
// old list or the whole new one. Readable by the server, which may run as another user.
func writeDeploys(dir string, list DeploysList) error {
	data, err := json.Marshal(list)
	if err != nil {
		return err
	}
	// A dot name: the Store removes leftovers of that form, should a crash leave one.
	f, err := os.CreateTemp(dir, ".deploys-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // a no-op once renamed
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), filepath.Join(dir, DeploysFile))
}
