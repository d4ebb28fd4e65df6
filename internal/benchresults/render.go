package benchresults

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strconv"
)

// Keys of the results ConfigMap.
const (
	ResultsJSONKey   = "results.json"
	ResultsCSVKey    = "results.csv"
	ChartKey         = "chart.svg"
	ServerSamplesKey = "server-samples.json"
)

// JSON renders the results, indented.
func JSON(r Results) ([]byte, error) { return json.MarshalIndent(r, "", "  ") }

// CSVHeader are the columns of the CSV table, one row per step.
var CSVHeader = []string{"step", "concurrency", "target_rate", "pods", "requests", "errors", "dropped", "rps", "rps_min", "rps_max",
	"p50_ms", "p90_ms", "p99_ms", "client_cpu", "client_bound", "skew_ms",
	"server_cpu_cores", "server_rss_mib", "server_rps", "requests_per_cpu_second"}

// CSV renders the per-step table. Server columns are empty when the server was not measured in that step.
func CSV(r Results) ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if err := w.Write(CSVHeader); err != nil {
		return nil, err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, s := range r.Steps {
		row := []string{i(int64(s.Index)), i(int64(s.Concurrency)), i(int64(s.TargetRate)), i(int64(s.PodsReporting)),
			i(s.Requests), i(s.Errors), i(s.Dropped), f(s.RPS), "", "", f(s.P50Ms), f(s.P90Ms), f(s.P99Ms),
			f(s.ClientCPU), strconv.FormatBool(s.ClientBound), i(s.SkewMs), "", "", "", ""}
		if s.RPSSeconds > 0 {
			row[8], row[9] = f(s.RPSMin), f(s.RPSMax)
		}
		if s.ServerMeasured {
			row[16], row[17], row[18], row[19] = f(s.ServerCPUCores), f(round1(s.ServerRSSBytes/(1<<20))), f(s.ServerRPS), f(s.RequestsPerCPUSec)
		}
		if err := w.Write(row); err != nil {
			return nil, err
		}
	}
	w.Flush()
	return b.Bytes(), w.Error()
}
