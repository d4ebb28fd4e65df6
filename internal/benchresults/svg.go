package benchresults

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"strings"
)

// Chart geometry (SVG user units = CSS pixels).
const (
	chartW      = 960
	chartH      = 670
	plotLeft    = 80
	plotRight   = chartW - 90
	mainTop     = 70
	mainBottom  = 360
	cpuTop      = 430
	cpuBottom   = 560
	colorRPS    = "#1f77b4"
	colorP99    = "#d62728"
	colorServer = "#2ca02c"
	colorClient = "#7f7f7f"
	colorBound  = "#fde0dd"
)

// SVG draws the run: requests/s (left axis) and p99 latency (right axis) against concurrency (or target rate), and
// below it, on the same x axis, the server's CPU (cores) and the k6 pods' CPU (share of their limit). Client-bound
// steps are shaded and their points hollow, so nobody reads them as server capacity. Every point carries data-*
// attributes with its exact values, so tests (and people) can read the numbers back.
func SVG(r Results, title string) []byte {
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="DejaVu Sans, Arial, sans-serif" font-size="12">`+"\n", chartW, chartH, chartW, chartH)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="%d" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", plotLeft, esc(title))
	p(`<text x="%d" y="44" fill="#444">%s</text>`+"\n", plotLeft, esc(subtitle(r)))

	xs := make([]float64, len(r.Steps))
	xLabel := "concurrency (VUs, all k6 pods)"
	for i, s := range r.Steps {
		xs[i] = float64(s.Concurrency)
		if s.TargetRate > 0 {
			xs[i] = float64(s.TargetRate)
			xLabel = "target rate (requests/s)"
		}
	}
	xmin, xmax := 0.0, 1.0
	if len(xs) > 0 {
		xmin, xmax = xs[0], xs[len(xs)-1]
	}
	if xmax <= xmin { // a single step: centre it
		xmin, xmax = xmin-1, xmax+1
		if xmin < 0 {
			xmin = 0
		}
	}
	xAt := func(v float64) float64 { return plotLeft + (v-xmin)/(xmax-xmin)*(plotRight-plotLeft) }
	maxOf := func(f func(Step) float64) float64 {
		m := 0.0
		for _, s := range r.Steps {
			m = math.Max(m, f(s))
		}
		return m
	}
	rpsMax := niceCeil(maxOf(func(s Step) float64 { return math.Max(s.RPS, s.RPSMax) }))
	p99Max := niceCeil(maxOf(func(s Step) float64 { return s.P99Ms }))
	cpuMax := niceCeil(math.Max(1, maxOf(func(s Step) float64 { return s.ServerCPUCores })))
	yMain := func(v, top float64) float64 { return mainBottom - v/top*(mainBottom-mainTop) }
	yCPU := func(v, top float64) float64 { return cpuBottom - v/top*(cpuBottom-cpuTop) }

	// Client-bound bands, behind everything.
	half := (plotRight - plotLeft) / float64(2*max(len(r.Steps)-1, 1)) // adjacent bands touch
	for i, s := range r.Steps {
		if s.ClientBound {
			x := xAt(xs[i])
			x0, x1 := math.Max(plotLeft, x-half), math.Min(plotRight, x+half)
			for _, band := range [][2]float64{{mainTop, mainBottom}, {cpuTop, cpuBottom}} {
				p(`<rect class="client-bound" data-step="%d" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n",
					s.Index, x0, band[0], x1-x0, band[1]-band[0], colorBound)
			}
		}
	}

	// Grid and axes of the main panel.
	for _, t := range ticks(rpsMax) {
		y := yMain(t, rpsMax)
		p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/>`+"\n", plotLeft, y, plotRight, y)
		p(`<text x="%d" y="%.1f" text-anchor="end" fill="%s">%s</text>`+"\n", plotLeft-6, y+4, colorRPS, compact(t))
	}
	for _, t := range ticks(p99Max) {
		label := FormatMs(t)
		if t == 0 {
			label = "0"
		}
		p(`<text x="%d" y="%.1f" fill="%s">%s</text>`+"\n", plotRight+6, yMain(t, p99Max)+4, colorP99, label)
	}
	for _, t := range ticks(cpuMax) {
		y := yCPU(t, cpuMax)
		p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/>`+"\n", plotLeft, y, plotRight, y)
		p(`<text x="%d" y="%.1f" text-anchor="end" fill="%s">%s</text>`+"\n", plotLeft-6, y+4, colorServer, compact(t))
	}
	for _, frac := range []float64{0, 0.5, 1} {
		p(`<text x="%d" y="%.1f" fill="%s">%.0f%%</text>`+"\n", plotRight+6, yCPU(frac, 1)+4, colorClient, frac*100)
	}
	p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-dasharray="2,3"/>`+"\n", plotLeft, yCPU(ClientBoundFraction, 1), plotRight, yCPU(ClientBoundFraction, 1), colorClient)
	for _, band := range [][2]float64{{mainTop, mainBottom}, {cpuTop, cpuBottom}} {
		p(`<rect x="%d" y="%.0f" width="%d" height="%.0f" fill="none" stroke="#333"/>`+"\n", plotLeft, band[0], plotRight-plotLeft, band[1]-band[0])
	}
	for _, t := range xTicks(xmin, xmax, xs) {
		x := xAt(t)
		p(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#333"/>`+"\n", x, mainBottom, x, mainBottom+4)
		p(`<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x, mainBottom+17, compact(t))
		p(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#333"/>`+"\n", x, cpuBottom, x, cpuBottom+4)
		p(`<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x, cpuBottom+17, compact(t))
	}
	p(`<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", (plotLeft+plotRight)/2, mainBottom+34, esc(xLabel))
	p(`<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", (plotLeft+plotRight)/2, cpuBottom+34, esc(xLabel))
	p(`<text transform="translate(18 %d) rotate(-90)" text-anchor="middle" fill="%s">requests/s</text>`+"\n", (mainTop+mainBottom)/2, colorRPS)
	p(`<text transform="translate(%d %d) rotate(90)" text-anchor="middle" fill="%s">p99 latency</text>`+"\n", chartW-14, (mainTop+mainBottom)/2, colorP99)
	p(`<text transform="translate(18 %d) rotate(-90)" text-anchor="middle" fill="%s">server CPU (cores)</text>`+"\n", (cpuTop+cpuBottom)/2, colorServer)
	p(`<text transform="translate(%d %d) rotate(90)" text-anchor="middle" fill="%s">k6 CPU</text>`+"\n", chartW-14, (cpuTop+cpuBottom)/2, colorClient)

	// Each step's slowest and fastest second, as a whisker behind the requests/s point.
	for i, s := range r.Steps {
		if s.RPSSeconds > 0 {
			x := xAt(xs[i])
			p(`<line class="rps-range" data-step="%d" data-min="%g" data-max="%g" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="6" stroke-opacity="0.3" stroke-linecap="round"/>`+"\n",
				s.Index, s.RPSMin, s.RPSMax, x, yMain(s.RPSMin, rpsMax), x, yMain(s.RPSMax, rpsMax), colorRPS)
		}
	}

	// Series.
	series := func(id, color string, dash string, val func(Step) (float64, bool), y func(float64) float64, label func(float64) string) {
		var pts []string
		for i, s := range r.Steps {
			if v, ok := val(s); ok {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", xAt(xs[i]), y(v)))
			}
		}
		if len(pts) > 1 {
			p(`<polyline id="%s" fill="none" stroke="%s" stroke-width="2" %s points="%s"/>`+"\n", id, color, dash, strings.Join(pts, " "))
		}
		for i, s := range r.Steps {
			v, ok := val(s)
			if !ok {
				continue
			}
			fill := color
			if s.ClientBound {
				fill = "white"
			}
			p(`<circle class="%s" data-step="%d" data-x="%g" data-value="%g" data-client-bound="%t" cx="%.1f" cy="%.1f" r="4" fill="%s" stroke="%s" stroke-width="2"><title>%s at %s: %s</title></circle>`+"\n",
				id, s.Index, xs[i], v, s.ClientBound, xAt(xs[i]), y(v), fill, color, id, compact(xs[i]), esc(label(v)))
		}
	}
	series("rps", colorRPS, "", func(s Step) (float64, bool) { return s.RPS, s.PodsReporting > 0 },
		func(v float64) float64 { return yMain(v, rpsMax) }, func(v float64) string { return fmt.Sprintf("%.0f req/s", v) })
	series("p99", colorP99, `stroke-dasharray="6,3"`, func(s Step) (float64, bool) { return s.P99Ms, s.PodsReporting > 0 },
		func(v float64) float64 { return yMain(v, p99Max) }, FormatMs)
	series("server-cpu", colorServer, "", func(s Step) (float64, bool) { return s.ServerCPUCores, s.ServerMeasured },
		func(v float64) float64 { return yCPU(v, cpuMax) }, func(v float64) string { return fmt.Sprintf("%.2f cores", v) })
	series("client-cpu", colorClient, `stroke-dasharray="6,3"`, func(s Step) (float64, bool) { return s.ClientCPU, s.PodsReporting > 0 },
		func(v float64) float64 { return yCPU(math.Min(v, 1), 1) }, func(v float64) string { return fmt.Sprintf("%.0f%% of limit", v*100) })

	measured := false
	for _, s := range r.Steps {
		measured = measured || s.ServerMeasured
	}
	if !measured {
		p(`<text x="%d" y="%d" text-anchor="middle" fill="%s">server not sampled (a URL target, or no scrape inside a step)</text>`+"\n",
			(plotLeft+plotRight)/2, (cpuTop+cpuBottom)/2, colorServer)
	}

	// Legend.
	legend := []struct{ color, text, kind string }{
		{colorRPS, "requests/s (left; bar: slowest–fastest second)", "line"}, {colorP99, "p99 latency (right)", "dash"},
		{colorServer, "server CPU, cores (bottom left)", "line"}, {colorClient, "k6 CPU, share of limit (bottom right)", "dash"},
		{colorBound, "client-bound step: k6 CPU ≥ 90%, not server capacity", "band"},
	}
	lx, ly := plotLeft, chartH-36
	for _, l := range legend {
		w := 22 + 7*len([]rune(l.text)) + 14
		if lx+w > chartW {
			lx, ly = plotLeft, ly+20
		}
		switch l.kind {
		case "band":
			p(`<rect x="%d" y="%d" width="18" height="10" fill="%s" stroke="#c99"/>`+"\n", lx, ly-9, l.color)
		case "dash":
			p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2" stroke-dasharray="6,3"/>`+"\n", lx, ly-4, lx+18, ly-4, l.color)
		default:
			p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", lx, ly-4, lx+18, ly-4, l.color)
		}
		p(`<text x="%d" y="%d">%s</text>`+"\n", lx+22, ly, esc(l.text))
		lx += w
	}
	p("</svg>\n")
	return b.Bytes()
}

