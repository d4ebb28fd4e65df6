//go:build monitoring

package monitoring

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// The vector selectors of a PromQL expression, found by a small scanner instead of Prometheus' parser (whose Go
// module would pull Prometheus' whole dependency tree into go.mod for one test). It knows PromQL's lexical
// shapes, not its grammar, which is enough to list selectors: every identifier is a function or aggregation
// (followed by "(", or a known aggregation followed by by/without), a keyword, a label list of
// by/without/on/ignoring/group_left/group_right, or else a metric name, whose {matchers} are kept with it. An
// identifier followed by "(" that is not a known function is an error, so a misspelt function cannot hide a
// selector from the checks.

// promqlFunctions are the functions and aggregations the chart's queries may call (extend as they grow).
var promqlFunctions = []string{
	"abs", "absent", "avg", "avg_over_time", "bottomk", "ceil", "changes", "clamp_min", "clamp_max", "count",
	"count_over_time", "delta", "deriv", "floor", "group", "histogram_quantile", "idelta", "increase", "irate",
	"label_join", "label_replace", "max", "max_over_time", "min", "min_over_time", "quantile", "rate", "round",
	"scalar", "sort", "sort_desc", "stddev", "sum", "sum_over_time", "time", "topk", "vector",
}

// aggregations may be followed by by/without before their parentheses.
var aggregations = []string{"avg", "bottomk", "count", "group", "max", "min", "quantile", "stddev", "sum", "topk"}

// labelListKeywords are followed by a parenthesised list of label names, which are not selectors.
var labelListKeywords = []string{"by", "without", "on", "ignoring", "group_left", "group_right"}

// operatorKeywords are binary operators and modifiers spelt as words.
var operatorKeywords = []string{"and", "or", "unless", "bool", "offset"}

func isIdentStart(r rune) bool { return r == '_' || r == ':' || unicode.IsLetter(r) }
func isIdentPart(r rune) bool  { return isIdentStart(r) || unicode.IsDigit(r) }

// selectors lists expr's vector selectors as written (name and matchers, without a range), in order, repeated ones once.
func selectors(expr string) ([]string, error) {
	rs := []rune(expr)
	var out []string
	skipSpace := func(i int) int {
		for i < len(rs) && unicode.IsSpace(rs[i]) {
			i++
		}
		return i
	}
	// closing returns the index just past the bracket that closes the one at i, skipping quoted strings.
	closing := func(i int) (int, error) {
		open, shut := rs[i], map[rune]rune{'(': ')', '{': '}', '[': ']'}[rs[i]]
		depth := 0
		for j := i; j < len(rs); j++ {
			switch rs[j] {
			case '"', '\'', '`':
				q := rs[j]
				for j++; j < len(rs) && rs[j] != q; j++ {
					if rs[j] == '\\' && q != '`' {
						j++
					}
				}
			case open:
				depth++
			case shut:
				if depth--; depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, fmt.Errorf("unbalanced %c at %d in %q", open, i, expr)
	}
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case r == '"' || r == '\'' || r == '`': // a string argument (label_join's): skip it whole
			q := rs[i]
			for i++; i < len(rs) && rs[i] != q; i++ {
				if rs[i] == '\\' && q != '`' {
					i++
				}
			}
			i++
		case r == '[': // a range or subquery duration
			j, err := closing(i)
			if err != nil {
				return nil, err
			}
			i = j
		case r == '{': // a selector without a metric name
			j, err := closing(i)
			if err != nil {
				return nil, err
			}
			out = appendOnce(out, string(rs[i:j]))
			i = j
		case unicode.IsDigit(r) || (r == '.' && i+1 < len(rs) && unicode.IsDigit(rs[i+1])): // a number (1e3, 0.99, 5m)
			for i < len(rs) && (isIdentPart(rs[i]) || rs[i] == '.') {
				i++
			}
		case isIdentStart(r):
			j := i
			for j < len(rs) && isIdentPart(rs[j]) {
				j++
			}
			word := string(rs[i:j])
			next := skipSpace(j)
			switch {
			case slices.Contains(labelListKeywords, word):
				if next < len(rs) && rs[next] == '(' {
					k, err := closing(next)
					if err != nil {
						return nil, err
					}
					j = k
				}
			case slices.Contains(operatorKeywords, word):
			case slices.Contains(aggregations, word):
			case next < len(rs) && rs[next] == '(':
				if !slices.Contains(promqlFunctions, word) {
					return nil, fmt.Errorf("unknown function %s in %q", word, expr)
				}
			case next < len(rs) && rs[next] == '{':
				k, err := closing(next)
				if err != nil {
					return nil, err
				}
				out = appendOnce(out, word+string(rs[next:k]))
				j = k
			default:
				out = appendOnce(out, word)
			}
			i = j
		default:
			i++
		}
	}
	return out, nil
}

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// metricName is a selector's metric name ("" for a selector of matchers only).
func metricName(selector string) string {
	name, _, _ := strings.Cut(selector, "{")
	return name
}

func TestSelectorsOfTheChartsShapes(t *testing.T) {
	for _, c := range []struct {
		expr string
		want []string
	}{
		{`sum by (namespace, job) (rate(a_total{code=~"5.."}[5m])) / sum by (namespace, job) (rate(a_total[5m])) > 0.05`,
			[]string{`a_total{code=~"5.."}`, "a_total"}},
		{`histogram_quantile(0.99, sum by (job, le) (rate(d_bucket[5m]))) > on (namespace, job) max by (namespace, job) (label_join(obj{job="x/y"}, "job", "/", "namespace", "staticsite")) and on (namespace, job) sum by (job) (rate(d_count[1m])) > 1`,
			[]string{"d_bucket", `obj{job="x/y"}`, "d_count"}},
		{`not_after - time() < 14 * 86400`, []string{"not_after"}},
		{`(m + t) / (b > 0) > 0.95 and disk > 0`, []string{"m", "t", "b", "disk"}},
		{`topk(10, sum by (job, site) (rate(p{namespace=~"$namespace", s="a}b"}[1m])))`, []string{`p{namespace=~"$namespace", s="a}b"}`}},
		{`max without (pod) (x) unless ignoring (le) y offset 5m`, []string{"x", "y"}},
		{`hyperstatic:recorded:rate5m{a="b"}`, []string{`hyperstatic:recorded:rate5m{a="b"}`}},
	} {
		got, err := selectors(c.expr)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("selectors(%s) = %q, want %q", c.expr, got, c.want)
		}
	}
	if _, err := selectors(`rat(x[5m])`); err == nil {
		t.Error("an unknown function must be an error: it could hide a selector")
	}
	if _, err := selectors(`sum(x{a="b"`); err == nil {
		t.Error("an unbalanced brace must be an error")
	}
}
