package amqptest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/amqptest"
)

// A test closes a client's connection through the management API, as
// operators (and amqp091-go's own recovery tests) do on RabbitMQ: find it
// by the client's connection_name, then DELETE it by its RabbitMQ name.
func ExampleServer_ManagementURL() {
	srv, err := amqptest.Start()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName("billing")
	conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial, Properties: props})
	if err != nil {
		panic(err)
	}
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))

	api := srv.ManagementURL()
	call := func(method, path string) *http.Response {
		req, _ := http.NewRequest(method, api+path, nil)
		req.SetBasicAuth("guest", "guest")
		req.Header.Set("X-Reason", "maintenance")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		return resp
	}
	resp := call("GET", "/api/connections")
	var list []struct {
		Name             string `json:"name"`
		ClientProperties struct {
			ConnectionName string `json:"connection_name"`
		} `json:"client_properties"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		panic(err)
	}
	resp.Body.Close()
	for _, c := range list {
		if c.ClientProperties.ConnectionName == "billing" {
			resp := call("DELETE", "/api/connections/"+url.PathEscape(c.Name))
			resp.Body.Close()
			fmt.Println(resp.Status)
		}
	}
	e, ok := within(closed)
	if !ok {
		fmt.Println("timed out waiting for the connection's close")
		return
	}
	fmt.Println(e.Code, e.Reason)
	// Output:
	// 204 No Content
	// 320 CONNECTION_FORCED - maintenance
}
