package gitopshealth

import (
	"strings"
	"testing"
)

// ArgoHealth is as strict as Argo CD: a script that reaches for a library Argo does not open fails, and so does one
// that returns what Argo would show as Unknown. Otherwise a check could pass here and fail in Argo.
func TestArgoHealthIsAsStrictAsArgo(t *testing.T) {
	obj := map[string]any{"metadata": map[string]any{"generation": int64(2)}, "status": map[string]any{"observedGeneration": int64(2)}}
	for name, tc := range map[string]struct{ script, err string }{
		"string library": {`return {status = "Healthy", message = string.format("%d", 1)}`, "with key 'format'"},
		"math library":   {`return {status = "Healthy", message = tostring(math.floor(1.5))}`, "with key 'floor'"},
		"io library":     {`io.write("x") return {status = "Healthy"}`, "with key 'write'"},
		// Argo opens a reduced os (time, date, clock); ArgoHealth none, so the checks cannot come to depend on it.
		"os library":     {`return {status = "Healthy", message = tostring(os.time())}`, "with key 'time'"},
		"unknown status": {`return {status = "Fine"}`, `status "Fine"`},
		"not a table":    {`return "Healthy"`, "not a table"},
		"endless":        {`while true do end`, "context deadline exceeded"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ArgoHealth(tc.script, obj); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.err)
			}
		})
	}
	// What Argo does offer: base functions (ipairs, tostring), table, numbers as numbers.
	h, err := ArgoHealth(`local n = 0
for _, v in ipairs({1, 2}) do n = n + v end
table.insert({}, 1)
if obj.status.observedGeneration < obj.metadata.generation then return {status = "Progressing"} end
return {status = "Healthy", message = tostring(n + obj.metadata.generation)}`, obj)
	if err != nil || h.Status != "Healthy" || h.Message != "5" {
		t.Fatalf("health %+v, error %v", h, err)
	}
}
