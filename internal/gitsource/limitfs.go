package gitsource

import (
	"errors"
	"os"
	"sync/atomic"

	"github.com/go-git/go-billy/v5"
)

// errBudget is what a write past the limit returns; the caller reports TooLarge from the budget itself, since
// go-git does not always keep the cause when it wraps an error.
var errBudget = errors.New("size limit reached")

// budget counts bytes written against a limit.
type budget struct {
	max     int64
	used    atomic.Int64
	tripped atomic.Bool
}

// take counts n more bytes and fails once the total passes the limit.
func (b *budget) take(n int) error {
	if b.used.Add(int64(n)) > b.max {
		b.tripped.Store(true)
		return errBudget
	}
	return nil
}

// limitFS is the object store's filesystem: every byte go-git writes (the packfile as it arrives, its index,
// the shallow file) is counted against the budget, and the write that passes it fails. The packfile is therefore
// never held in memory nor written whole before the limit applies.
type limitFS struct {
	billy.Filesystem
	b *budget
}

func (fs limitFS) Create(name string) (billy.File, error) {
	f, err := fs.Filesystem.Create(name)
	return fs.wrap(f, err)
}

func (fs limitFS) OpenFile(name string, flag int, perm os.FileMode) (billy.File, error) {
	f, err := fs.Filesystem.OpenFile(name, flag, perm)
	return fs.wrap(f, err)
}

func (fs limitFS) TempFile(dir, prefix string) (billy.File, error) {
	f, err := fs.Filesystem.TempFile(dir, prefix)
	return fs.wrap(f, err)
}

func (fs limitFS) Chroot(path string) (billy.Filesystem, error) {
	sub, err := fs.Filesystem.Chroot(path)
	if err != nil {
		return nil, err
	}
	return limitFS{Filesystem: sub, b: fs.b}, nil
}

func (fs limitFS) wrap(f billy.File, err error) (billy.File, error) {
	if err != nil {
		return nil, err
	}
	return limitFile{File: f, b: fs.b}, nil
}

type limitFile struct {
	billy.File
	b *budget
}

func (f limitFile) Write(p []byte) (int, error) {
	if err := f.b.take(len(p)); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}
