package consumer

// ClearSuspension clears a group's suspension without bringing its
// consumers back, a state the broker passes through between the limiter's
// release and the queue's resume.
func ClearSuspension[T any](g *Group[T]) { g.suspended = false }
