// promql_names: the metric selectors of PromQL expressions, as Prometheus'
// own parser (github.com/prometheus/prometheus/promql/parser) reads them.
//
// Reads one expression a line on stdin; writes one JSON object a line:
// {"expr": ..., "selectors": [{"metric": NAME, "matchers": [{"label",
// "type", "value"}...]}...]} or {"expr": ..., "error": ...}.  A selector
// without an exact metric name ({__name__=~"..."}) has "metric": "".
// t/650_monitoring_exporter.pl checks the dashboard's expressions with it.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

type matcher struct {
	Label string `json:"label"`
	Type  string `json:"type"`
	Value string `json:"value"`
}

type selector struct {
	Metric   string    `json:"metric"`
	Matchers []matcher `json:"matchers"`
}

type result struct {
	Expr      string     `json:"expr"`
	Error     string     `json:"error,omitempty"`
	Selectors []selector `json:"selectors"`
}

func main() {
	p := parser.NewParser(parser.Options{})
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		res := result{Expr: in.Text(), Selectors: []selector{}}
		expr, err := p.ParseExpr(in.Text())
		if err != nil {
			res.Error = err.Error()
		} else {
			parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
				vs, ok := node.(*parser.VectorSelector)
				if !ok {
					return nil
				}
				s := selector{Matchers: []matcher{}}
				for _, m := range vs.LabelMatchers {
					if m.Name == labels.MetricName {
						if m.Type == labels.MatchEqual {
							s.Metric = m.Value
						}
						continue
					}
					s.Matchers = append(s.Matchers, matcher{m.Name, m.Type.String(), m.Value})
				}
				res.Selectors = append(res.Selectors, s)
				return nil
			})
		}
		if err := out.Encode(res); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
