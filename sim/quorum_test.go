package sim_test

import (
	"github.com/amqpsim/amqpsim/sim"
)

var quorumQueue = sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-type": "quorum"}}
