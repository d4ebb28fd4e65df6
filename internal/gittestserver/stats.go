package gittestserver

import (
	"sync"
)

// UploadStats counts what upload-pack sent since the server started: the packs begun (one a client cut short
// counts, with the bytes written until then), the objects in them and their bytes. A test reads it around a
// fetch to assert what the fetch cost; a benchmark reports it.
type UploadStats struct {
	Packs   int
	Objects int
	Bytes   int64
}

// Sub is what was sent between the reading earlier and s.
func (s UploadStats) Sub(earlier UploadStats) UploadStats {
	return UploadStats{Packs: s.Packs - earlier.Packs, Objects: s.Objects - earlier.Objects, Bytes: s.Bytes - earlier.Bytes}
}

// Uploads returns what upload-pack has sent so far.
func (s *Server) Uploads() UploadStats {
	s.sent.mu.Lock()
	defer s.sent.mu.Unlock()
	return s.sent.total
}

// uploadCounter adds up the packs sent (fetches run in parallel under the server's read lock).
type uploadCounter struct {
	mu    sync.Mutex
	total UploadStats
}

func (c *uploadCounter) add(objects int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total.Packs++
	c.total.Objects += objects
	c.total.Bytes += bytes
}
