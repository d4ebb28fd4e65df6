package podmetrics

import (
	"strings"
	"testing"
)

// contentExposition is the content part of a server's /metrics (images/server/src/admin/metrics.rs), for a site that
// does not fit: 7 MiB of it is served from disk and a 96 MiB limit would hold it.
const contentExposition = `# TYPE hyperstatic_content_files gauge
hyperstatic_content_files 12
# TYPE hyperstatic_content_bytes gauge
hyperstatic_content_bytes 9437184
# TYPE hyperstatic_content_memory_bytes gauge
hyperstatic_content_memory_bytes 2097152
# TYPE hyperstatic_content_disk_bytes gauge
hyperstatic_content_disk_bytes 7340032
# TYPE hyperstatic_memory_limit_bytes gauge
hyperstatic_memory_limit_bytes 67108864
# TYPE hyperstatic_content_memory_budget_bytes gauge
hyperstatic_content_memory_budget_bytes 20971520
# TYPE hyperstatic_content_fit_memory_limit_bytes gauge
hyperstatic_content_fit_memory_limit_bytes 100663296
# TYPE hyperstatic_content_encodings_pending gauge
hyperstatic_content_encodings_pending 3
`

func TestParseContent(t *testing.T) {
	s, err := Parse(strings.NewReader(exposition + contentExposition))
	if err != nil {
		t.Fatal(err)
	}
	want := Content{Files: 12, Bytes: 9 << 20, MemoryBytes: 2 << 20, DiskBytes: 7 << 20, MemoryLimitBytes: 64 << 20,
		MemoryBudgetBytes: 20 << 20, FitMemoryLimitBytes: 96 << 20, EncodingsPending: 3}
	if s.Content == nil || *s.Content != want {
		t.Fatalf("Content = %+v, want %+v", s.Content, want)
	}
}

// A server image older than the content gauges exports none of them: that is "not reported", not an error, so
// the autoscaler and the Pinned condition keep working on such pods.
func TestParseWithoutContentGauges(t *testing.T) {
	s, err := Parse(strings.NewReader(exposition))
	if err != nil {
		t.Fatal(err)
	}
	if s.Content != nil {
		t.Fatalf("Content = %+v, want nil", s.Content)
	}
}

// Some gauges without the others is no server this package knows: numbers read as zero would claim a site in
// memory that is not.
func TestParseRejectsPartialContent(t *testing.T) {
	partial := strings.ReplaceAll(contentExposition, "hyperstatic_content_disk_bytes", "hyperstatic_content_disk_bytes_renamed")
	_, err := Parse(strings.NewReader(exposition + partial))
	if err == nil || !strings.Contains(err.Error(), ContentDiskBytes) {
		t.Fatalf("want an error naming %s, got %v", ContentDiskBytes, err)
	}
}

func TestParseRejectsImpossibleContentValues(t *testing.T) {
	for _, v := range []string{"-1", "NaN", "+Inf", "1e300"} {
		bad := strings.Replace(contentExposition, "hyperstatic_content_bytes 9437184", "hyperstatic_content_bytes "+v, 1)
		if _, err := Parse(strings.NewReader(exposition + bad)); err == nil || !strings.Contains(err.Error(), ContentBytes) {
			t.Errorf("value %s: want an error naming %s, got %v", v, ContentBytes, err)
		}
	}
}
