package definitions_test

import (
	"encoding/json"
	"fmt"

	"github.com/amqpsim/amqpsim/definitions"
	"github.com/amqpsim/amqpsim/protocol"
)

// A file as RabbitMQ writes it reads into a File, whose arguments convert
// to the field table a queue.declare would carry.
func ExampleParse() {
	f, err := definitions.Parse([]byte(`{
		"users": [{"name": "app", "password_hash": "", "tags": "monitoring,policymaker"}],
		"queues": [{"name": "orders", "vhost": "/", "durable": true, "auto_delete": false,
		            "arguments": {"x-queue-type": "quorum", "x-delivery-limit": 5}}]
	}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(f.Users[0].Name, f.Users[0].Tags)
	args, err := protocol.TableFromJSON(f.Queues[0].Arguments)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s %T\n", f.Queues[0].Name, args["x-delivery-limit"])
	out, _ := json.Marshal(f.Users[0])
	fmt.Println(string(out))
	// Output:
	// app [monitoring policymaker]
	// orders int64
	// {"name":"app","password_hash":"","tags":["monitoring","policymaker"],"limits":null}
}
