// Package mgmt serves RabbitMQ's management HTTP API (the
// rabbitmq_management plugin, port 15672) for a simulated broker: the
// parts that tools and test suites use, in RabbitMQ 3.10.8's JSON shapes,
// status codes and error bodies, recorded from the real broker
// (testdata/rabbitmq).
//
// # Usage
//
//	b := sim.New(sim.Config{})
//	http.ListenAndServe("127.0.0.1:15672", mgmt.NewHandler(b))
//
// amqptest.Server serves it beside the AMQP listener (ManagementURL), and
// so does `amqpsim serve --http ADDR`.
//
// # Resources
//
//   - /api/overview, /api/whoami, /api/vhosts[/V], /api/users[/U[/permissions]],
//     /api/permissions[/V/U]
//   - /api/exchanges[/V[/X]] (GET, PUT, DELETE), /api/bindings[/V]
//   - /api/queues[/V[/Q]] (GET, PUT to declare, DELETE), /api/queues/V/Q/contents
//     (DELETE purges), /api/queues/V/Q/get (POST), /api/queues/V/Q/bindings
//   - /api/connections[/NAME[/channels]] (DELETE closes with 320 CONNECTION_FORCED
//     and the X-Reason header's text), /api/channels, /api/consumers[/V]
//   - /api/policies[/V[/P]] (GET, PUT, DELETE), /api/definitions[/V] (GET, POST)
//   - /api/aliveness-test/V, /api/health/checks/alarms, /api/nodes (the
//     cluster's nodes, running or not, for monitoring users)
//   - /api/sim/: the simulator's controls (now, advance, restart,
//     close-connections, close-at-delivery, alarm, nack-publishes, and
//     for a cluster stop-node, kill-node, start-node, pause-node,
//     resume-node, partition, heal), for
//     administrators; GET /api/sim lists them with their parameters. They
//     act when the request arrives, not in order with AMQP frames still
//     in flight: a publish a client wrote just before /api/sim/advance
//     may be applied after it, unless the client waited for a reply
//     (a confirm, any synchronous method) first
//
// Vhost names are path segments, so "/" is written %2F. A connection is
// named as RabbitMQ names it, "PEER -> SOCK" ("127.0.0.1:54321 ->
// 127.0.0.1:5672"), and its client_properties carry the client's
// connection_name.
//
// # Authentication
//
// Every request needs HTTP basic credentials of a broker user
// (sim.Broker's users) with a management tag: management, policymaker,
// monitoring or administrator. As in RabbitMQ, what is in a vhost
// (queues, exchanges, bindings, policies) needs permissions in it or the
// administrator tag; a user sees its own connections, channels and
// consumers; monitoring users also see every vhost exist and everyone's
// connections, channels and consumers, without access to the vhosts;
// policymakers may set policies in their vhosts; closing another user's
// connection, users, permissions, definitions and the simulator's
// controls need administrator. Declaring, deleting, purging and getting go through a
// direct connection of the user, so the broker's permission checks apply.
// RabbitMQ 3.10.8 answers a missing tag or permission with 401
// not_authorised, not 403, and so does the handler.
//
// # Limits
//
// As RabbitMQ's listener (cowboy's and ranch's defaults): NewServer gives
// a request 5 s for its headers and keeps an idle connection 60 s; each
// read of a body may wait 60 s, each response 30 s. A body larger than the
// simulated release reads (sim.Profile.HTTPMaxBody: 8,000,000 bytes for
// 3.x, 20,000,000 from 4.0) is refused with RabbitMQ's answer, before it
// is read when Content-Length announces it. A request refused before its
// body is needed (credentials, vhost access) is answered at once and its
// connection closed, without waiting for the body.
//
// # Statistics
//
// Unlike RabbitMQ, whose statistics lag by up to five seconds, the
// counts are always current. Statistics amqpsim does not keep (message
// rates, memory, reductions, socket byte counters) are present with zero
// values.
package mgmt
