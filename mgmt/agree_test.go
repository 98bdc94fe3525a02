package mgmt_test

import (
	"os"
	"strings"
	"testing"
)

// TestAgreesWithRabbitMQ runs every scenario against the handler and
// compares each answer with RabbitMQ 3.10.8's recording (or, with
// -record, records them; see record_test.go).
func TestAgreesWithRabbitMQ(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			if *record {
				httpURL, amqpURL := os.Getenv("MGMT_URL"), os.Getenv("AMQP_URL")
				if httpURL == "" || amqpURL == "" {
					t.Skip("-record needs MGMT_URL (http://127.0.0.1:15672) and AMQP_URL")
				}
				tg := &target{t: t, httpURL: strings.TrimSuffix(httpURL, "/"), amqpURL: amqpURL, real: true}
				defer tg.close()
				sc.run(tg)
				for i := range tg.got {
					tg.got[i].Response.Body = ours(tg.got[i].Response.Body, tg.ports())
				}
				if err := writeRecording(sc.name, tg.got); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := readRecording(sc.name)
			if err != nil {
				t.Fatal(err)
			}
			tg := newSimTarget(t)
			defer tg.close()
			sc.run(tg)
			compareRecording(t, want, tg.got, tg.ports())
		})
	}
}
