// Package sim is a simulated RabbitMQ broker for tests: the whole broker in
// memory, driven by plain method calls, with a virtual clock and no
// goroutines.
//
// # Usage
//
// A test makes a broker, connects, and calls AMQP methods on channels. Each
// method returns what RabbitMQ replies, or the *Error RabbitMQ closes the
// channel or connection with:
//
//	b := sim.New(sim.Config{})
//	ch, _ := b.Connect("app").Channel()
//	ch.QueueDeclare("orders", sim.QueueOptions{})
//	ch.Qos(2, 0, false)
//	c, _ := ch.Consume("orders", sim.ConsumeOptions{})
//	b.Publish("/", "", "orders", sim.Message{Body: []byte("m1")})
//	d, _ := c.Next() // what the broker pushed, in order
//	ch.Ack(d.DeliveryTag, false)
//
// Deliveries are pushed synchronously: by the time Publish returns, the
// message sits in a consumer's inbox (Consumer.Next) or in the queue. A
// connection made with ConnectOptions.Sink gets every push through that
// function instead; the wire server uses it.
//
// # Fidelity
//
// The behaviour follows RabbitMQ 3.10's classic queues, read from the
// broker's source and checked against a running broker: see the package docs
// of consumer, queue and channel for the rules each models. Unlike RabbitMQ,
// amqpsim refuses what it does not model (quorum queues, streams) with 540
// NOT_IMPLEMENTED instead of pretending, and never coalesces publisher
// confirms into multiple acks.
//
// # Time
//
// The broker has one clock, virtual, starting at Config.Start (Epoch by
// default). It moves only by Advance, which fires due timers in (due time,
// creation) order, each at its own time: consumer-timeout ticks, message
// TTLs at the queue heads, and queue expiry (x-expires).
//
// # Determinism
//
// One lock serialises every call; below it the broker is single-threaded.
// Generated names and the few choices RabbitMQ makes at random come from one
// generator seeded by Config.Seed. The same calls with the same seed give the
// same Trace.
package sim
