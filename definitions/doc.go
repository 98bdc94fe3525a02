// Package definitions is RabbitMQ's definitions file: the JSON that
// rabbitmqctl export_definitions writes, GET /api/definitions returns and
// load_definitions reads at boot (users, vhosts, permissions, topic
// permissions, parameters, global parameters, policies, queues, exchanges,
// bindings). Its types encode that format key for key, so a file exported
// from RabbitMQ 3.10 unmarshals into a File and a File marshals back to
// one RabbitMQ imports.
//
// It holds the format alone: what each entry means to a broker, and
// whether it fits the broker it goes into, is package sim's
// (sim.Broker.ImportDefinitions, ExportDefinitions, sim.Config.Definitions).
//
// # Usage
//
//	defs, err := definitions.Parse(data) // integers stay exact
//	b, err := sim.Open(sim.Config{Definitions: defs})
//	out, err := json.Marshal(b.ExportDefinitions())
//
// # Values
//
// Arguments and policy definitions are JSON objects. protocol.TableFromJSON converts
// one to an AMQP field table as RabbitMQ's import does (integers are
// longs, other numbers doubles), and Parameter.OperatorPolicy reads an
// operator policy, which a file carries among its parameters, in either of
// the two forms RabbitMQ writes it.
package definitions
