// Package protocol holds the AMQP 0-9-1 vocabulary shared by every layer of
// amqpsim: reply codes, class and method ids, the protocol error type with
// RabbitMQ's reply texts, field tables with their type tags, and the basic
// content properties.
//
// It imports nothing from the rest of the module, so the broker core, the wire
// codec and user code can all speak it.
package protocol
