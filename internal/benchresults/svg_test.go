package benchresults

import (
	"bytes"
	"encoding/xml"
	"math"
	"os"
	"strconv"
	"testing"
)

// syntheticSweep is a 20-step sweep shaped like a real one: RPS rises then flattens when k6 runs out of CPU.
func syntheticSweep() Results {
	r := Results{Workload: "sweep", Target: "http://site.default.svc:80", KeepAlive: true, Parallelism: 2, PeakStep: -1, MeasuredPeakStep: -1}
	for i := 0; i < 20; i++ {
		c := int32(10 + 10*i)
		cpu := math.Min(0.99, 0.1+float64(c)/200)
		st := Step{Index: i, Concurrency: c, PodsReporting: 2, Requests: 1000, RPS: math.Round(9000 * (1 - math.Exp(-float64(c)/60))),
			P99Ms: 0.2 + float64(c)*0.02, ClientCPU: cpu, ClientBound: cpu >= ClientBoundFraction,
			ServerMeasured: i != 3, ServerCPUCores: 0.05 + float64(c)/400}
		st.RPSMin, st.RPSMax, st.RPSSeconds = st.RPS*0.93, st.RPS*1.04, 28
		if st.ClientBound {
			r.ClientBoundSteps++
		} else {
			r.PeakStep = i
		}
		r.MeasuredPeakStep = i
		r.Steps = append(r.Steps, st)
	}
	return r
}

type svgDoc struct {
	Circles []struct {
		Class       string `xml:"class,attr"`
		Step        int    `xml:"data-step,attr"`
		X           string `xml:"data-x,attr"`
		Value       string `xml:"data-value,attr"`
		ClientBound bool   `xml:"data-client-bound,attr"`
	} `xml:"circle"`
	Rects []struct {
		Class string `xml:"class,attr"`
		Step  int    `xml:"data-step,attr"`
	} `xml:"rect"`
	Polylines []struct {
		ID string `xml:"id,attr"`
	} `xml:"polyline"`
	Lines []struct {
		Class string `xml:"class,attr"`
		Step  int    `xml:"data-step,attr"`
		Min   string `xml:"data-min,attr"`
		Max   string `xml:"data-max,attr"`
	} `xml:"line"`
}

func TestSVGSeriesParseBack(t *testing.T) {
	r := syntheticSweep()
	svg := SVG(r, "Benchmark demo: site")
	if out := os.Getenv("BENCH_CHART_OUT"); out != "" { // to look at it: BENCH_CHART_OUT=/tmp/chart.svg
		_ = os.WriteFile(out, svg, 0o644)
	}
	var doc svgDoc
	if err := xml.NewDecoder(bytes.NewReader(svg)).Decode(&doc); err != nil {
		t.Fatalf("not well-formed XML: %v", err)
	}
	series := map[string]map[int]float64{}
	bound := map[int]bool{}
	for _, c := range doc.Circles {
		if series[c.Class] == nil {
			series[c.Class] = map[int]float64{}
		}
		v, err := strconv.ParseFloat(c.Value, 64)
		if err != nil {
			t.Fatal(err)
		}
		x, _ := strconv.ParseFloat(c.X, 64)
		if x != float64(r.Steps[c.Step].Concurrency) {
			t.Errorf("%s step %d at x=%v", c.Class, c.Step, x)
		}
		series[c.Class][c.Step] = v
		bound[c.Step] = c.ClientBound
	}
	for _, st := range r.Steps {
		if series["rps"][st.Index] != st.RPS || series["p99"][st.Index] != st.P99Ms || series["client-cpu"][st.Index] != st.ClientCPU {
			t.Errorf("step %d: rps %v p99 %v client %v", st.Index, series["rps"][st.Index], series["p99"][st.Index], series["client-cpu"][st.Index])
		}
		got, ok := series["server-cpu"][st.Index]
		if ok != st.ServerMeasured || (ok && got != st.ServerCPUCores) {
			t.Errorf("step %d: server cpu %v (measured %v)", st.Index, got, st.ServerMeasured)
		}
		if bound[st.Index] != st.ClientBound {
			t.Errorf("step %d: client-bound mark %v", st.Index, bound[st.Index])
		}
	}
	bands := 0
	for _, rc := range doc.Rects {
		if rc.Class == "client-bound" {
			bands++
			if !r.Steps[rc.Step].ClientBound {
				t.Errorf("band on step %d", rc.Step)
			}
		}
	}
	if bands != 2*r.ClientBoundSteps || r.ClientBoundSteps == 0 {
		t.Fatalf("%d bands for %d client-bound steps", bands, r.ClientBoundSteps)
	}
	ranges := 0
	for _, l := range doc.Lines {
		if l.Class == "rps-range" {
			ranges++
			st := r.Steps[l.Step]
			if l.Min != strconv.FormatFloat(st.RPSMin, 'g', -1, 64) || l.Max != strconv.FormatFloat(st.RPSMax, 'g', -1, 64) {
				t.Errorf("step %d: range %s..%s, want %v..%v", l.Step, l.Min, l.Max, st.RPSMin, st.RPSMax)
			}
		}
	}
	if ranges != len(r.Steps) {
		t.Fatalf("%d min/max bars for %d steps", ranges, len(r.Steps))
	}
	if len(doc.Polylines) != 4 {
		t.Fatalf("%d lines, want rps, p99, server-cpu, client-cpu", len(doc.Polylines))
	}
}

func TestSVGEscapesTitleAndHandlesOneStep(t *testing.T) {
	r := Results{Workload: "arrivalRate", Parallelism: 1, PeakStep: 0, MeasuredPeakStep: 0,
		Steps: []Step{{Index: 0, TargetRate: 500, PodsReporting: 1, RPS: 499.8, P99Ms: 1.5}}}
	var doc svgDoc
	if err := xml.Unmarshal(SVG(r, `a <b> & "c"`), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Circles) != 3 { // rps, p99, client-cpu; no server sample
		t.Fatalf("%d points", len(doc.Circles))
	}
}

func TestCSV(t *testing.T) {
	r := syntheticSweep()
	b, err := CSV(r)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) != 21 || !bytes.HasPrefix(lines[0], []byte("step,concurrency,")) {
		t.Fatalf("%s", b)
	}
	if !bytes.Contains(lines[4], []byte(",,,,")) && !bytes.HasSuffix(lines[4], []byte(",,,")) {
		t.Fatalf("step 3 has no server sample, its server columns must be empty: %s", lines[4])
	}
}
