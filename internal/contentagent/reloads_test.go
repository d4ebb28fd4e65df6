package contentagent

import (
	"strings"
	"testing"
)

// The reload counter is read from the server's Prometheus text: only its own series, all results summed,
// labels and timestamps skipped; a page without it, or a malformed line of it, is an error.
func TestParseReloads(t *testing.T) {
	for _, tc := range []struct {
		name, page string
		want       float64
		ok         bool
	}{
		{"success only", "# TYPE hyperstatic_reloads_total counter\nhyperstatic_reloads_total{result=\"success\"} 7\n", 7, true},
		{"success and failure", "hyperstatic_reloads_total{result=\"success\"} 7\nhyperstatic_reloads_total{result=\"failure\"} 2\n", 9, true},
		{"no labels, a timestamp", "hyperstatic_reloads_total 3 1700000000000\n", 3, true},
		{"a brace and a quote in a label value", `hyperstatic_reloads_total{result="success",why="a}\"b"} 4` + "\n", 4, true},
		{"names that start the same are other metrics",
			"hyperstatic_reloads_total_created 1.7e9\nhyperstatic_reloads_totals 99\nhyperstatic_reloads_total{result=\"success\"} 1\n", 1, true},
		{"other metrics around", "hyperstatic_requests_total 10\nhyperstatic_reloads_total{result=\"success\"} 1e3\nx 1\n", 1000, true},
		{"CRLF line ends", "hyperstatic_reloads_total{result=\"success\"} 5\r\n", 5, true},
		{"absent", "hyperstatic_requests_total 10\n", 0, false},
		{"empty page", "", 0, false},
		{"no value", "hyperstatic_reloads_total{result=\"success\"}\n", 0, false},
		{"not a number", "hyperstatic_reloads_total{result=\"success\"} many\n", 0, false},
		{"unterminated labels", "hyperstatic_reloads_total{result=\"success 5\n", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseReloads([]byte(tc.page))
			if (err == nil) != tc.ok || got != tc.want {
				t.Fatalf("got %v, %v; want %v (ok=%t)", got, err, tc.want, tc.ok)
			}
		})
	}
	// The page is bounded before parsing (maxMetricsBytes); parsing a large one stays linear.
	big := strings.Repeat("hyperstatic_other_metric 1\n", 30000) + "hyperstatic_reloads_total 2\n"
	if got, err := parseReloads([]byte(big)); err != nil || got != 2 {
		t.Fatalf("a large page: %v, %v", got, err)
	}
}
