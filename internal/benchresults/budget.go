package benchresults

import (
	"encoding/json"
	"fmt"
)

// ConfigMapBudget is how many bytes of data the results ConfigMap may hold. The API server refuses a ConfigMap
// whose data passes 1 MiB (keys and values counted); the rest is left for the keys' overhead and a margin.
const ConfigMapBudget = 1000 << 10

// maxWarnings is how many warnings results.json keeps once it has to be made smaller.
const maxWarnings = 20

// Files are the results ConfigMap's data: results.json, results.csv, chart.svg and the recorded
// server-samples.json, and what had to be left out to stay under the budget.
type Files struct {
	Data map[string]string
	// Dropped says, one entry per measure taken, what was left out or compacted; empty when everything fit.
	Dropped []string
}

// Render renders the results for the results ConfigMap within budget bytes. When the whole rendering does not
// fit, it gives up, in this order, what is least needed and can be had elsewhere: the indentation of results.json,
// chart.svg, the raw server samples (results.json keeps each step's server columns), results.csv (the same table
// as results.json), warnings past the first maxWarnings, and last the steps at the end of results.json that do not
// fit. results.json is always there: it is what `make bench-results` and people read.
func Render(r Results, title, serverSamples string, budget int) (Files, error) {
	js, err := JSON(r)
	if err != nil {
		return Files{}, err
	}
	csv, err := CSV(r)
	if err != nil {
		return Files{}, err
	}
	f := Files{Data: map[string]string{ResultsJSONKey: string(js), ResultsCSVKey: string(csv), ChartKey: string(SVG(r, title))}}
	if serverSamples != "" {
		f.Data[ServerSamplesKey] = serverSamples
	}
	if f.Size() <= budget {
		return f, nil
	}

	compact, err := json.Marshal(r)
	if err != nil {
		return Files{}, err
	}
	f.Data[ResultsJSONKey] = string(compact)
	f.Dropped = append(f.Dropped, fmt.Sprintf("%s: indentation (%d KiB -> %d KiB)", ResultsJSONKey, len(js)>>10, len(compact)>>10))
	for _, key := range []string{ChartKey, ServerSamplesKey, ResultsCSVKey} {
		if f.Size() <= budget {
			return f, nil
		}
		if v, ok := f.Data[key]; ok {
			delete(f.Data, key)
			f.Dropped = append(f.Dropped, fmt.Sprintf("%s (%d KiB)", key, len(v)>>10))
		}
	}
	if f.Size() <= budget {
		return f, nil
	}
	if n := len(r.Warnings); n > maxWarnings {
		r.Warnings = append(r.Warnings[:maxWarnings:maxWarnings], fmt.Sprintf("... and %d more warning(s), dropped to fit the results ConfigMap", n-maxWarnings))
		f.Dropped = append(f.Dropped, fmt.Sprintf("%s: %d of %d warnings", ResultsJSONKey, n-maxWarnings, n))
		if err := f.setJSON(r); err != nil {
			return Files{}, err
		}
		if f.Size() <= budget {
			return f, nil
		}
	}
	return f, f.dropTrailingSteps(r, budget)
}

// dropTrailingSteps keeps the first steps of results.json that fit; the totals still describe the whole run.
func (f *Files) dropTrailingSteps(r Results, budget int) error {
	steps := r.Steps
	room := budget - (f.Size() - len(f.Data[ResultsJSONKey]))
	r.Steps = nil
	empty, err := json.Marshal(r)
	if err != nil {
		return err
	}
	used := len(empty) + 200 // and the warning that says what was dropped
	keep := 0
	for ; keep < len(steps); keep++ {
		raw, err := json.Marshal(steps[keep])
		if err != nil {
			return err
		}
		if used+len(raw)+1 > room { // +1: the comma
			break
		}
		used += len(raw) + 1
	}
	r.Steps = steps[:keep]
	r.Warnings = append(r.Warnings, fmt.Sprintf("steps %d..%d dropped to fit the results ConfigMap", keep, len(steps)-1))
	f.Dropped = append(f.Dropped, fmt.Sprintf("%s: steps %d..%d of %d", ResultsJSONKey, keep, len(steps)-1, len(steps)))
	return f.setJSON(r)
}

func (f *Files) setJSON(r Results) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f.Data[ResultsJSONKey] = string(raw)
	return nil
}

// Size is what the API server counts against its 1 MiB limit: every key and value.
func (f *Files) Size() int {
	n := 0
	for k, v := range f.Data {
		n += len(k) + len(v)
	}
	return n
}
