package mgmt_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/amqpsim/amqpsim/mgmt"
	"github.com/amqpsim/amqpsim/sim"
)

// The handler serves RabbitMQ's management API for a broker; here it is
// called in process, as a test of code that talks to port 15672 would
// through an httptest.Server.
func ExampleNewHandler() {
	b := sim.New(sim.Config{})
	h := mgmt.NewHandler(b)
	do := func(method, path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.SetBasicAuth("guest", "guest")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	fmt.Println(do("PUT", "/api/queues/%2F/orders", `{"durable":true,"arguments":{"x-max-length":2}}`).Code)
	for _, body := range []string{"a", "b", "c"} {
		_ = b.Publish("/", "", "orders", sim.Message{Body: []byte(body)})
	}
	var q struct {
		Messages  int            `json:"messages"`
		Arguments map[string]any `json:"arguments"`
	}
	_ = json.Unmarshal(do("GET", "/api/queues/%2F/orders", "").Body.Bytes(), &q)
	fmt.Println(q.Messages, q.Arguments)
	fmt.Println(do("GET", "/api/queues/%2F/nosuch", "").Body)
	// Output:
	// 201
	// 2 map[x-max-length:2]
	// {"error":"Object Not Found","reason":"Not Found"}
}
