package scenarios_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/amqpsim/amqpsim/scenarios"
)

// TestSVGLabelsFitAndBodiesRead: two consumers with long tags side by
// side, and JSON bodies. Each head's lines are cut to its box, the middle
// elided, so that neighbours do not overlap (the box's title has them
// whole), and a body reads {"id":1}, not "{\"id\":1}".
func TestSVGLabelsFitAndBodiesRead(t *testing.T) {
	src := `rabbitmq 4.3

conn invoice-svc
channel invoice-svc.invoice-svc-ch1
declare-queue invoice-svc-ch1 invoices
qos invoice-svc-ch1 2
consume invoice-svc-ch1 invoices tag=invoice-consumer-worker-1
consume invoice-svc-ch1 invoices tag=invoice-consumer-worker-2
publish invoice-svc-ch1 invoices "{\"id\":1}" "{\"id\":2}"
close invoice-svc
`
	s, err := scenarios.Parse("svg.txt", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	res, err := scenarios.Replay(s)
	if err != nil {
		t.Fatal(err)
	}
	svg := string(res.SVG())
	for _, want := range []string{
		">invoice-c…r-worker-1</text>", ">invoice-c…r-worker-2</text>",
		"<title>invoice-consumer-worker-1\ninvoice-svc-ch1\nprefetch 2</title>",
		">“{&#34;id&#34;:1}” #1</text>", ">“{&#34;id&#34;:2}” #2</text>",
		"publish invoice-svc-ch1 invoices “{&#34;id&#34;:1…</text>",
		">connection</text>", ">closed</text>", // how the consumers ended, on two lines
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("the diagram lacks %q:\n%s", want, svg)
		}
	}
	if strings.Contains(svg, `\&#34;`) {
		t.Errorf("a body shows its escapes:\n%s", svg)
	}
	// No text in a head is wider than its box: 20 characters of 12 px
	// bold, 22 of 11 px.
	head := regexp.MustCompile(`<text x='\d+' y='(\d+)' text-anchor='middle'[^>]*>([^<]*)</text>`)
	for _, m := range head.FindAllStringSubmatch(svg, -1) {
		if n := len([]rune(m[2])); n > 22 || n > 20 && !strings.Contains(m[0], "font-size='11'") {
			t.Errorf("head text %q is %d characters: wider than its box", m[2], n)
		}
	}
}
