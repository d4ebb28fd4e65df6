package benchresults

import (
	"math"
	"sort"
)

// The latency histogram every k6 pod records (the generated script computes the same bucket index in JavaScript:
// see internal/k6script). Buckets are log-spaced: bucket i holds latencies in
// [BucketBaseMs·2^(i/BucketsPerDoubling), BucketBaseMs·2^((i+1)/BucketsPerDoubling)) milliseconds, so every bucket
// is about 9% wide and a percentile read from it is within 9% of the exact one. Bucket 0 also holds everything
// faster than BucketBaseMs, the last bucket everything slower than its lower bound.
//
// Histograms from several pods merge by adding counts; percentiles come from the merged counts. Averaging each
// pod's percentile would be wrong (the p99 of a union is not the mean of the p99s).
const (
	BucketBaseMs       = 0.01 // 10 µs
	BucketsPerDoubling = 8
	NumBuckets         = 200 // upper bound of the last bucket: 0.01ms·2^25 ≈ 335 s
)

// Histogram maps a bucket index to a count.
type Histogram map[int]int64

// BucketOf returns the bucket a latency in milliseconds falls into.
func BucketOf(ms float64) int {
	if ms <= BucketBaseMs || math.IsNaN(ms) {
		return 0
	}
	i := int(math.Floor(math.Log2(ms/BucketBaseMs) * BucketsPerDoubling))
	if i >= NumBuckets {
		return NumBuckets - 1
	}
	return i
}

// BucketLower and BucketUpper bound bucket i in milliseconds.
func BucketLower(i int) float64 { return BucketBaseMs * math.Exp2(float64(i)/BucketsPerDoubling) }
func BucketUpper(i int) float64 { return BucketBaseMs * math.Exp2(float64(i+1)/BucketsPerDoubling) }

// Add adds other's counts into h.
func (h Histogram) Add(other Histogram) {
	for i, n := range other {
		h[i] += n
	}
}

// Count is the number of recorded latencies.
func (h Histogram) Count() int64 {
	var n int64
	for _, c := range h {
		n += c
	}
	return n
}

// Quantile returns the q-quantile (0 < q <= 1) in milliseconds: the bucket holding the ceil(q·count)-th latency,
// interpolated linearly inside it. An empty histogram gives 0.
func (h Histogram) Quantile(q float64) float64 {
	total := h.Count()
	if total == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(total)))
	if rank < 1 {
		rank = 1
	}
	idx := make([]int, 0, len(h))
	for i, c := range h {
		if c > 0 {
			idx = append(idx, i)
		}
	}
	sort.Ints(idx)
	var seen int64
	for _, i := range idx {
		c := h[i]
		if seen+c >= rank {
			lo, hi := BucketLower(i), BucketUpper(i)
			if i == 0 {
				lo = 0
			}
			return lo + (hi-lo)*float64(rank-seen)/float64(c)
		}
		seen += c
	}
	return BucketUpper(idx[len(idx)-1])
}
