package contentagent

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The access files of a site with previews (issue 44: previews of a private site are private). A site value names
// its htpasswd and session keys files (access.htpasswdFile, access.sso.keysFile) relative to itself; the operator's
// projected volume puts the Secrets' keys beside the value file. An index has nothing beside it, so the server in
// --sites mode reads an entry's files from --sites-access-dir by plain name (images/server/src/pool/index.rs,
// "Access files"), and this puller fills that directory, DIR/access (AccessDirName):
//
//   - each file the value names is copied there as <kind>-<first 16 hex digits of its SHA-256> (kind htpasswd or
//     keys), and the value every entry embeds names the copy. Names made of the content mean that a changed Secret
//     changes the entry's bytes, which is what makes the server read the entry again (a shard's unchanged value
//     is not re-read), and a copy is never rewritten under a server reading it;
//   - copies no entry names any more are removed at the render after the one that stopped naming them (a server
//     that read the shard before may still be opening them);
//   - a file missing, unreadable or over its cap fails the render: the index written before stays, so the pods
//     keep serving the last good value, as a bad value does.
//
// A value that names no file is embedded byte for byte as the operator wrote it.

// AccessDirName is the directory of the layout (DIR/access) holding the entries' access files; the operator
// gives the server the same directory (gitcontent.SitesAccessDir).
const AccessDirName = "access"

// Caps of the copies, the server's own (guard/mod.rs MAX_HTPASSWD_BYTES, the 4 KiB it reads of a keys file).
const (
	maxHtpasswdBytes = 1 << 20
	maxKeysBytes     = 4096
)

// AccessDir is DIR/access.
func (l *SitesLayout) AccessDir() string { return filepath.Join(l.Dir, AccessDirName) }

// withAccessFiles returns value with each access file it names copied from valueDir into accessDir and named by
// its copy, and the copies' names. A value naming none comes back unchanged, with no names.
func withAccessFiles(value []byte, valueDir, accessDir string) ([]byte, []string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(value, &top); err != nil {
		return nil, nil, fmt.Errorf("the site value: %w", err)
	}
	var access map[string]json.RawMessage
	if raw, ok := top["access"]; !ok || json.Unmarshal(raw, &access) != nil {
		return value, nil, nil // no access, or not an object: the server's parser says what is wrong
	}
	var names []string
	copyField := func(obj map[string]json.RawMessage, field, kind string, limit int64) error {
		raw, ok := obj[field]
		if !ok {
			return nil
		}
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			return nil // the server refuses a non-string, naming the field
		}
		copied, err := copyAccessFile(filepath.Join(valueDir, name), accessDir, kind, limit)
		if err != nil {
			return fmt.Errorf("the site value's %s %q: %w", field, name, err)
		}
		names = append(names, copied)
		obj[field], _ = json.Marshal(copied)
		return nil
	}
	if err := copyField(access, "htpasswdFile", "htpasswd", maxHtpasswdBytes); err != nil {
		return nil, nil, err
	}
	var sso map[string]json.RawMessage
	if raw, ok := access["sso"]; ok && json.Unmarshal(raw, &sso) == nil {
		if err := copyField(sso, "keysFile", "keys", maxKeysBytes); err != nil {
			return nil, nil, err
		}
		access["sso"], _ = json.Marshal(sso)
	}
	if len(names) == 0 {
		return value, nil, nil
	}
	top["access"], _ = json.Marshal(access)
	out, err := json.Marshal(top)
	return out, names, err
}

// copyAccessFile copies src (at most limit bytes) to accessDir/<kind>-<digest> unless it is there, and returns
// that name.
func copyAccessFile(src, accessDir, kind string, limit int64) (string, error) {
	f, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return "", err
	}
	if int64(len(data)) > limit {
		return "", fmt.Errorf("larger than %d bytes", limit)
	}
	sum := sha256.Sum256(data)
	name := kind + "-" + hex.EncodeToString(sum[:8])
	path := filepath.Join(accessDir, name)
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return name, nil
	}
	if err := writeFileAtomic(path, data); err != nil {
		return "", err
	}
	return name, nil
}

// pruneAccessFiles removes the copies in accessDir not in keep (the index no longer names them).
func pruneAccessFiles(accessDir string, keep []string) {
	entries, _ := os.ReadDir(accessDir)
	for _, e := range entries {
		n := e.Name()
		if (strings.HasPrefix(n, "htpasswd-") || strings.HasPrefix(n, "keys-")) && !slices.Contains(keep, n) {
			_ = os.Remove(filepath.Join(accessDir, n))
		}
	}
}
