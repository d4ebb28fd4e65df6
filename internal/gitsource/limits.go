package gitsource

import (
	"strings"
)

// Defaults of the tree limits, and the fixed charge of an entry. A Git tree can name one subtree many times: three
// trees that each repeat the one below 1,000 times are a pack of a few KB and 10^9 empty files, which would fill
// a node's inodes, not its bytes. So every entry written (file, directory, link) costs EntryCost toward MaxBytes
// beside its content, entries are counted against MaxEntries, and no path is deeper than MaxDepth. The fetcher
// writing a tree and a puller extracting a bundle charge alike, so a tree the fetcher published always fits a
// pod given the same limits.
const (
	// DefaultMaxEntries: 100,000 entries is ~100 × the Python documentation (1,065 files) and 3 × the largest
	// documentation site measured here (32,891 files), and writes in a few seconds.
	DefaultMaxEntries = 100_000
	// DefaultMaxDepth: 64 path components; real sites nest under 15 (the Python docs: 5). It keeps every path
	// far below PATH_MAX and the walk's recursion shallow.
	DefaultMaxDepth = 64
	// EntryCost is what each entry takes from MaxBytes beside its content: one 512-byte tar header in the bundle,
	// and about an inode (256 bytes on ext4) plus its name on disk.
	EntryCost = 512
)

// Limits bound what one commit's tree may put on disk: bytes (content plus EntryCost per entry), entries and
// depth. A zero field takes its default.
type Limits struct {
	MaxBytes   int64
	MaxEntries int
	MaxDepth   int
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	return l
}

// treeBudget charges the entries of one tree as they are written. Each check runs before the entry is created,
// so a refused tree never holds more than MaxEntries entries nor more than MaxBytes bytes of content.
type treeBudget struct {
	lim     Limits
	what    string // "the served tree" or "the bundle": who broke the limit, for the message
	bytes   budget
	entries int
}

func newTreeBudget(lim Limits, what string) *treeBudget {
	lim = lim.withDefaults()
	return &treeBudget{lim: lim, what: what, bytes: budget{max: lim.MaxBytes}}
}

// entry charges one entry at the slash path name with size bytes of content (0 for a directory or a link; a
// link's target is charged as its size). The error is TooLarge naming the limit and the path.
func (t *treeBudget) entry(name string, size int64) error {
	if depth := strings.Count(name, "/") + 1; depth > t.lim.MaxDepth {
		return newError(TooLarge, nil, "%s passes the depth limit of %d directories at %s", t.what, t.lim.MaxDepth, name)
	}
	t.entries++
	if t.entries > t.lim.MaxEntries {
		return newError(TooLarge, nil, "%s passes the limit of %d entries (files, directories and links) at %s",
			t.what, t.lim.MaxEntries, name)
	}
	if t.bytes.take(int(min(size, 1<<40))+EntryCost) != nil {
		return newError(TooLarge, nil, "%s passes the size limit of %d bytes (content plus %d per entry) at %s",
			t.what, t.lim.MaxBytes, EntryCost, name)
	}
	return nil
}
