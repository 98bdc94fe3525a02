package sim_test

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/amqpsim/amqpsim/definitions"
	"github.com/amqpsim/amqpsim/sim"
)

// A user who may configure and read only the queues named orders*, and
// write to any exchange: every method checks the permission RabbitMQ
// checks, with its text.
func ExampleBroker_SetPermissions() {
	b := sim.New(sim.Config{})
	b.AddUser(sim.User{Name: "orders-svc", Password: "s3cret", Tags: []string{sim.TagManagement}})
	b.SetPermissions("/", "orders-svc", sim.Permissions{Configure: "^orders", Write: ".*", Read: "^orders"})

	c, err := b.Dial(sim.ConnectOptions{User: "orders-svc", Password: "s3cret"})
	if err != nil {
		panic(err)
	}
	ch, _ := c.Channel()
	_, err = ch.QueueDeclare("orders", sim.QueueOptions{})
	fmt.Println(err)
	_, err = ch.QueueDeclare("billing", sim.QueueOptions{})
	fmt.Println(err.(*sim.Error).Text)

	_, err = b.Dial(sim.ConnectOptions{User: "orders-svc", Password: "wrong"})
	fmt.Println(err)
	// Output:
	// <nil>
	// ACCESS_REFUSED - configure access to queue 'billing' in vhost '/' refused for user 'orders-svc'
	// sim: login refused: user 'orders-svc' - invalid credentials
}

// Definitions go in and out in RabbitMQ's JSON format: a file exported
// from RabbitMQ (rabbitmqctl export_definitions) configures the broker,
// and the broker's own export is a file RabbitMQ imports.
func ExampleBroker_ExportDefinitions() {
	data, err := os.ReadFile("testdata/definitions-3.10.8.json")
	if err != nil {
		panic(err)
	}
	defs, err := definitions.Parse(data)
	if err != nil {
		panic(err)
	}
	b, err := sim.Open(sim.Config{Definitions: defs})
	if err != nil {
		panic(err)
	}
	out := b.ExportDefinitions()
	for _, q := range out.Queues {
		fmt.Println(q.Vhost, q.Name, q.Type)
	}
	users, _ := json.Marshal(out.Users[0])
	fmt.Println(string(users))
	// Output:
	// app-vhost app.dead classic
	// app-vhost app.orders quorum
	// app-vhost app.transient classic
	// app-vhost app.ttl.retry classic
	// {"name":"app","password_hash":"MS2PH4+Saxtg/zRjIVZiDVvRWiLQVKSh6hWo9xqip0X6rudX","hashing_algorithm":"rabbit_password_hashing_sha256","tags":["monitoring","policymaker"],"limits":{}}
}

// An operator policy caps what users set: the smaller of its value, the
// policy's and the queue's own argument applies.
func ExampleBroker_SetOperatorPolicy() {
	b := sim.New(sim.Config{})
	ch, _ := b.Connect("app").Channel()
	ch.QueueDeclare("jobs", sim.QueueOptions{Args: sim.Table{"x-max-length": 5}})
	b.SetOperatorPolicy("/", sim.Policy{Name: "cap", Pattern: ".*", ApplyTo: "queues", Definition: sim.Table{"max-length": 2}})
	for _, body := range []string{"j1", "j2", "j3"} {
		ch.Publish("", "jobs", sim.PublishOptions{}, sim.Message{Body: []byte(body)})
	}
	s, _ := b.QueueStats("/", "jobs")
	fmt.Println("ready", s.Ready)
	// Output:
	// ready 2
}