func subtitle(r Results) string {
	ka := "keep-alive on"
	if !r.KeepAlive {
		ka = "keep-alive off"
	}
	s := fmt.Sprintf("%s, %s, %d k6 pod(s). Peak: ", r.Workload, ka, r.Parallelism)
	switch {
	case r.PeakStep >= 0:
		st := r.Steps[r.PeakStep]
		s += fmt.Sprintf("%.0f req/s, p99 %s", st.RPS, FormatMs(st.P99Ms))
	case r.MeasuredPeakStep >= 0:
		s += fmt.Sprintf(">= %.0f req/s, every step client-bound: the server was not the limit", r.Steps[r.MeasuredPeakStep].RPS)
	default:
		s += "no result"
	}
	return s
}

// niceCeil rounds up to 1, 2 or 5 times a power of ten (at least 1e-3).
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*e {
			return m * e
		}
	}
	return 10 * e
}

// ticks returns 0..top in 4 or 5 even steps.
func ticks(top float64) []float64 {
	n := 5.0
	if d := top / math.Pow(10, math.Floor(math.Log10(top))); d == 2 || d == 1 {
		n = 4
	}
	out := []float64{}
	for i := 0.0; i <= n; i++ {
		out = append(out, top*i/n)
	}
	return out
}

// xTicks labels every step when there are few, else about eight evenly spaced round values.
func xTicks(lo, hi float64, xs []float64) []float64 {
	if len(xs) <= 12 {
		return xs
	}
	step := niceCeil((hi - lo) / 8)
	var out []float64
	for v := math.Ceil(lo/step) * step; v <= hi+1e-9; v += step {
		out = append(out, v)
	}
	return out
}

// compact renders a number briefly: 950, 1.5k, 12k, 0.25.
func compact(v float64) string {
	switch {
	case v >= 10000:
		return fmt.Sprintf("%.0fk", v/1000)
	case v >= 1000:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v/1000), ".0") + "k"
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	default:
		return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
	}
}

func esc(s string) string { return html.EscapeString(s) }
