module github.com/amqpsim/amqpsim

go 1.25

require (
	github.com/google/go-cmp v0.7.0
	github.com/rabbitmq/amqp091-go v1.16.0
	pgregory.net/rapid v1.3.0
)
