package benchresults

import "math"

// ClientBoundFraction: a step is client-bound when a k6 pod used at least this share of its CPU limit during the
// step's load window. Above it, k6 itself is the bottleneck and the step measures the client, not the server.
const ClientBoundFraction = 0.90

// CPUSample is a cumulative CPU reading of the k6 process taken by the runner (about once a second).
type CPUSample struct {
	// UnixMs is when it was read.
	UnixMs int64 `json:"t"`
	// Seconds of CPU used by the process so far (user + system).
	Seconds float64 `json:"cpu"`
	// ThrottledSeconds of the container's cgroup so far (0 when unreadable).
	ThrottledSeconds float64 `json:"thr"`
}

// WindowUse computes the CPU used between startMs and endMs from cumulative samples, interpolating linearly
// between the samples that surround each edge (before the first sample the process had used nothing: it did
// not exist yet). limitCores is the CPU the pod may use.
func WindowUse(samples []CPUSample, startMs, endMs int64, limitCores float64) CPUUse {
	use := CPUUse{LimitCores: limitCores}
	if endMs <= startMs || len(samples) == 0 || limitCores <= 0 {
		return use
	}
	use.WallSeconds = float64(endMs-startMs) / 1000
	cpuAt := func(t int64) (float64, float64) { return interpolate(samples, t) }
	c0, t0 := cpuAt(startMs)
	c1, t1 := cpuAt(endMs)
	use.Seconds = math.Round((c1-c0)*1e4) / 1e4
	use.ThrottledSeconds = math.Round((t1-t0)*1e4) / 1e4
	use.Fraction = round3(use.Seconds / (use.WallSeconds * limitCores))
	for s := startMs; s+1000 <= endMs; s += 1000 {
		a, _ := cpuAt(s)
		b, _ := cpuAt(s + 1000)
		use.Series = append(use.Series, round3((b-a)/limitCores))
	}
	return use
}

func interpolate(samples []CPUSample, t int64) (cpu, throttled float64) {
	if t <= samples[0].UnixMs {
		// Before the first reading: scale down from zero at the first reading is unknowable; the process
		// had used at most samples[0].Seconds, take it as the value (the conservative choice: less CPU in window).
		return samples[0].Seconds, samples[0].ThrottledSeconds
	}
	for i := 1; i < len(samples); i++ {
		a, b := samples[i-1], samples[i]
		if t <= b.UnixMs {
			if b.UnixMs == a.UnixMs {
				return b.Seconds, b.ThrottledSeconds
			}
			f := float64(t-a.UnixMs) / float64(b.UnixMs-a.UnixMs)
			return a.Seconds + f*(b.Seconds-a.Seconds), a.ThrottledSeconds + f*(b.ThrottledSeconds-a.ThrottledSeconds)
		}
	}
	last := samples[len(samples)-1]
	return last.Seconds, last.ThrottledSeconds
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
