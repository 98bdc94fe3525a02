package protocol

import "fmt"

// Method identifies an AMQP method by class and method id. The zero Method means
// "no method", as in errors RabbitMQ raises outside method handling.
type Method struct {
	Class, ID uint16
}

// AMQP 0-9-1 methods, by the names the specification gives them.
var (
	ConnectionStart    = Method{10, 10}
	ConnectionStartOk  = Method{10, 11}
	ConnectionSecure   = Method{10, 20}
	ConnectionSecureOk = Method{10, 21}
	ConnectionTune     = Method{10, 30}
	ConnectionTuneOk   = Method{10, 31}
	ConnectionOpen     = Method{10, 40}
	ConnectionOpenOk   = Method{10, 41}
	ConnectionClose    = Method{10, 50}
	ConnectionCloseOk  = Method{10, 51}
	ConnectionBlocked  = Method{10, 60}
	ConnectionUnblock  = Method{10, 61}

	ChannelOpen    = Method{20, 10}
	ChannelOpenOk  = Method{20, 11}
	ChannelFlow    = Method{20, 20}
	ChannelFlowOk  = Method{20, 21}
	ChannelClose   = Method{20, 40}
	ChannelCloseOk = Method{20, 41}

	ExchangeDeclare   = Method{40, 10}
	ExchangeDeclareOk = Method{40, 11}
	ExchangeDelete    = Method{40, 20}
	ExchangeDeleteOk  = Method{40, 21}
	ExchangeBind      = Method{40, 30}
	ExchangeBindOk    = Method{40, 31}
	ExchangeUnbind    = Method{40, 40}
	ExchangeUnbindOk  = Method{40, 51}

	QueueDeclare   = Method{50, 10}
	QueueDeclareOk = Method{50, 11}
	QueueBind      = Method{50, 20}
	QueueBindOk    = Method{50, 21}
	QueuePurge     = Method{50, 30}
	QueuePurgeOk   = Method{50, 31}
	QueueDelete    = Method{50, 40}
	QueueDeleteOk  = Method{50, 41}
	QueueUnbind    = Method{50, 50}
	QueueUnbindOk  = Method{50, 51}

	BasicQos          = Method{60, 10}
	BasicQosOk        = Method{60, 11}
	BasicConsume      = Method{60, 20}
	BasicConsumeOk    = Method{60, 21}
	BasicCancel       = Method{60, 30}
	BasicCancelOk     = Method{60, 31}
	BasicPublish      = Method{60, 40}
	BasicReturn       = Method{60, 50}
	BasicDeliver      = Method{60, 60}
	BasicGet          = Method{60, 70}
	BasicGetOk        = Method{60, 71}
	BasicGetEmpty     = Method{60, 72}
	BasicAck          = Method{60, 80}
	BasicReject       = Method{60, 90}
	BasicRecoverAsync = Method{60, 100}
	BasicRecover      = Method{60, 110}
	BasicRecoverOk    = Method{60, 111}
	BasicNack         = Method{60, 120}

	ConfirmSelect   = Method{85, 10}
	ConfirmSelectOk = Method{85, 11}

	TxSelect     = Method{90, 10}
	TxSelectOk   = Method{90, 11}
	TxCommit     = Method{90, 20}
	TxCommitOk   = Method{90, 21}
	TxRollback   = Method{90, 30}
	TxRollbackOk = Method{90, 31}
)

var methodNames = map[Method]string{
	ConnectionStart: "connection.start", ConnectionStartOk: "connection.start-ok",
	ConnectionSecure: "connection.secure", ConnectionSecureOk: "connection.secure-ok",
	ConnectionTune: "connection.tune", ConnectionTuneOk: "connection.tune-ok",
	ConnectionOpen: "connection.open", ConnectionOpenOk: "connection.open-ok",
	ConnectionClose: "connection.close", ConnectionCloseOk: "connection.close-ok",
	ConnectionBlocked: "connection.blocked", ConnectionUnblock: "connection.unblocked",
	ChannelOpen: "channel.open", ChannelOpenOk: "channel.open-ok",
	ChannelFlow: "channel.flow", ChannelFlowOk: "channel.flow-ok",
	ChannelClose: "channel.close", ChannelCloseOk: "channel.close-ok",
	ExchangeDeclare: "exchange.declare", ExchangeDeclareOk: "exchange.declare-ok",
	ExchangeDelete: "exchange.delete", ExchangeDeleteOk: "exchange.delete-ok",
	ExchangeBind: "exchange.bind", ExchangeBindOk: "exchange.bind-ok",
	ExchangeUnbind: "exchange.unbind", ExchangeUnbindOk: "exchange.unbind-ok",
	QueueDeclare: "queue.declare", QueueDeclareOk: "queue.declare-ok",
	QueueBind: "queue.bind", QueueBindOk: "queue.bind-ok",
	QueuePurge: "queue.purge", QueuePurgeOk: "queue.purge-ok",
	QueueDelete: "queue.delete", QueueDeleteOk: "queue.delete-ok",
	QueueUnbind: "queue.unbind", QueueUnbindOk: "queue.unbind-ok",
	BasicQos: "basic.qos", BasicQosOk: "basic.qos-ok",
	BasicConsume: "basic.consume", BasicConsumeOk: "basic.consume-ok",
	BasicCancel: "basic.cancel", BasicCancelOk: "basic.cancel-ok",
	BasicPublish: "basic.publish", BasicReturn: "basic.return", BasicDeliver: "basic.deliver",
	BasicGet: "basic.get", BasicGetOk: "basic.get-ok", BasicGetEmpty: "basic.get-empty",
	BasicAck: "basic.ack", BasicReject: "basic.reject",
	BasicRecoverAsync: "basic.recover-async", BasicRecover: "basic.recover", BasicRecoverOk: "basic.recover-ok",
	BasicNack:     "basic.nack",
	ConfirmSelect: "confirm.select", ConfirmSelectOk: "confirm.select-ok",
	TxSelect: "tx.select", TxSelectOk: "tx.select-ok", TxCommit: "tx.commit", TxCommitOk: "tx.commit-ok",
	TxRollback: "tx.rollback", TxRollbackOk: "tx.rollback-ok",
}

// String returns the method's name, such as "basic.ack", or "class.method"
// numbers for a method the specification does not define.
func (m Method) String() string {
	if m == (Method{}) {
		return "none"
	}
	if n, ok := methodNames[m]; ok {
		return n
	}
	return fmt.Sprintf("%d.%d", m.Class, m.ID)
}
