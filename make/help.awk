# make/help.awk — `make help`: every target with a `## description`, under the `##@ Group` line above it, and the
# targets it runs first.
#
# Input: the make files in include order (Makefile first). A rule line is `name: prerequisites ## description`;
# a line `name: more` without a description adds prerequisites (k6.mk once added k6-build to go-test that way,
# out of sight). Prerequisites are gathered from every rule line of a target, in every file, and printed after
# its description as "first: a b", so none is hidden. Words that are make variables ($(HELM), tool binaries
# under ./bin) or conditional ($(if ...)) are left out: the description names those when they matter.
# Variable assignments (`X := a:b`, `X ?= ...`) never match: their name is followed by a space or `?`, not `:`.

function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }

/^##@ / { n++; kind[n] = "group"; text[n] = substr($0, 5); next }

/^[a-zA-Z0-9_.-]+:([^=]|$)/ {
	line = $0
	target = substr(line, 1, index(line, ":") - 1)
	rest = substr(line, index(line, ":") + 1)
	desc = ""
	if ((i = index(rest, "## ")) > 0) { desc = trim(substr(rest, i + 3)); rest = substr(rest, 1, i - 1) }
	words = split(rest, w, /[ \t]+/)
	for (j = 1; j <= words; j++) {
		if (w[j] !~ /^[a-zA-Z0-9_.-]+$/) continue
		if (index(" " deps[target] " ", " " w[j] " ") == 0) deps[target] = trim(deps[target] " " w[j])
	}
	if (desc != "" && !(target in described)) { described[target] = 1; n++; kind[n] = "target"; text[n] = target; about[target] = desc }
	next
}

END {
	for (k = 1; k <= n; k++) {
		if (kind[k] == "group") { printf "\n%s\n", text[k]; continue }
		t = text[k]
		printf "  %-22s %s%s\n", t, about[t], (deps[t] != "" ? "  [first: " deps[t] "]" : "")
	}
}
