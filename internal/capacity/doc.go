// Package capacity holds the pure parts of capacity measurement and the performance gate
// (docs/design/capacity.md): which pod template a figure belongs to (Identify), what a finished Benchmark says one
// pod serves (Compute), and whether a candidate template may replace the serving one (Decide). Nothing here reads
// the cluster or a clock.
package capacity
