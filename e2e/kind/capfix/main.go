// Command runc-capfix is an OCI runtime wrapper that dockerd uses as its default runtime on hosts whose
// capability bounding set is smaller than the set the kernel knows (this VM lacks CAP_SYS_RESOURCE).
//
// Why: `docker run --privileged`, which kind uses for every node container, asks runc for every capability
// the kernel knows; runc cannot raise a capability outside its bounding set and fails with "unable to apply
// caps: operation not permitted". The wrapper removes, from the OCI spec handed to runc, each capability the
// bounding set lacks, then execs the real runc with the unchanged arguments:
//   - create/run: the spec is <bundle>/config.json (capabilities under .process);
//   - exec:       the spec is the --process file (capabilities at the top level).
//
// Everything else passes through untouched, so on a host with a full bounding set it is a no-op.
package main

import (
	"encoding/json"
	"os"
	"strings"
	"syscall"
)

// defaultRealRuntime is Debian's runc; RUNC_CAPFIX_REAL overrides it.
const defaultRealRuntime = "/usr/sbin/runc"

func main() {
	real := os.Getenv("RUNC_CAPFIX_REAL")
	if real == "" {
		real = defaultRealRuntime
	}
	args := os.Args[1:]
	if bounding, err := readBoundingSet("/proc/self/status"); err == nil {
		for _, s := range specFiles(args) {
			_ = rewriteSpec(s.path, s.underProcess, bounding)
		}
	}
	err := syscall.Exec(real, append([]string{real}, args...), os.Environ())
	os.Stderr.WriteString("runc-capfix: exec " + real + ": " + err.Error() + "\n")
	os.Exit(127)
}

// rewriteSpec drops capabilities outside the bounding set from the OCI document in file.
// underProcess says whether the capabilities object sits under "process" (config.json) or at the top level
// (an exec --process file). A file it cannot parse is left alone: runc then reports the real error.
func rewriteSpec(file string, underProcess bool, bounding uint64) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return err
	}
	holder := doc
	if underProcess {
		holder, _ = doc["process"].(map[string]any)
	}
	if holder == nil {
		return nil
	}
	caps, _ := holder["capabilities"].(map[string]any)
	if caps == nil {
		return nil
	}
	if !filterCapabilities(caps, bounding) {
		return nil
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return os.WriteFile(file, out, 0o644)
}

// filterCapabilities removes known capabilities that are not in bounding from each list in caps
// (bounding, effective, permitted, inheritable, ambient). It reports whether anything changed.
func filterCapabilities(caps map[string]any, bounding uint64) bool {
	changed := false
	for set, v := range caps {
		list, ok := v.([]any)
		if !ok {
			continue
		}
		kept := make([]any, 0, len(list))
		for _, c := range list {
			name, _ := c.(string)
			if bit, known := capabilityBits[name]; known && bounding&(1<<bit) == 0 {
				changed = true
				continue
			}
			kept = append(kept, c)
		}
		caps[set] = kept
	}
	return changed
}

type specFile struct {
	path         string
	underProcess bool
}

// globalFlagsWithValue are runc's global flags that containerd-shim passes as "--flag value".
var globalFlagsWithValue = map[string]bool{"--root": true, "--log": true, "--log-format": true, "--criu": true}

// specFiles finds the OCI spec files a runc command line will read.
func specFiles(args []string) []specFile {
	var out []specFile
	cmd := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if cmd == "" {
			if globalFlagsWithValue[a] {
				i++ // skip the value
				continue
			}
			if !strings.HasPrefix(a, "-") {
				cmd = a
			}
			continue
		}
		next := func() string {
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		}
		switch {
		case (cmd == "create" || cmd == "run") && (a == "--bundle" || a == "-b") && next() != "":
			out = append(out, specFile{next() + "/config.json", true})
		case (cmd == "create" || cmd == "run") && strings.HasPrefix(a, "--bundle="):
			out = append(out, specFile{strings.TrimPrefix(a, "--bundle=") + "/config.json", true})
		case cmd == "exec" && (a == "--process" || a == "-p") && next() != "":
			out = append(out, specFile{next(), false})
		case cmd == "exec" && strings.HasPrefix(a, "--process="):
			out = append(out, specFile{strings.TrimPrefix(a, "--process="), false})
		}
	}
	return out
}
