package benchresults

import (
	"fmt"
	"sort"
	"strings"
)

// The HTTP versions of a run's responses, as k6 names them (res.proto, from Go's net/http Response.Proto). The
// script counts every response with a status under one of these names; the operator accepts no other name from
// a pod's output, so what reaches status.protocol is one of them whatever a pod prints.
const (
	ProtocolHTTP10 = "HTTP/1.0"
	ProtocolHTTP11 = "HTTP/1.1"
	ProtocolHTTP2  = "HTTP/2.0"
	// ProtocolOther counts responses of a version k6 reported under another name.
	ProtocolOther = "other"
)

// Protocols are the names a pod may report counts for.
var Protocols = []string{ProtocolHTTP10, ProtocolHTTP11, ProtocolHTTP2, ProtocolOther}

// addProtocols adds a pod step's protocol counts to sum, keeping only the known names and positive counts; it
// returns what it left out, for a warning.
func addProtocols(sum map[string]int64, counts map[string]int64) (ignored []string) {
	for name, n := range counts {
		known := false
		for _, p := range Protocols {
			known = known || p == name
		}
		if !known || n < 0 {
			ignored = append(ignored, fmt.Sprintf("%.40q", name))
			continue
		}
		sum[name] += n
	}
	sort.Strings(ignored)
	return ignored
}

// ProtocolOf is status.protocol: the one version of a run's responses, or the versions joined by "+", most
// responses first (ties by name); "" when no response was counted.
func ProtocolOf(counts map[string]int64) string {
	names := make([]string, 0, len(counts))
	for name, n := range counts {
		if n > 0 {
			names = append(names, name)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		if counts[names[i]] != counts[names[j]] {
			return counts[names[i]] > counts[names[j]]
		}
		return names[i] < names[j]
	})
	return strings.Join(names, "+")
}

// protocolWarnings say what a reader of the results must know about the versions: a mix (with the counts), and a
// run that asked for HTTP/2 but got something else (the server did not offer h2 in ALPN).
func protocolWarnings(counts map[string]int64, asked string) []string {
	var out []string
	got := ProtocolOf(counts)
	if strings.Contains(got, "+") {
		parts := []string{}
		for _, name := range strings.Split(got, "+") {
			parts = append(parts, fmt.Sprintf("%s %d", name, counts[name]))
		}
		out = append(out, "responses of more than one HTTP version: "+strings.Join(parts, ", "))
	}
	if asked == "HTTP/2" && got != "" && got != ProtocolHTTP2 {
		out = append(out, fmt.Sprintf("protocol HTTP/2 was asked, but the responses were %s: the target did not offer h2 over TLS", got))
	}
	return out
}
