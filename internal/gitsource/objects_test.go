package gitsource

import (
	"fmt"
	mathrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/crypto/ssh/knownhosts"

	gts "hyperstatic.dev/hyperstatic/internal/gittestserver"
	"hyperstatic.dev/hyperstatic/internal/gitwebhook"
)

// docs is a site in three directories: index.html, docs/pageNN.html and api/pageNN.html (10 each), and
// assets/big.css (4 KB). Its commit is 27 objects: the commit, 4 trees, 22 blobs.
func docs(version string) map[string]gts.File {
	files := map[string]gts.File{
		"index.html":     gts.Regular(version + ":index"),
		"assets/big.css": gts.Regular(noise(4<<10, 7)),
	}
	for i := range 10 {
		files[fmt.Sprintf("docs/page%02d.html", i)] = gts.Regular(fmt.Sprintf("%s:docs %d", version, i))
		files[fmt.Sprintf("api/page%02d.html", i)] = gts.Regular(fmt.Sprintf("api %d", i))
	}
	return files
}

const docsObjects = 1 + 4 + 22

// noise is n incompressible bytes, the same for the same seed.
func noise(n int, seed uint64) string {
	rng := mathrand.New(mathrand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return string(b)
}

// keptRepo is a test Git server, a repository on it whose main a test pushes commits to, and a Store keeping its
// object store (newStore), as the fetcher runs them.
type keptRepo struct {
	t     *testing.T
	srv   *gts.Server
	repo  *gts.Repo
	store *Store
	src   Source
	head  plumbing.Hash
}

func newKeptRepo(t *testing.T) *keptRepo {
	t.Helper()
	srv, base := gts.Start(t, "", "", "")
	r := srv.NewRepo(t, base, "site.git", nil)
	return &keptRepo{t: t, srv: srv, repo: r, store: newStore(t), src: Source{URL: r.URL, Ref: "main"}}
}

// push commits files on main (on the last commit pushed, if any) and pushes it.
func (k *keptRepo) push(files map[string]gts.File) plumbing.Hash {
	k.t.Helper()
	var parents []plumbing.Hash
	if !k.head.IsZero() {
		parents = append(parents, k.head)
	}
	k.head = k.repo.Commit("commit", files, parents...)
	k.repo.Push("refs/heads/main", k.head, true)
	return k.head
}

// sync syncs s to main, checks it serves files, and returns what the server sent for it.
func (k *keptRepo) sync(s *Store, files map[string]gts.File) gts.UploadStats {
	k.t.Helper()
	before := k.srv.Uploads()
	if rev, _ := mustSync(k.t, s, k.src); rev.Commit != k.head.String() {
		k.t.Fatalf("serving %s, want %s", rev.Commit, k.head)
	}
	wantTree(k.t, served(k.t, s), files)
	return k.srv.Uploads().Sub(before)
}

// usage is what the Store's kept object store holds: bytes and packs.
func usage(t *testing.T, s *Store) (int64, int) {
	t.Helper()
	used, packs, err := s.Objects.usage()
	if err != nil {
		t.Fatal(err)
	}
	return used, packs
}

// A push of one page costs the page: the second and third fetches send the commit, the root tree, docs/ and the
// page, against all 27 objects for a Store without a kept object store (what every fetch was before).
func TestKeptStoreFetchesOnlyWhatChanged(t *testing.T) {
	k := newKeptRepo(t)
	files := docs("v1")
	k.push(files)
	first := k.sync(k.store, files)
	if first.Objects != docsObjects {
		t.Fatalf("the first fetch sent %d objects, want all %d", first.Objects, docsObjects)
	}
	for i, page := range []string{"docs/page03.html", "docs/page07.html"} {
		files = with(files, map[string]gts.File{page: gts.Regular(fmt.Sprintf("push %d", i))})
		k.push(files)
		got := k.sync(k.store, files)
		if got.Packs != 1 || got.Objects != 4 || got.Bytes*4 > first.Bytes {
			t.Fatalf("push %d sent %+v, want one pack of 4 objects (commit, root, docs/, the page), a fraction of the "+
				"first's %d bytes", i, got, first.Bytes)
		}
	}
	scratch := &Store{Dir: filepath.Join(t.TempDir(), "content")}
	if got := k.sync(scratch, files); got.Objects != docsObjects {
		t.Fatalf("a Store without Objects was sent %d objects, want all %d (the fetch as it was)", got.Objects, docsObjects)
	}
}

// A preview's Store shares production's object store (as the fetcher wires them): its first fetch costs what the
// pull request changed, and production's next push costs its own change only.
func TestPreviewFetchBuildsOnProductions(t *testing.T) {
	k := newKeptRepo(t)
	prod := k.store
	files := docs("v1")
	c1 := k.push(files)
	k.sync(prod, files)

	pr := with(files, map[string]gts.File{"api/page04.html": gts.Regular("the pull request's page")})
	head := k.repo.Commit("pr", pr, c1)
	k.repo.Push("refs/heads/contributor", head, false)
	if err := k.srv.SetPullRef("site.git", gitwebhook.GitHub, 1, head); err != nil {
		t.Fatal(err)
	}
	preview := &Store{Dir: filepath.Join(t.TempDir(), "previews", "pr-1"), LinkFrom: prod, Objects: prod.Objects}
	before := k.srv.Uploads()
	target := Target{Ref: "refs/pull/1/head", Commit: head}
	if rev, _, err := preview.SyncTo(t.Context(), Source{URL: k.repo.URL, Ref: target.Ref}, target); err != nil || rev.Commit != head.String() {
		t.Fatalf("the preview's sync: %+v, %v", rev, err)
	}
	if got := k.srv.Uploads().Sub(before); got.Packs != 1 || got.Objects != 4 {
		t.Fatalf("the preview's first fetch sent %+v, want one pack of 4 objects (commit, root, api/, the page)", got)
	}
	wantTree(t, served(t, preview), pr)
	wantTree(t, served(t, prod), files)

	// A branch at production's very commit: the store holds it, nothing new is sent.
	k.repo.Push("refs/heads/same", c1, false)
	same := &Store{Dir: filepath.Join(t.TempDir(), "previews", "same"), LinkFrom: prod, Objects: prod.Objects}
	before = k.srv.Uploads()
	mustSync(t, same, Source{URL: k.repo.URL, Ref: "same"})
	if got := k.srv.Uploads().Sub(before); got.Objects != 0 {
		t.Fatalf("a preview of production's commit was sent %d objects, want none", got.Objects)
	}
	wantTree(t, served(t, same), files)

	files = with(files, map[string]gts.File{"index.html": gts.Regular("v2:index")})
	k.push(files)
	if got := k.sync(prod, files); got.Objects != 3 {
		t.Fatalf("production's next push sent %d objects, want 3 (commit, root, index.html)", got.Objects)
	}
}

// The kept store starts afresh (one full fetch, one pack) once it holds more than twice its fresh fetch, once it
// holds more than maxKeptPacks packs, and when an incremental fetch would pass the room MaxBytes leaves it. The
// store never holds more than MaxBytes.
func TestKeptStoreStartsAfreshPastItsBounds(t *testing.T) {
	t.Run("twice its fresh size", func(t *testing.T) {
		k := newKeptRepo(t)
		files := docs("v1")
		k.push(files)
		k.sync(k.store, files)
		fresh, _ := usage(t, k.store)
		for i := range 10 {
			used, packs := usage(t, k.store)
			files = with(files, map[string]gts.File{fmt.Sprintf("video%d.bin", i): gts.Regular(noise(2<<10, uint64(i)))})
			k.push(files)
			got := k.sync(k.store, files)
			if used <= keptGrowth*fresh {
				if got.Objects != 3 {
					t.Fatalf("push %d, store at %d of %d bytes: sent %d objects, want 3", i, used, fresh, got.Objects)
				}
				continue
			}
			_, after := usage(t, k.store)
			if got.Objects != docsObjects+i+1 || packs != i+1 || after != 1 {
				t.Fatalf("push %d past twice the fresh store (%d > 2 × %d, %d packs): sent %d objects, %d packs after; "+
					"want a fresh store: all %d objects, 1 pack", i, used, fresh, packs, got.Objects, after, docsObjects+i+1)
			}
			return
		}
		t.Fatal("the store never started afresh")
	})

	t.Run("too many packs", func(t *testing.T) {
		k := newKeptRepo(t)
		// 256 KB of noise: the small packs of the pushes stay far below twice the store, so the packs' bound acts.
		// The commits are pushed at once and fetched one by one by hash (the server's own packs would otherwise
		// grow with the pushes and slow every request).
		files := with(docs("v1"), map[string]gts.File{"video.bin": gts.Regular(noise(256<<10, 3))})
		var commits []plumbing.Hash
		for i := range maxKeptPacks + 2 {
			files = with(files, map[string]gts.File{"index.html": gts.Regular(fmt.Sprint("push ", i))})
			commits = append(commits, k.repo.Commit("commit", files, commits[max(0, i-1):]...))
		}
		k.repo.Push("refs/heads/main", commits[len(commits)-1], false)
		for i, c := range commits {
			before := k.srv.Uploads()
			f, err := k.store.Objects.fetch(t.Context(), Source{URL: k.repo.URL, Ref: c.String()}, Target{Commit: c}, false)
			if err != nil {
				t.Fatalf("fetch %d: %v", i, err)
			}
			f.release()
			sent := k.srv.Uploads().Sub(before).Objects
			_, packs := usage(t, k.store)
			switch {
			case i == 0 || i == maxKeptPacks+1: // the first, and the one after maxKeptPacks + 1 packs
				if sent != docsObjects+1 || packs != 1 {
					t.Fatalf("fetch %d sent %d objects and left %d packs, want a fresh store: all %d objects, 1 pack",
						i, sent, packs, docsObjects+1)
				}
			case sent != 3 || packs != i+1:
				t.Fatalf("fetch %d sent %d objects and left %d packs, want 3 objects, %d packs", i, sent, packs, i+1)
			}
		}
	})

	t.Run("the room MaxBytes leaves", func(t *testing.T) {
		k := newKeptRepo(t)
		files := map[string]gts.File{"index.html": gts.Regular("v1"), "a.bin": gts.Regular(noise(40<<10, 1))}
		k.push(files)
		k.src.MaxBytes = 80 << 10
		k.sync(k.store, files)
		// An incremental pack of the new 40 KB file would take the store past 80 KB; the commit's whole pack fits.
		files = map[string]gts.File{"index.html": gts.Regular("v2"), "b.bin": gts.Regular(noise(40<<10, 2))}
		k.push(files)
		if got := k.sync(k.store, files); got.Packs != 2 {
			t.Fatalf("sent %d packs, want 2: the incremental one cut at the limit, then the whole commit", got.Packs)
		}
		if used, packs := usage(t, k.store); used > k.src.MaxBytes || packs != 1 {
			t.Fatalf("the store holds %d bytes in %d packs, want a fresh store within %d", used, packs, k.src.MaxBytes)
		}
	})
}

// Every way the incremental path can go wrong publishes the commit's exact tree: a server that ignores the haves,
// one that walks past the shallow commit (withholding a blob the store lacks), a pack of the store damaged on disk
// (a tree unreadable: caught by the check after the fetch; a blob unreadable: caught writing the tree), a
// force-push, a ref moved to an unrelated commit, and a server that no longer has the store's commits.
func TestKeptStoreFallsBackToAFreshFetch(t *testing.T) {
	for name, tc := range map[string]struct {
		// before runs once the store serves docs("v1"); it returns the files of the commit the test then
		// syncs (pushed by it).
		before func(k *keptRepo) map[string]gts.File
		// packs is what the sync must make the server send: 2 for an incremental fetch that fell back.
		packs int
		// after is what the next one-page push then costs: 3 objects, or all when the store passed twice its
		// fresh size meanwhile (two whole packs were fetched into it) and starts afresh.
		after int
	}{
		"the server ignores the haves": {func(k *keptRepo) map[string]gts.File {
			k.srv.SetFaults(gts.Faults{IgnoreHaves: true})
			files := with(docs("v1"), map[string]gts.File{"docs/page01.html": gts.Regular("v2")})
			k.push(files)
			return files
		}, 1, docsObjects},
		"the server walks past the shallow commit": {func(k *keptRepo) map[string]gts.File {
			first := k.head
			k.store = newStore(k.t)
			k.push(docs("v2")) // a new store holds v2 only, shallow; v1's pages are in its parent
			k.sync(k.store, docs("v2"))
			k.srv.SetFaults(gts.Faults{IgnoreClientShallows: true})
			k.head = first // a commit on v1, which the server takes for the store's
			files := with(docs("v1"), map[string]gts.File{"new.html": gts.Regular("new")})
			k.push(files)
			return files
		}, 2, 3},
		"a tree of the kept pack is damaged": {func(k *keptRepo) map[string]gts.File {
			truncatePack(k.t, k.store)
			files := with(docs("v1"), map[string]gts.File{"docs/page01.html": gts.Regular("v2")})
			k.push(files)
			return files
		}, 2, 3},
		"a blob of the kept pack is damaged": {func(k *keptRepo) map[string]gts.File {
			damageBlob(k.t, k.store, docs("v1")["assets/big.css"].Data)
			cur, _ := k.store.Current()
			_ = os.Remove(filepath.Join(k.store.Dir, cur+blobsSuffix)) // so the tree is read, not linked
			files := with(docs("v1"), map[string]gts.File{"docs/page01.html": gts.Regular("v2")})
			k.push(files)
			return files
		}, 2, 3},
		"a force-push rewrote the history": {func(k *keptRepo) map[string]gts.File {
			k.push(with(docs("v1"), map[string]gts.File{"docs/page01.html": gts.Regular("v2")}))
			k.sync(k.store, with(docs("v1"), map[string]gts.File{"docs/page01.html": gts.Regular("v2")}))
			k.head = k.repo.Commit("v1 again", docs("v1")) // a new root: v2 is left behind
			files := with(docs("v1"), map[string]gts.File{"docs/page02.html": gts.Regular("v3")})
			k.push(files)
			return files
		}, 1, docsObjects},
		"the ref moved to an unrelated commit": {func(k *keptRepo) map[string]gts.File {
			k.head = plumbing.ZeroHash
			files := site("elsewhere")
			k.push(files)
			return files
		}, 1, 3},
		"the server no longer has the store's commits": {func(k *keptRepo) map[string]gts.File {
			if err := os.RemoveAll(filepath.Join(k.srv.Root, "site.git")); err != nil {
				k.t.Fatal(err)
			}
			base, _ := strings.CutSuffix(k.repo.URL, "/site.git")
			k.repo, k.head = k.srv.NewRepo(k.t, base, "site.git", nil), plumbing.ZeroHash
			files := with(docs("v1"), map[string]gts.File{"index.html": gts.Regular("recreated")})
			k.push(files)
			return files
		}, 1, 3},
	} {
		t.Run(name, func(t *testing.T) {
			k := newKeptRepo(t)
			k.push(docs("v1"))
			k.sync(k.store, docs("v1"))
			files := tc.before(k)
			if got := k.sync(k.store, files); got.Packs != tc.packs {
				t.Fatalf("the sync made the server send %d packs, want %d", got.Packs, tc.packs)
			}
			// And the store goes on: the next push is incremental again.
			k.srv.SetFaults(gts.Faults{})
			files = with(files, map[string]gts.File{"index.html": gts.Regular("after")})
			k.push(files)
			if got := k.sync(k.store, files); got.Objects != tc.after {
				t.Fatalf("the push after sent %d objects, want %d", got.Objects, tc.after)
			}
		})
	}
}

// packOf returns the pack and index paths of the store's only pack.
func packOf(t *testing.T, s *Store) (pack, idx string) {
	t.Helper()
	idxs := packIndexes(t, s)
	if len(idxs) != 1 {
		t.Fatalf("the store has %d packs, want 1", len(idxs))
	}
	return strings.TrimSuffix(idxs[0], ".idx") + ".pack", idxs[0]
}

// truncatePack cuts the store's pack after its commit: the index still lists every object, most are unreadable.
func truncatePack(t *testing.T, s *Store) {
	t.Helper()
	pack, _ := packOf(t, s)
	if err := os.Truncate(pack, 300); err != nil {
		t.Fatal(err)
	}
}

// damageBlob overwrites bytes inside the compressed data of the blob holding data in the store's pack.
func damageBlob(t *testing.T, s *Store, data string) {
	t.Helper()
	pack, idxPath := packOf(t, s)
	off, err := readIndex(t, idxPath).FindOffset(plumbing.ComputeHash(plumbing.BlobObject, []byte(data)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := os.OpenFile(pack, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.WriteAt([]byte(strings.Repeat("\xff", 64)), off+64); err != nil {
		t.Fatal(err)
	}
}

// Production's and a preview's Syncs run in two goroutines (the fetcher's two loops) on one Objects: each serves
// its own commit exactly (run with -race).
func TestSharedObjectsConcurrentSyncs(t *testing.T) {
	k := newKeptRepo(t)
	prod := k.store
	preview := &Store{Dir: filepath.Join(t.TempDir(), "preview"), LinkFrom: prod, Objects: prod.Objects}
	previewSrc := Source{URL: k.repo.URL, Ref: "feature"}
	base := k.push(docs("v1"))
	k.sync(prod, docs("v1"))
	for i := range 4 {
		main := with(docs("v1"), map[string]gts.File{"docs/page01.html": gts.Regular(fmt.Sprint("main ", i))})
		feature := with(docs("v1"), map[string]gts.File{"api/page01.html": gts.Regular(fmt.Sprint("feature ", i))})
		k.push(main)
		k.repo.Push("refs/heads/feature", k.repo.Commit("feature", feature, base), true)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		wg.Go(func() { _, _, errs[0] = prod.Sync(t.Context(), k.src) })
		wg.Go(func() { _, _, errs[1] = preview.Sync(t.Context(), previewSrc) })
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("round %d: %v", i, errs)
		}
		wantTree(t, served(t, prod), main)
		wantTree(t, served(t, preview), feature)
	}
}

// The same over SSH (this server's stateful upload-pack, where go-git sends its haves, a flush and "done").
func TestKeptStoreOverSSH(t *testing.T) {
	k := newKeptRepo(t)
	keys := gts.NewSSHKeys(t)
	addr := k.srv.StartSSH(t, keys)
	url := "ssh://git@" + addr + "/site.git"
	auth, err := AuthFromSecret(url, map[string][]byte{SecretIdentity: keys.ClientPEM,
		SecretKnownHosts: []byte(knownhosts.Line([]string{knownhosts.Normalize(addr)}, keys.Host.PublicKey()) + "\n")})
	if err != nil {
		t.Fatal(err)
	}
	k.src = Source{URL: url, Ref: "main", Auth: auth}
	files := docs("v1")
	k.push(files)
	k.sync(k.store, files)
	files = with(files, map[string]gts.File{"docs/page05.html": gts.Regular("v2")})
	k.push(files)
	if got := k.sync(k.store, files); got.Packs != 1 || got.Objects != 4 {
		t.Fatalf("over SSH the push sent %+v, want one pack of 4 objects", got)
	}
}
