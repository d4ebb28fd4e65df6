package benchresults

import (
	"math"
	"math/rand"
	"sort"
	"testing"
)

func TestBucketBounds(t *testing.T) {
	for _, ms := range []float64{0.0101, 0.05, 0.3, 1, 7.5, 120, 4000} {
		i := BucketOf(ms)
		if ms < BucketLower(i) || ms >= BucketUpper(i) {
			t.Errorf("%.4fms in bucket %d [%.4f, %.4f)", ms, i, BucketLower(i), BucketUpper(i))
		}
	}
	if BucketOf(0) != 0 || BucketOf(1e9) != NumBuckets-1 || BucketOf(math.NaN()) != 0 {
		t.Fatal("clamping")
	}
}

// Quantiles from the histogram stay within one bucket width (~9%) of the exact ones.
func TestQuantileAccuracy(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var xs []float64
	h := Histogram{}
	for i := 0; i < 100000; i++ {
		v := math.Exp(rng.NormFloat64()*0.8) * 0.5 // log-normal around 0.5ms
		xs = append(xs, v)
		h[BucketOf(v)]++
	}
	sort.Float64s(xs)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		exact := xs[int(math.Ceil(q*float64(len(xs))))-1]
		if got := h.Quantile(q); math.Abs(got-exact)/exact > 0.091 {
			t.Errorf("q%.3f: %.4f vs exact %.4f", q, got, exact)
		}
	}
	if (Histogram{}).Quantile(0.99) != 0 {
		t.Fatal("empty histogram")
	}
}
