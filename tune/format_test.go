package tune

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

func exampleResult(t *testing.T) *Result {
	t.Helper()
	return sweep(t, Config{Consumers: 2, Handler: Constant(time.Millisecond), RTT: time.Millisecond, Size: 1024, Backlog: 2000, Prefetch: []int{1, 10, 100, 0}})
}

func TestCSV(t *testing.T) {
	res := exampleResult(t)
	var b bytes.Buffer
	if err := res.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+len(res.Points) {
		t.Fatalf("%d rows, want a header and %d", len(rows), len(res.Points))
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for _, name := range []string{"prefetch", "throughput_per_s", "latency_p99_ms", "held_bytes_peak", "share_max", "blast_max", "recommended"} {
		if _, ok := col[name]; !ok {
			t.Errorf("no column %q in %v", name, rows[0])
		}
	}
	for i, row := range rows[1:] {
		p := res.Points[i]
		if got, _ := strconv.Atoi(row[col["prefetch"]]); got != p.Prefetch {
			t.Errorf("row %d: prefetch %s, want %d", i, row[col["prefetch"]], p.Prefetch)
		}
		if got, _ := strconv.ParseFloat(row[col["throughput_per_s"]], 64); !near(got, p.Throughput, 1e-6) {
			t.Errorf("row %d: throughput %s, want %g", i, row[col["throughput_per_s"]], p.Throughput)
		}
		if want := strconv.FormatBool(i == res.Knee); row[col["recommended"]] != want {
			t.Errorf("row %d: recommended %s, want %s", i, row[col["recommended"]], want)
		}
	}
}

func TestJSON(t *testing.T) {
	res := exampleResult(t)
	var b bytes.Buffer
	if err := res.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Config      string  `json:"config"`
		Recommended int     `json:"recommended_prefetch"`
		Best        int     `json:"best_prefetch"`
		Points      []Point `json:"points"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Recommended != res.Recommended().Prefetch || doc.Best != res.Points[res.Best].Prefetch || len(doc.Points) != len(res.Points) {
		t.Errorf("decoded %+v", doc)
	}
	for i, p := range doc.Points {
		if p.Throughput != res.Points[i].Throughput || p.LatencyP99 != res.Points[i].LatencyP99 || len(p.Shares) != 2 {
			t.Errorf("point %d: decoded %+v, want %+v", i, p, res.Points[i])
		}
	}
	if !strings.Contains(doc.Config, "2 consumers") {
		t.Errorf("config %q", doc.Config)
	}
}

func TestTable(t *testing.T) {
	var b bytes.Buffer
	if err := exampleResult(t).WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"prefetch", "msg/s", "unlimited", "←", "recommended: prefetch 10,"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
